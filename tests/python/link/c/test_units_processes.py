"""Compile units with real processes and signals: Ctrl-C while units
compile in parallel raises KeyboardInterrupt within a second (measured as in
test_cmodule_interrupts.py), stops every compiler and publishes no module, and the
machine-wide limit on compilers (compile__jobs) holds across processes that
share a cache."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from support.helpers import run_graph

from opweave import _core

from .test_cmodule_interrupts import (
    SlowCompiler,
    interrupt,
    locks_are_free,
    no_module_published,
    signal,
    start,
)

pytestmark = pytest.mark.slow

UNITS = ("cmodule__unit_threshold=8", "cmodule__precompiled_header=false")


def test_ctrl_c_while_units_compile_in_parallel(isolated_cache: Path, tmp_path: Path) -> None:
    slow = SlowCompiler(tmp_path)
    worker = start(isolated_cache, slow.path, *UNITS, "compile__jobs=2", graph="units:30")
    try:
        slow.wait_until_running(2)  # two compilers at once: units in parallel
        interrupt(worker)
        slow.wait_until_gone(timeout=2)
    finally:
        for pid in slow.running():
            os.kill(pid, signal.SIGKILL)
    assert locks_are_free(isolated_cache)
    assert no_module_published(isolated_cache)


def _is_body(entry: _core.Entry) -> bool:
    """Whether a unit entry is a module's body (AssembledModule.body)."""
    return b"the body of a graph module" in (entry.dir / "unit.cpp").read_bytes()[:200]


def test_compile_jobs_limits_compilers_across_processes(
    isolated_cache: Path, tmp_path: Path
) -> None:
    slow = SlowCompiler(tmp_path, seconds=1)
    flags = (*UNITS, "compile__jobs=1")
    workers = [
        start(isolated_cache, slow.path, *flags, graph=graph) for graph in ("units:24", "units:25")
    ]
    most = 0
    while any(w.poll() is None for w in workers):
        most = max(most, len(slow.running()))
        time.sleep(0.05)
    for worker in workers:
        _, err = worker.communicate()
        assert worker.returncode == 0, err
    assert most == 1
    entries = _core.ModuleCache(str(isolated_cache)).list()
    assert sum(e.kind == "module" for e in entries) == 2
    # The graphs share their first nodes, so their first units: one entry
    # each, compiled by one process while the other waited for its lock.
    # (Each graph's body is a unit entry of its own: not shared.)
    units = [e for e in entries if e.kind == "unit" and not _is_body(e)]
    assert 2 <= len(units) < 2 * 2
    # Both graphs give the right results from the cache.
    for graph in ("units:24", "units:25"):
        settings = ",".join([f"cxx={slow.path}", *flags])
        report = run_graph(isolated_cache, graph, env={"OPWEAVE_FLAGS": settings})
        assert report["right"] and report["outcomes"] == ["hit"]


def test_a_module_linked_from_units_is_the_same_file_in_every_cache_root(
    tmp_path: Path,
) -> None:
    # The link runs in the staging directory with relative names: the
    # linker writes the output's name into the library (.gnu.version_d),
    # which named the staging directory when it was given as a path.
    libraries = []
    for name in ("a", "b"):
        # Enough codes for two units: units are cut by weight, and a graph
        # that makes a single unit is compiled whole.
        report = run_graph(
            tmp_path / name, "units:30", env={"OPWEAVE_FLAGS": "cmodule__unit_threshold=2"}
        )
        messages = [log["message"] for log in report["logs"]]
        assert report["right"] and any(re.search(r"from [2-9] units", m) for m in messages), report
        [library] = (tmp_path / name).glob("v*/entries/*/*/module-*.so")
        assert str(tmp_path).encode() not in library.read_bytes()
        libraries.append(library)
    assert libraries[0].name == libraries[1].name  # named after the content

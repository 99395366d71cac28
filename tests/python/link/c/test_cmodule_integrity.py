"""Integrity before load, through ``opweave.function`` in fresh processes: a
damaged entry is quarantined and rebuilt (with a WARNING naming it), never
loaded, never raised; the function still runs in C and gives the right
result. A truncated library that reached dlopen() would kill the process
with SIGBUS."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.helpers import run_graph

from opweave import _core


def entry_of(cache: Path, kind: str = "module") -> Path:
    """The only entry of `kind` in the cache."""
    [entry] = [Path(e.dir) for e in _core.ModuleCache(str(cache)).list() if e.kind == kind]
    return entry


def library_of(entry: Path) -> Path:
    [library] = entry.glob("module-*.so")
    return library


def truncate_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def zero(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


def garbage(path: Path) -> None:
    path.write_bytes(b"\x7fELF" + os.urandom(path.stat().st_size - 4))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "library truncated": lambda entry: truncate_half(library_of(entry)),
    "library zeroed": lambda entry: zero(library_of(entry)),
    "library garbage": lambda entry: garbage(library_of(entry)),
    "library deleted": lambda entry: library_of(entry).unlink(),
    "source deleted": lambda entry: (entry / "module.cpp").unlink(),
    "metadata garbled": lambda entry: (entry / "meta.json").write_text('{"format": 2, "ke'),
    "metadata missing": lambda entry: (entry / "meta.json").unlink(),
    "metadata of another version": lambda entry: (entry / "meta.json").write_text(
        (entry / "meta.json").read_text().replace('"format": 2', '"format": 1')
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_entry_is_quarantined_rebuilt_and_logged(
    isolated_cache: Path, damage: str
) -> None:
    assert run_graph(isolated_cache, "vtv:1")["outcomes"] == ["built"]
    entry = entry_of(isolated_cache)
    DAMAGE[damage](entry)

    report = run_graph(isolated_cache, "vtv:1")
    assert report["right"] and report["outcomes"] == ["built"]
    warnings = [r["message"] for r in report["logs"] if r["level"] == "WARNING"]
    assert len(warnings) == 1, report["logs"]
    assert str(entry) in warnings[0] and "quarantine" in warnings[0]
    assert [p.name.split(".")[0] for p in (isolated_cache / "v2" / "quarantine").iterdir()] == [
        entry.name
    ]
    again = run_graph(isolated_cache, "vtv:1")
    assert again["outcomes"] == ["hit"] and again["logs"] == []
    assert _core.ModuleCache(str(isolated_cache)).verify().problems == []


def test_an_entry_copied_under_another_key_is_refused(isolated_cache: Path) -> None:
    run_graph(isolated_cache, "vtv:1")
    run_graph(isolated_cache, "vtv:2")
    cache = _core.ModuleCache(str(isolated_cache))
    one, two = (Path(e.dir) for e in cache.list() if e.kind == "module")
    shutil.rmtree(two)
    shutil.copytree(one, two)  # whole and valid, but another key's module
    for graph in ("vtv:1", "vtv:2"):
        report = run_graph(isolated_cache, graph)
        assert report["right"], (graph, report)
    assert cache.verify().problems == []


def test_a_damaged_prelude_is_quarantined_and_rebuilt(isolated_cache: Path) -> None:
    run_graph(isolated_cache, "vtv:1")
    run_graph(isolated_cache, "vtv:3")  # and the prelude two modules wanted
    prelude = entry_of(isolated_cache, "prelude")
    truncate_half(prelude / "opweave_prelude.h.gch.zst")
    report = run_graph(isolated_cache, "vtv:2")  # a compile that would use it
    assert report["right"] and report["outcomes"] == ["built"]
    assert any(str(prelude) in r["message"] for r in report["logs"] if r["level"] == "WARNING")
    assert (prelude / "opweave_prelude.h.gch.zst").stat().st_size > 1_000_000  # rebuilt
    assert _core.ModuleCache(str(isolated_cache)).verify().problems == []


def test_published_files_are_never_rewritten(isolated_cache: Path) -> None:
    run_graph(isolated_cache, "vtv:1")
    entry = entry_of(isolated_cache)
    old = time.time() - 7200
    os.utime(entry, (old, old))  # last used two hours ago: the next hit refreshes it
    before = {path.name: path.stat() for path in entry.iterdir()}
    assert run_graph(isolated_cache, "vtv:1")["outcomes"] == ["hit"]
    after = {path.name: path.stat() for path in entry.iterdir()}
    assert sorted(after) == sorted(before)
    for name, stat in before.items():
        assert (after[name].st_ino, after[name].st_mtime_ns, after[name].st_size) == (
            stat.st_ino,
            stat.st_mtime_ns,
            stat.st_size,
        ), name
    assert time.time() - entry.stat().st_mtime < 60  # the last-use time lives in the directory


_KEEP_CALLING = """
import sys, numpy as np, opweave
from opweave.examples.vector_times_vector import VectorTimesVector
opweave.config.compiledir = sys.argv[1]
x, y = opweave.tensor.dvector("x"), opweave.tensor.dvector("y")
f = opweave.function([x, y], VectorTimesVector()(x, y))
print("loaded", flush=True)
sys.stdin.readline()
for _ in range(1000):
    assert f(np.ones(3), np.full(3, 2.0)).tolist() == [2.0, 2.0, 2.0]
print("still working", flush=True)
"""


@pytest.mark.slow
def test_a_process_that_loaded_a_module_survives_its_quarantine(isolated_cache: Path) -> None:
    run_graph(isolated_cache, "vtv:1")
    holder = subprocess.Popen(
        [sys.executable, "-c", _KEEP_CALLING, str(isolated_cache)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "loaded"
        entry = entry_of(isolated_cache)
        (entry / "meta.json").write_text("{}")  # damage that makes the next user quarantine it
        report = run_graph(isolated_cache, "vtv:1")
        assert report["outcomes"] == ["built"] and report["right"]
        assert not (entry / "meta.json").read_text() == "{}"
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "still working"
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGKILL)
            holder.wait()


_UNDER_A_COMMA_LOCALE = """
import json, locale, sys
locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
assert locale.localeconv()["decimal_point"] == ","
import numpy as np, opweave
from opweave.examples.vector_times_vector import VectorTimesVector
opweave.config.compiledir = sys.argv[1]
x, y = opweave.tensor.dvector("x"), opweave.tensor.dvector("y")
f = opweave.function([x, y], VectorTimesVector()(x, y))
print(json.dumps({"outcome": f.cache_outcome}))
"""


def test_metadata_reads_back_under_a_comma_decimal_locale(tmp_path: Path) -> None:
    """Numbers in meta.json and stats.json do not follow LC_NUMERIC: a
    process in a German locale writes "0.25", and reads it back."""
    locales = tmp_path / "locales"
    locales.mkdir()
    made = subprocess.run(
        ["localedef", "-i", "de_DE", "-f", "UTF-8", str(locales / "de_DE.UTF-8")],
        capture_output=True,
        text=True,
    )
    if made.returncode not in (0, 1) or not (locales / "de_DE.UTF-8").exists():
        pytest.skip(f"cannot make a de_DE locale here: {made.stderr.strip()}")
    env = dict(os.environ, LOCPATH=str(locales))
    env.pop("OPWEAVE_FLAGS", None)
    outcomes = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", _UNDER_A_COMMA_LOCALE, str(tmp_path / "cache")],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        outcomes.append(json.loads(done.stdout.strip().splitlines()[-1])["outcome"])
    assert outcomes == ["built", "hit"]
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    assert cache.verify().problems == []
    assert cache.stats().counters.hits == 2  # the graph record, then its module
    for meta in (tmp_path / "cache").glob("v2/entries/*/*/meta.json"):
        assert isinstance(json.loads(meta.read_text())["compile_seconds"], float)

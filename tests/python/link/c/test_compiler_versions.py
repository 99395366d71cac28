"""The compiler's ``--version`` output is kept between processes
(``compiler_version_records``, cpp/builder/compiler_versions.cpp): a fresh
process names an ELF compiler from the cache's record of it, named by the
compiler file's identity and times, and runs the compiler only when that
file changed. Real processes, a real copy of the g++ driver."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support.helpers import run_graph

from opweave import _core

pytestmark = pytest.mark.slow  # processes that compile


def test_a_fresh_process_names_the_compiler_from_its_record(tmp_path: Path) -> None:
    cxx = tmp_path / "bin" / "g++"
    cxx.parent.mkdir()
    shutil.copy2(Path(shutil.which("g++") or "g++").resolve(), cxx)
    # The copy finds cc1plus through GCC_EXEC_PREFIX, not next to itself.
    env = {"OPWEAVE_FLAGS": f"cxx={cxx}", "GCC_EXEC_PREFIX": "/usr/lib/gcc/"}
    cache = tmp_path / "cache"
    first = run_graph(cache, "vtv:2", env=env)
    assert first["right"] and first["outcomes"] == ["built"]
    [name] = _core.ModuleCache(str(cache)).record_names("compilers")
    assert b"g++" in (_core.ModuleCache(str(cache)).read_record("compilers", name) or b"")
    assert run_graph(cache, "vtv:2", env=env)["outcomes"] == ["hit"]
    # Another version in that record: a fresh process takes the compiler for
    # that one (it does not run it to ask), so its modules are other modules.
    _core.ModuleCache(str(cache)).write_record("compilers", name, b"g++ (planted) 99.0\n")
    planted = run_graph(cache, "vtv:2", env=env)
    assert planted["right"] and planted["outcomes"] == ["built"]
    # The compiler file modified (new times): asked again, its own version
    # names it, and the first module is found.
    os.utime(cxx, ns=(10**9, 10**9))
    again = run_graph(cache, "vtv:2", env=env)
    assert again["right"] and again["outcomes"] == ["hit"]
    assert len(_core.ModuleCache(str(cache)).record_names("compilers")) == 2

"""Preludes and processes: a short process leaves its prelude for the next,
a build killed with its process is swept, and the decompressed copy of a
prelude is shared by the cache's processes, never left in tmp/."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import pytest
from opweave.examples.double_ops import double, sub
from support.helpers import describe, run_command

from opweave import _core, config
from opweave.graph.fg import FunctionGraph
from opweave.link.c import cmodule
from opweave.link.c.basic import CLinker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not config.cxx or not _core.supports_prelude(cmodule.get_compiler()),
        reason="precompiled preludes need GCC",
    ),
]


def prelude_headers(cache_root: Path) -> list[Path]:
    return sorted(cache_root.glob("v2/entries/*/*/opweave_prelude.h"))


def compressed(header: Path) -> Path:
    """The precompiled header as the prelude's entry keeps it."""
    return header.with_name(header.name + ".gch.zst")


_EXIT_RIGHT_AFTER_COMPILE = """
import sys
import opweave
opweave.config.compiledir = sys.argv[1]
from opweave.examples.double_ops import add, double, mul
from opweave.graph.fg import FunctionGraph
from opweave.link.c.basic import CLinker
x, y = double("x"), double("y")
for op in (add, mul):  # the second module wants the prelude built
    compiled = CLinker().accept(FunctionGraph([x, y], [op(x, y)])).compile()
    assert compiled.outcome == "built", compiled.outcome
if sys.argv[2] == "kill":
    import os, time
    tmp = opweave._core.ModuleCache(sys.argv[1]).root / "v2" / "tmp"
    deadline = time.monotonic() + 60
    while not any(p.is_dir() for p in tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.005)
    os._exit(0)  # no atexit: the prelude's build dies with the process
"""


_USE_THE_PRELUDE = """
import os, sys
import opweave
opweave.config.compiledir = sys.argv[1]
from opweave.examples.double_ops import add, double, mul, sub
from opweave.graph.fg import FunctionGraph
from opweave.link.c import cmodule
from opweave.link.c.basic import CLinker
x, y = double("x"), double("y")
for op in (add, mul, sub):  # the second builds the prelude, the third uses it
    compiled = CLinker().accept(FunctionGraph([x, y], [op(x, y)])).compile()
    assert cmodule.wait_for_prelude_builds(timeout=120)
version = cmodule.get_module_cache().root / "v2"
assert len(list((version / "unpacked").iterdir())) == 1, list((version / "unpacked").iterdir())
if sys.argv[2] == "kill":
    os._exit(0)  # no atexit
"""


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_a_process_shares_the_decompressed_prelude_and_leaves_nothing_in_tmp(
    isolated_cache: Path, how: str
) -> None:
    """The decompressed prelude the process compiled with is shared in
    v2/unpacked/ (named after the entry, its frame and its own digest) for
    the next processes; nothing of it stays in tmp/ once the process is
    gone (at exit, or, if it was killed, at the next sweep). The entry
    keeps the prelude compressed."""
    result = run_command(
        [sys.executable, "-c", _USE_THE_PRELUDE, str(isolated_cache), how], timeout=300
    )
    assert result.returncode == 0, describe(result)
    [header] = prelude_headers(isolated_cache)
    assert not header.with_name(header.name + ".gch").exists()
    content = _core.zstd_decompress(compressed(header).read_bytes(), 1 << 30)
    assert content is not None and len(content) > 5 * compressed(header).stat().st_size
    [shared] = (isolated_cache / "v2" / "unpacked").iterdir()
    key, frame, digest, suffix = shared.name.split(".")
    assert (key, suffix) == (header.parent.name, "gch")
    assert frame == hashlib.sha256(compressed(header).read_bytes()).hexdigest()
    assert digest == hashlib.sha256(content).hexdigest()
    assert shared.read_bytes() == content
    tmp = isolated_cache / "v2" / "tmp"
    if how == "kill":
        _core.ModuleCache(str(isolated_cache)).sweep()
    assert list(tmp.iterdir()) == []


def test_the_next_process_compiles_with_the_shared_copy(isolated_cache: Path) -> None:
    """A fresh process's first compile with the prelude links the copy the
    builder shared (it decompresses and writes nothing) and keeps it, and
    leaves the copy as it was."""
    result = run_command(
        [sys.executable, "-c", _USE_THE_PRELUDE, str(isolated_cache), "exit"], timeout=300
    )
    assert result.returncode == 0, describe(result)
    [shared] = (isolated_cache / "v2" / "unpacked").iterdir()
    before = shared.stat()
    result = run_command([sys.executable, "-c", _ONE_MORE, str(isolated_cache)], timeout=300)
    assert result.returncode == 0, describe(result)
    assert "-include" in result.stdout
    after = shared.stat()
    assert (after.st_ino, after.st_ctime_ns, after.st_nlink) == (
        before.st_ino,
        before.st_ctime_ns,
        before.st_nlink,
    )
    assert list((isolated_cache / "v2" / "tmp").iterdir()) == []


_ONE_MORE = """
import sys
import opweave
opweave.config.compiledir = sys.argv[1]
import json, pathlib
from opweave.examples.double_ops import div, double
from opweave.graph.fg import FunctionGraph
from opweave.link.c.basic import CLinker
x, y = double("x"), double("y")
compiled = CLinker().accept(FunctionGraph([x, y], [div(x, y)])).compile()
assert compiled.outcome == "built", compiled.outcome
print(json.loads((pathlib.Path(compiled.library).parent / "meta.json").read_text())["command"])
"""


def test_a_short_process_leaves_the_prelude_for_the_next(isolated_cache: Path) -> None:
    result = run_command(
        [sys.executable, "-c", _EXIT_RIGHT_AFTER_COMPILE, str(isolated_cache), "exit"],
        timeout=120,
    )
    assert result.returncode == 0, describe(result)
    headers = prelude_headers(isolated_cache)
    assert [header.read_text() for header in headers] == [
        f"{cmodule.PYTHON_PRELUDE}#include <new>\n"
    ]
    assert list((isolated_cache / "v2" / "tmp").iterdir()) == []


def test_a_build_killed_with_its_process_is_swept(isolated_cache: Path) -> None:
    result = run_command(
        [sys.executable, "-c", _EXIT_RIGHT_AFTER_COMPILE, str(isolated_cache), "kill"],
        timeout=120,
    )
    assert result.returncode == 0, describe(result)
    tmp = isolated_cache / "v2" / "tmp"
    assert any(path.is_dir() for path in tmp.iterdir())
    assert prelude_headers(isolated_cache) == []

    # The compiler died with its process (its guard saw the lifeline
    # close); the sweep removes the dead build's directory and owner lock.
    cache = _core.ModuleCache(str(isolated_cache))
    deadline = time.monotonic() + 60
    while list(tmp.iterdir()) and time.monotonic() < deadline:
        cache.sweep()
        time.sleep(0.05)
    assert list(tmp.iterdir()) == []

    # The next compile that needs the prelude builds it.
    x, y = double("x"), double("y")
    CLinker().accept(FunctionGraph([x, y], [sub(x, y)])).compile()
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert len(prelude_headers(isolated_cache)) == 1
    # Nothing is left: the decompressed prelude is the shared copy.
    assert os.listdir(tmp) == []
    assert len(list((isolated_cache / "v2" / "unpacked").iterdir())) == 1

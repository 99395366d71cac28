"""Preludes and processes: a short process leaves its prelude for the next,
a build killed with its process is swept, and the copy a process
decompressed a prelude into goes with it."""

from __future__ import annotations

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
tmp = cmodule.get_module_cache().root / "v2" / "tmp"
assert [p.name for p in tmp.iterdir() if p.name.startswith("preludes.")], list(tmp.iterdir())
if sys.argv[2] == "kill":
    os._exit(0)  # no atexit
"""


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_a_process_decompresses_the_prelude_into_a_directory_it_removes(
    isolated_cache: Path, how: str
) -> None:
    """The copy a process decompressed the prelude into (once, for all its
    compiles) goes with it: at exit, or, if it was killed, at the next
    sweep. The cache keeps the prelude compressed."""
    result = run_command(
        [sys.executable, "-c", _USE_THE_PRELUDE, str(isolated_cache), how], timeout=300
    )
    assert result.returncode == 0, describe(result)
    [header] = prelude_headers(isolated_cache)
    assert not header.with_name(header.name + ".gch").exists()
    content = _core.zstd_decompress(compressed(header).read_bytes(), 1 << 30)
    assert content is not None and len(content) > 5 * compressed(header).stat().st_size
    tmp = isolated_cache / "v2" / "tmp"
    if how == "kill":
        assert list(tmp.iterdir()) != []
        _core.ModuleCache(str(isolated_cache)).sweep()
    assert list(tmp.iterdir()) == []


def test_a_short_process_leaves_the_prelude_for_the_next(isolated_cache: Path) -> None:
    result = run_command(
        [sys.executable, "-c", _EXIT_RIGHT_AFTER_COMPILE, str(isolated_cache), "exit"],
        timeout=120,
    )
    assert result.returncode == 0, describe(result)
    headers = prelude_headers(isolated_cache)
    assert [header.read_text() for header in headers] == [cmodule.PYTHON_PRELUDE]
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
    # Nothing else is left but this process's copy of the prelude it built
    # (its decompressed copies, removed at exit).
    left = {tuple(name.split(".")[:2]) for name in os.listdir(tmp)}
    assert left == {("preludes", str(os.getpid()))}

"""The precompiled prelude: module keys do not depend on it, compiles use it
once it exists, it is built in the background, it can be turned off, and a
damaged one never breaks a compile."""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opweave.examples.double_ops import add, double, mul, sub
from support.helpers import describe, run_command

from opweave import _core, config
from opweave.graph.fg import FunctionGraph
from opweave.link.c import cmodule
from opweave.link.c.basic import CLinker, CompiledGraph

needs_gcc = pytest.mark.skipif(
    not config.cxx or not _core.supports_prelude(cmodule.get_compiler()),
    reason="precompiled preludes need GCC",
)
pytestmark = needs_gcc


@pytest.fixture(autouse=True)
def no_builds_left_running() -> Iterator[None]:
    """Each test starts and ends with no prelude build in flight."""
    assert cmodule.wait_for_prelude_builds(timeout=120)
    yield
    assert cmodule.wait_for_prelude_builds(timeout=120)


def double_graph(op: Any = add) -> FunctionGraph:
    """``op(x, y)`` on doubles: a module without NumPy's headers."""
    x, y = double("x"), double("y")
    return FunctionGraph([x, y], [op(x, y)])


def vector_graph(nodes: int = 1) -> FunctionGraph:
    """A chain of ``nodes`` VectorTimesVector ops: a module with NumPy's headers."""
    from opweave.examples.vector_times_vector import VectorTimesVector

    from opweave.tensor import dvector

    x, y = dvector("x"), dvector("y")
    out = x
    for _ in range(nodes):
        out = VectorTimesVector()(out, y)
    return FunctionGraph([x, y], [out])


def compile_graph(fgraph: FunctionGraph) -> CompiledGraph:
    return CLinker().accept(fgraph).compile()


def command_of(compiled: CompiledGraph) -> str:
    """The compile command recorded in the module's cache entry."""
    meta = json.loads((Path(compiled.library).parent / "meta.json").read_text())
    return meta["command"]


def prelude_headers(cache_root: Path) -> list[Path]:
    return sorted(cache_root.glob("v1/entries/*/*/opweave_prelude.h"))


def build_prelude_of(fgraph: Callable[[], FunctionGraph], cache_root: Path) -> Path:
    """Compiles a throwaway graph so that its prelude gets built; returns the
    prelude's header."""
    compile_graph(fgraph())
    assert cmodule.wait_for_prelude_builds(timeout=120)
    headers = prelude_headers(cache_root)
    assert len(headers) == 1, headers
    return headers[0]


@pytest.mark.parametrize(
    ("graph", "prelude"),
    [(double_graph, cmodule.PYTHON_PRELUDE), (vector_graph, cmodule.NUMPY_PRELUDE)],
)
def test_module_compiled_before_the_prelude_is_a_hit_after_it(
    isolated_cache: Path, graph: Callable[[], FunctionGraph], prelude: str
) -> None:
    first = compile_graph(graph())
    assert first.outcome == "built"
    assert "-include" not in command_of(first)

    # The first compile started the prelude's build instead of waiting for it.
    assert cmodule.wait_for_prelude_builds(timeout=120)
    headers = prelude_headers(isolated_cache)
    assert [header.read_text() for header in headers] == [prelude]
    assert header_gch(headers[0]).stat().st_size > 0

    again = compile_graph(graph())
    assert again.outcome == "hit"
    assert again.library == first.library  # the same key


def header_gch(header: Path) -> Path:
    return header.with_name(header.name + ".gch")


def probe_uses_gch(compiled: CompiledGraph, scratch: Path) -> str:
    """Re-runs the module's recorded compile into `scratch` with GCC's `-H`
    (which marks a used precompiled header with "! "); returns its output."""
    entry = str(Path(compiled.library).parent)
    words = shlex.split(command_of(compiled))
    words[words.index(f"{entry}/module.so")] = str(scratch / "probe.so")
    result = run_command([*words, "-H", "-Winvalid-pch"], timeout=120)
    assert result.returncode == 0, describe(result)
    return result.stderr


@pytest.mark.parametrize("graph", [double_graph, vector_graph])
def test_new_module_compiles_with_the_prelude(
    isolated_cache: Path, tmp_path: Path, graph: Callable[..., FunctionGraph]
) -> None:
    header = build_prelude_of(graph, isolated_cache)
    other = double_graph(mul) if graph is double_graph else vector_graph(2)

    compiled = compile_graph(other)
    assert compiled.outcome == "built"
    words = shlex.split(command_of(compiled))
    assert words[words.index("-include") + 1] == str(header)
    assert f"! {header_gch(header)}" in probe_uses_gch(compiled, tmp_path)
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert prelude_headers(isolated_cache) == [header]  # nothing new was built


def test_functions_compiled_with_the_prelude_compute_the_same(isolated_cache: Path) -> None:
    import numpy as np
    from opweave.examples.vector_times_vector import VectorTimesVector

    import opweave
    from opweave.tensor import dvector

    compile_graph(vector_graph(3))
    compile_graph(double_graph(mul))
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert len(prelude_headers(isolated_cache)) == 2
    before = set(isolated_cache.glob("v1/entries/*/*/module.so"))

    x, y = dvector("x"), dvector("y")
    f = opweave.function([x, y], VectorTimesVector()(x, y), mode="C")
    assert np.array_equal(f(np.array([1.0, 2.0]), np.array([3.0, 4.0])), [3.0, 8.0])
    a, b = double("a"), double("b")
    g = opweave.function([a, b], sub(a, b), mode="C")
    assert g(5.0, 1.5) == 3.5

    new = set(isolated_cache.glob("v1/entries/*/*/module.so")) - before
    assert len(new) == 2
    for library in new:
        meta = json.loads((library.parent / "meta.json").read_text())
        assert "-include" in shlex.split(meta["command"])


def test_turned_off_no_prelude_is_built_or_used(isolated_cache: Path) -> None:
    with config.change_flags(cmodule__precompiled_header=False):
        first = compile_graph(vector_graph())
        assert cmodule.wait_for_prelude_builds(timeout=120)
        assert prelude_headers(isolated_cache) == []
        assert "-include" not in command_of(first)
    # Turned on again, an existing prelude is not used while off.
    header = build_prelude_of(lambda: vector_graph(2), isolated_cache)
    with config.change_flags(cmodule__precompiled_header=False):
        compiled = compile_graph(vector_graph(3))
        assert "-include" not in command_of(compiled)
    assert prelude_headers(isolated_cache) == [header]


def test_sources_that_do_not_start_with_python_h_get_no_prelude(isolated_cache: Path) -> None:
    compiler = cmodule.get_compiler()
    job = cmodule.extension_job()
    abi = cmodule.python_abi_key()
    assert cmodule.prelude_flags(compiler, job, "#include <Python.h>\nint x;\n", abi) == []
    assert cmodule.prelude_flags(compiler, job, "int x;\n", abi) == []
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert prelude_headers(isolated_cache) == []


def test_no_prelude_is_built_for_a_module_already_cached(isolated_cache: Path) -> None:
    with config.change_flags(cmodule__precompiled_header=False):
        compile_graph(vector_graph())
    again = compile_graph(vector_graph())
    assert again.outcome == "hit"
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert prelude_headers(isolated_cache) == []


def test_threads_start_one_build(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_build = _core.build_prelude

    def counting_build(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.current_thread().name)
        time.sleep(0.2)  # stay in flight while the other threads ask
        return real_build(*args, **kwargs)

    monkeypatch.setattr(_core, "build_prelude", counting_build)
    compiler = cmodule.get_compiler()
    job = cmodule.extension_job()
    source = "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\nint x;\n"
    results: list[list[str]] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                cmodule.prelude_flags(compiler, job, source, cmodule.python_abi_key())
            )
        )
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [[]] * 8
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert len(calls) == 1
    flags = cmodule.prelude_flags(compiler, job, source, cmodule.python_abi_key())
    assert flags[0] == "-include"
    assert Path(flags[1]) == prelude_headers(isolated_cache)[0]


@pytest.mark.parametrize("damage", ["empty", "truncated"])
def test_damaged_prelude_is_replaced_and_compiles_work(isolated_cache: Path, damage: str) -> None:
    header = build_prelude_of(vector_graph, isolated_cache)
    gch = header_gch(header)
    data = gch.read_bytes()
    gch.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])

    compiled = compile_graph(vector_graph(2))
    assert compiled.outcome == "built"
    assert "-include" not in command_of(compiled)
    # The damaged entry was removed and built again in the background.
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert prelude_headers(isolated_cache) == [header]
    size = header_gch(header).stat().st_size
    assert size > len(data) // 2
    assert int((header.parent / "opweave_prelude.gch_size").read_text()) == size


@pytest.mark.parametrize("damage", ["empty", "truncated", "removed"])
def test_prelude_damaged_after_it_was_chosen_does_not_break_the_compile(
    isolated_cache: Path, damage: str
) -> None:
    """A prelude damaged (or deleted by `cache clear`) between prelude_flags()
    and the compile: GCC ignores an empty .gch, fails on a truncated one or a
    missing header, and build_module then compiles without it."""
    header = build_prelude_of(vector_graph, isolated_cache)
    linker = CLinker().accept(vector_graph(2))
    compiler = linker.compiler()
    graph = linker.graph_spec(compiler)
    source = _core.assemble_module(graph.spec)["text"]
    job = linker.compile_job(graph.objects, compiler)
    extra = linker.key_extra(graph.objects)
    job.unkeyed_flags = cmodule.prelude_flags(compiler, job, source, extra)
    assert job.unkeyed_flags == ["-include", str(header)]

    gch = header_gch(header)
    if damage == "removed":
        cmodule.get_module_cache().clear()
    else:
        data = gch.read_bytes()
        gch.write_bytes(b"" if damage == "empty" else data[: len(data) // 3])
    built = _core.build_module(cmodule.get_module_cache(), source, compiler, job, extra)
    assert built["outcome"] == "built"
    module = cmodule.load_extension(built["library"], _core.GRAPH_MODULE_NAME)
    assert module is not None


_EXIT_RIGHT_AFTER_COMPILE = """
import sys
import opweave
opweave.config.compiledir = sys.argv[1]
from opweave.examples.double_ops import add, double
from opweave.graph.fg import FunctionGraph
from opweave.link.c.basic import CLinker
x, y = double("x"), double("y")
compiled = CLinker().accept(FunctionGraph([x, y], [add(x, y)])).compile()
assert compiled.outcome == "built", compiled.outcome
if sys.argv[2] == "kill":
    import os, time
    tmp = opweave._core.ModuleCache(sys.argv[1]).root / "v1" / "tmp"
    deadline = time.monotonic() + 60
    while not any(p.is_dir() for p in tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.005)
    os._exit(0)  # no atexit: the prelude's build dies with the process
"""


@pytest.mark.slow
def test_a_short_process_leaves_the_prelude_for_the_next(isolated_cache: Path) -> None:
    result = run_command(
        [sys.executable, "-c", _EXIT_RIGHT_AFTER_COMPILE, str(isolated_cache), "exit"],
        timeout=120,
    )
    assert result.returncode == 0, describe(result)
    headers = prelude_headers(isolated_cache)
    assert [header.read_text() for header in headers] == [cmodule.PYTHON_PRELUDE]
    assert list((isolated_cache / "v1" / "tmp").iterdir()) == []


@pytest.mark.slow
def test_a_build_killed_with_its_process_is_swept(isolated_cache: Path) -> None:
    result = run_command(
        [sys.executable, "-c", _EXIT_RIGHT_AFTER_COMPILE, str(isolated_cache), "kill"],
        timeout=120,
    )
    assert result.returncode == 0, describe(result)
    tmp = isolated_cache / "v1" / "tmp"
    assert any(path.is_dir() for path in tmp.iterdir())
    assert prelude_headers(isolated_cache) == []

    # The orphaned compiler may still write for a moment; the sweep removes
    # the dead build's directory and its owner lock once it can.
    cache = _core.ModuleCache(str(isolated_cache))
    deadline = time.monotonic() + 60
    while list(tmp.iterdir()) and time.monotonic() < deadline:
        cache.sweep()
        time.sleep(0.05)
    assert list(tmp.iterdir()) == []

    # The next compile that needs the prelude builds it.
    compile_graph(double_graph(mul))
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert len(prelude_headers(isolated_cache)) == 1
    assert os.listdir(tmp) == []


def test_prelude_key_ignores_unkeyed_flags_and_link_inputs() -> None:
    compiler = cmodule.get_compiler()
    job = cmodule.extension_job()
    key = _core.prelude_key(compiler, job, cmodule.PYTHON_PRELUDE, "abi")
    job.unkeyed_flags = ["-include", "/x.h"]
    job.libraries = ["m"]
    assert _core.prelude_key(compiler, job, cmodule.PYTHON_PRELUDE, "abi") == key
    job.flags = ["-DX=1"]
    assert _core.prelude_key(compiler, job, cmodule.PYTHON_PRELUDE, "abi") != key


def test_header_command_line_has_no_link_step() -> None:
    compiler = cmodule.get_compiler()
    job = cmodule.extension_job(flags=["-DX=1"], libraries=["m"])
    job.source = "/p/opweave_prelude.h"
    job.output = "/p/opweave_prelude.h.gch"
    words = compiler.header_command_line(job)
    assert words[-3:] == ["-x", "c++-header", "/p/opweave_prelude.h"]
    assert "-shared" not in words and "-lm" not in words
    assert "-DX=1" in words and "-fPIC" in words

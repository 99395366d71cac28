"""The precompiled prelude: module keys do not depend on it, compiles use it
once it exists, it is built in the background from the second module that
could use it, it can be turned off, and a damaged one never breaks a
compile."""

from __future__ import annotations

import hashlib
import json
import shlex
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opweave.examples.double_ops import add, double, mul, sub
from support.dot_module import DEMO_MODULE_NAME, DEMO_SOURCE
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


def command_of_library(library: str | Path) -> str:
    """The compile command recorded in the cache entry of `library`, which
    runs in the entry's directory (the record's first line says so)."""
    meta = json.loads((Path(library).parent / "meta.json").read_text())
    cd, command = meta["command"].split("\n", 1)
    assert cd == f"cd {Path(library).parent}"
    return command


def command_of(compiled: CompiledGraph) -> str:
    """The compile command recorded in the module's cache entry."""
    return command_of_library(compiled.library)


def prelude_headers(cache_root: Path) -> list[Path]:
    return sorted(cache_root.glob("v2/entries/*/*/opweave_prelude.h"))


def sibling(fgraph: Callable[[], FunctionGraph]) -> FunctionGraph:
    """Another module of ``fgraph``'s prelude, compiled by no test here."""
    return double_graph(sub) if fgraph is double_graph else vector_graph(5)


def build_prelude_of(fgraph: Callable[[], FunctionGraph], cache_root: Path) -> Path:
    """Compiles a throwaway graph and a sibling (the prelude is built from
    the second module that wants it); returns the prelude's header."""
    compile_graph(fgraph())
    compile_graph(sibling(fgraph))
    assert cmodule.wait_for_prelude_builds(timeout=120)
    headers = prelude_headers(cache_root)
    assert len(headers) == 1, headers
    return headers[0]


@pytest.mark.parametrize(("graph", "numpy"), [(double_graph, False), (vector_graph, True)])
def test_module_compiled_before_the_prelude_is_a_hit_after_it(
    isolated_cache: Path, graph: Callable[[], FunctionGraph], numpy: bool
) -> None:
    first = compile_graph(graph())
    assert first.outcome == "built"
    assert "-include" not in command_of(first)
    # One module does not pay for tens of MB: only the second wants it built.
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert prelude_headers(isolated_cache) == []

    # The second compile started the prelude's build instead of waiting for it.
    second = compile_graph(sibling(graph))
    assert "-include" not in command_of(second)
    assert cmodule.wait_for_prelude_builds(timeout=120)
    headers = prelude_headers(isolated_cache)
    assert len(headers) == 1
    prelude = headers[0].read_text()
    assert header_gch(headers[0]).stat().st_size > 0
    # The prelude is the very lines the module's includes start with: Python
    # and <new>, then its standard headers (NumPy's among them, or none).
    source = (Path(second.library).parent / "module.cpp").read_text()
    assert prelude.startswith(f"{cmodule.PYTHON_PRELUDE}#include <new>\n")
    assert source[source.index(cmodule.PYTHON_PRELUDE) :].startswith(prelude)
    assert ("#include <numpy/arrayobject.h>\n" in prelude) is numpy

    again = compile_graph(graph())
    assert again.outcome == "hit"
    assert again.library == first.library  # the same key


def test_the_process_that_built_a_prelude_compiles_with_its_own_copy(
    isolated_cache: Path,
) -> None:
    # The builder keeps the header it compressed as the decompressed copy it
    # shares (precompiled_header.cpp, unpacked_preludes.hpp): its next
    # compile links that copy instead of decompressing the entry's frame
    # and writing it again, and a compile leaves it as it was.
    build_prelude_of(vector_graph, isolated_cache)
    copies = sorted(isolated_cache.glob("v2/unpacked/*.gch"))
    assert len(copies) == 1
    [header] = sorted(isolated_cache.glob("v2/entries/*/*/opweave_prelude.h"))
    assert copies[0].read_bytes() == gch_content(header)
    assert copies[0].name.startswith(header.parent.name + ".")
    kept = copies[0].stat()
    after = compile_graph(vector_graph(3))
    assert "-include" in command_of(after)
    assert sorted(isolated_cache.glob("v2/unpacked/*.gch")) == copies
    again = copies[0].stat()
    assert (again.st_ino, again.st_mtime_ns, again.st_ctime_ns, again.st_nlink) == (
        kept.st_ino,
        kept.st_mtime_ns,
        kept.st_ctime_ns,
        kept.st_nlink,
    )
    assert list((isolated_cache / "v2" / "tmp").glob("preludes.*")) == []


def header_gch(header: Path) -> Path:
    """The precompiled header as the prelude's entry keeps it: compressed."""
    return header.with_name(header.name + ".gch.zst")


def gch_content(header: Path) -> bytes:
    content = _core.zstd_decompress(header_gch(header).read_bytes(), 1 << 30)
    assert content is not None
    return content


def probe_uses_gch(compiled: CompiledGraph, scratch: Path) -> str:
    """Re-runs the module's recorded compile into `scratch` with GCC's `-H`
    (which marks a used precompiled header with "! "), with the prelude
    staged there as a build stages it; returns its output."""
    entry = str(Path(compiled.library).parent)
    words = shlex.split(command_of(compiled))
    words[words.index("module.so")] = str(scratch / "probe.so")
    header = Path(words[words.index("-include") + 1])
    (scratch / header.name).write_bytes(header.read_bytes())
    (scratch / f"{header.name}.gch").write_bytes(gch_content(header))
    words[words.index("-include") + 1] = str(scratch / header.name)
    result = run_command(
        ["sh", "-c", 'cd "$0" && exec "$@"', entry, *words, "-H", "-Winvalid-pch"], timeout=120
    )
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
    assert f"! {tmp_path / header.name}.gch" in probe_uses_gch(compiled, tmp_path)
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert prelude_headers(isolated_cache) == [header]  # nothing new was built


def test_functions_compiled_with_the_prelude_compute_the_same(isolated_cache: Path) -> None:
    import numpy as np
    from opweave.examples.vector_times_vector import VectorTimesVector

    import opweave
    from opweave.tensor import dvector

    for fgraph in (vector_graph(3), vector_graph(4), double_graph(mul), double_graph(add)):
        compile_graph(fgraph)
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert len(prelude_headers(isolated_cache)) == 2
    before = set(isolated_cache.glob("v2/entries/*/*/module-*.so"))

    x, y = dvector("x"), dvector("y")
    f = opweave.function([x, y], VectorTimesVector()(x, y), mode="C")
    assert np.array_equal(f(np.array([1.0, 2.0]), np.array([3.0, 4.0])), [3.0, 8.0])
    a, b = double("a"), double("b")
    g = opweave.function([a, b], sub(a, b), mode="C")
    assert g(5.0, 1.5) == 3.5

    new = set(isolated_cache.glob("v2/entries/*/*/module-*.so")) - before
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


def test_a_module_that_asks_for_no_prelude_gets_none(isolated_cache: Path) -> None:
    compiled = cmodule.compile_extension(DEMO_SOURCE, DEMO_MODULE_NAME)
    assert compiled.outcome == "built"
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
    prelude = _core.PreludeRequest(cmodule.PYTHON_PRELUDE, cmodule.python_abi_key())
    outcomes: list[str] = []

    def compile_one(index: int) -> None:
        source = f"{cmodule.PYTHON_PRELUDE}{DEMO_SOURCE}\nstatic int variant = {index};\n"
        outcomes.append(cmodule.compile_extension(source, DEMO_MODULE_NAME, None, prelude).outcome)

    threads = [threading.Thread(target=compile_one, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == ["built"] * 4
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert len(calls) == 1
    [header] = prelude_headers(isolated_cache)
    later = cmodule.compile_extension(
        f"{cmodule.PYTHON_PRELUDE}{DEMO_SOURCE}\nstatic int later = 1;\n",
        DEMO_MODULE_NAME,
        None,
        prelude,
    )
    words = shlex.split(command_of_library(later.library))
    assert words[words.index("-include") + 1] == str(header)


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage"])
def test_damaged_prelude_is_quarantined_and_rebuilt(isolated_cache: Path, damage: str) -> None:
    header = build_prelude_of(vector_graph, isolated_cache)
    gch = header_gch(header)
    data = gch.read_bytes()
    damaged = {"empty": b"", "truncated": data[: len(data) // 2], "garbage": b"x" * len(data)}
    gch.write_bytes(damaged[damage])

    compiled = compile_graph(vector_graph(2))
    assert compiled.outcome == "built"
    assert "-include" not in command_of(compiled)
    # The damaged entry was quarantined and built again in the background.
    assert cmodule.wait_for_prelude_builds(timeout=120)
    assert prelude_headers(isolated_cache) == [header]
    # (GCC's output differs from run to run; the new one verifies.)
    assert len(gch_content(header)) > 1_000_000
    assert cmodule.get_module_cache().lookup(header.parent.name) is not None
    assert len(list((isolated_cache / "v2" / "quarantine").iterdir())) == 1


def test_a_prelude_gcc_cannot_read_does_not_break_the_compile(isolated_cache: Path) -> None:
    """Damage the integrity check cannot see (the metadata was rewritten to
    match a truncated .gch): GCC fails on it, and the compile is retried
    without the prelude."""
    header = build_prelude_of(vector_graph, isolated_cache)
    gch = header_gch(header)
    truncated = _core.zstd_compress(gch_content(header)[:100_000])
    assert truncated is not None
    gch.write_bytes(truncated)
    meta_path = header.parent / "meta.json"
    meta = json.loads(meta_path.read_text())
    for record in meta["files"]:
        if record[0] == gch.name:
            record[1:] = [len(truncated), hashlib.sha256(truncated).hexdigest()]
    meta_path.write_text(json.dumps(meta))

    compiled = compile_graph(vector_graph(2))
    assert compiled.outcome == "built"
    assert "-include" not in command_of(compiled)  # the command that succeeded
    assert compiled.module is not None


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


def test_every_module_starts_with_the_python_prelude_the_core_owns() -> None:
    """The prelude texts come from the core, beside the preamble: the Python
    prelude is the first code of a module, and the NumPy prelude extends it."""
    from opweave.examples.vector_times_vector import VectorTimesVector

    from opweave.graph.fg import FunctionGraph
    from opweave.link.c.basic import CLinker
    from opweave.tensor import dvector

    x, y = dvector("x"), dvector("y")
    linker = CLinker().accept(FunctionGraph([x, y], [VectorTimesVector()(x, y)]))
    text = linker.get_src_code()
    before = text[: text.index(_core.PYTHON_PRELUDE)]  # a comment and the source macro
    assert "#include" not in before and "PY_SSIZE_T_CLEAN" not in before
    assert cmodule.PYTHON_PRELUDE == _core.PYTHON_PRELUDE
    # Its prelude: those lines, <new>, and the standard headers that follow.
    prelude = _core.prelude_text_of([text])
    assert prelude.startswith(f"{_core.PYTHON_PRELUDE}#include <new>\n")
    assert "#include <numpy/arrayobject.h>\n" in prelude
    assert text[text.index(_core.PYTHON_PRELUDE) :].startswith(prelude)


def test_a_copied_request_shares_nothing_with_its_original() -> None:
    request = cmodule.module_request("int x;", label="original")
    request.prelude = _core.PreludeRequest(cmodule.PYTHON_PRELUDE, "abi")
    copy = request.copy()
    request.label, request.job.flags = "changed", ["-DCHANGED"]
    request.prelude = None
    assert (copy.label, copy.source) == ("original", "int x;")
    assert "-DCHANGED" not in copy.job.flags and copy.prelude is not None
    assert copy.prelude.header_text == cmodule.PYTHON_PRELUDE

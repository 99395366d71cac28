"""Benchmarks of cold module compiles with and without the precompiled prelude
(not tests).

Measures, on this machine, in one run, for two generated graph modules (the
tutorial's VectorTimesVector on float64 vectors, which includes NumPy's
headers, and an add of two doubles, which includes only Python.h):
- the prelude's own build (once, into a fresh cache), and its size;
- cold compile without the prelude: `build_module` of the module after
  evicting it, so every sample compiles;
- cold compile with the prelude: the same, with the `-include` flags of
  `prelude_flags`.
The two kinds of samples alternate, so that drift in the machine's speed hits
both alike. Prints medians. Usage: python benchmarks/bench_compile.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import opweave
from opweave import _core
from opweave.graph.fg import FunctionGraph
from opweave.link.c import cmodule
from opweave.link.c.basic import CLinker


def vector_graph() -> FunctionGraph:
    from opweave.examples.vector_times_vector import VectorTimesVector

    from opweave.tensor import dvector

    x, y = dvector("x"), dvector("y")
    return FunctionGraph([x, y], [VectorTimesVector()(x, y)])


def double_graph() -> FunctionGraph:
    from opweave.examples.double_ops import add, double

    x, y = double("x"), double("y")
    return FunctionGraph([x, y], [add(x, y)])


def module_parts(fgraph: FunctionGraph) -> tuple[Any, str, Any, str]:
    """The compiler, source, compile job and key extra CLinker would use."""
    linker = CLinker().accept(fgraph)
    compiler = linker.compiler()
    graph = linker.graph_spec(compiler)
    source = _core.assemble_module(graph.spec)["text"]
    return (
        compiler,
        source,
        linker.compile_job(graph.objects, compiler),
        linker.key_extra(graph.objects),
    )


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def bench_module(name: str, fgraph: FunctionGraph, repeat: int) -> None:
    compiler, source, job, extra = module_parts(fgraph)
    cache = cmodule.get_module_cache()

    # The first call finds no prelude and starts building it in the background.
    start = time.perf_counter()
    assert cmodule.prelude_flags(compiler, job, source, extra) == []
    assert cmodule.wait_for_prelude_builds()
    prelude_seconds = time.perf_counter() - start
    flags = cmodule.prelude_flags(compiler, job, source, extra)
    assert flags, "the prelude was not built"
    gch = Path(flags[1] + ".gch")

    def cold(unkeyed: list[str]) -> float:
        job.unkeyed_flags = unkeyed
        cache.evict(_core.module_key(source, compiler, job, extra))
        seconds = timed(lambda: _core.build_module(cache, source, compiler, job, extra))
        cache.evict(_core.module_key(source, compiler, job, extra))
        return seconds

    cold(flags)  # warm the file system cache for both kinds
    without, with_prelude = [], []
    for _ in range(repeat):
        without.append(cold([]))
        with_prelude.append(cold(flags))
    plain, fast = statistics.median(without), statistics.median(with_prelude)
    print(
        f"{name:<27} prelude build {prelude_seconds:5.2f} s ({gch.stat().st_size / 2**20:.0f} MiB)"
        f"   cold compile: without {plain * 1e3:6.1f} ms   with {fast * 1e3:6.1f} ms"
        f"   ratio {fast / plain:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="opweave-bench-compile-") as scratch:
        opweave.config.compiledir = str(Path(scratch) / "cache")
        compiler = cmodule.get_compiler()
        if not _core.supports_prelude(compiler):
            print(f"{compiler.identity['path']} cannot use a precompiled prelude (GCC only)")
            return
        bench_module("VectorTimesVector (numpy)", vector_graph(), args.repeat)
        bench_module("add of doubles (Python.h)", double_graph(), args.repeat)


if __name__ == "__main__":
    main()

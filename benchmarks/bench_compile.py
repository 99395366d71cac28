"""Benchmarks of cold module compiles with and without the precompiled prelude
(not tests).

Measures, on this machine, in one run, for two generated graph modules (the
tutorial's VectorTimesVector on float64 vectors, which includes NumPy's
headers, and an add of two doubles, which includes only Python.h):
- the prelude's own build (once, into a fresh cache), and its size;
- cold compile without the prelude: `build_module` of the module's request
  (with no prelude) after evicting it, so every sample compiles;
- cold compile with the prelude: the same request, allowed its prelude.
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


def module_request(fgraph: FunctionGraph) -> tuple[Any, Any]:
    """The compiler and the module request CLinker would use."""
    linker = CLinker().accept(fgraph)
    compiler = linker.compiler()
    graph = linker.graph_spec(compiler)
    job = linker.compile_job(graph.objects, compiler)
    text = _core.assemble_module(graph.spec).text
    request = cmodule.module_request(
        text,
        job,
        linker.key_extra(graph.objects),
        label=linker.label(),
        prelude=cmodule.prelude_request([text], job),
    )
    return compiler, request


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def bench_module(name: str, fgraph: FunctionGraph, repeat: int) -> None:
    compiler, request = module_request(fgraph)
    cache = cmodule.get_module_cache()
    prelude_seconds = timed(lambda: _core.build_prelude(cache, compiler, request))
    prelude = _core.build_prelude(cache, compiler, request).entry
    gch = prelude.file_ending(".gch")
    with_prelude_request = request
    without_prelude_request = cmodule.module_request(
        request.source, request.job, request.extra, request.label, None
    )

    def cold(module: Any) -> float:
        key = _core.build_module(cache, compiler, module).key
        cache.evict(key)
        seconds = timed(lambda: _core.build_module(cache, compiler, module))
        cache.evict(key)
        return seconds

    cold(with_prelude_request)  # warm the file system cache for both kinds
    without, with_prelude = [], []
    for _ in range(repeat):
        without.append(cold(without_prelude_request))
        with_prelude.append(cold(with_prelude_request))
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

"""Benchmarks of the module cache and compiler driver (not tests).

Measures, on this machine, in one run:
- lookup: an in-process cache hit (ModuleCache.lookup), against a bare
  os.stat of the same directory as the baseline;
- fresh process: `import opweave` plus getting the demo module from a warm
  cache, against `python -c "import sys"` as the baseline;
- cold compile: the demo extension module, with a fresh cache each time;
- parallel: 8 processes compiling 8 different modules at once, against one
  compile (serialised compiles would give 8x; 2 cores give about 4x at best).

Prints medians. Usage: python benchmarks/bench_cache.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from opweave import _core

# The tests' small hand-written extension module (a dot product).
SUPPORT = Path(__file__).resolve().parents[1] / "tests" / "python"
sys.path.insert(0, str(SUPPORT))
from support.dot_module import DEMO_SOURCE  # noqa: E402

_FRESH_HIT = """
import sys
sys.path.insert(0, {support!r})
import opweave
opweave.config.compiledir = {cache!r}
from support.dot_module import run_in_this_process
run = run_in_this_process()
assert run.outcome == "hit", run.outcome
"""

_COMPILE_ONE = """
import sys
sys.path.insert(0, {support!r})
import opweave
opweave.config.compiledir = {cache!r}
from opweave.link.c.cmodule import compile_extension
from support.dot_module import DEMO_SOURCE, DEMO_MODULE_NAME
compile_extension(DEMO_SOURCE + "\\nstatic int variant_{index} = {index};\\n", DEMO_MODULE_NAME)
"""


def median_seconds(function: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run_python(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True)


def bench_lookup(scratch: Path) -> tuple[float, float]:
    cache = _core.ModuleCache(str(scratch / "lookup"))
    key = "b" * 64
    cache.get_or_build(key, lambda staging: None)
    entry = str(cache.entry_dir(key))
    n = 20000

    def many_lookups() -> None:
        for _ in range(n):
            cache.lookup(key)

    def many_stats() -> None:
        for _ in range(n):
            os.stat(entry)

    return median_seconds(many_lookups, 5) / n, median_seconds(many_stats, 5) / n


def bench_cold_compile(scratch: Path, repeat: int) -> float:
    from opweave.link.c.cmodule import get_compiler, module_request

    compiler = get_compiler()
    samples = []
    for index in range(repeat):
        cache = _core.ModuleCache(str(scratch / f"cold{index}"))
        start = time.perf_counter()
        built = _core.build_module(cache, compiler, module_request(DEMO_SOURCE, label="demo"))
        samples.append(time.perf_counter() - start)
        assert built.outcome == "built"
    return statistics.median(samples)


def bench_parallel(scratch: Path, processes: int) -> float:
    cache = scratch / "parallel"
    start = time.perf_counter()
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _COMPILE_ONE.format(cache=str(cache), index=i, support=str(SUPPORT)),
            ]
        )
        for i in range(processes)
    ]
    for child in children:
        if child.wait() != 0:
            raise RuntimeError("a parallel compile failed")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="opweave-bench-") as scratch_name:
        scratch = Path(scratch_name)
        lookup, stat = bench_lookup(scratch)
        print(
            f"lookup (hit, in process):  {lookup * 1e6:8.2f} us   os.stat baseline "
            f"{stat * 1e6:.2f} us   ratio {lookup / stat:.2f}"
        )

        warm = scratch / "warm"
        run_python(
            _FRESH_HIT.replace('assert run.outcome == "hit", run.outcome', "").format(
                cache=str(warm), support=str(SUPPORT)
            )
        )
        fresh = median_seconds(
            lambda: run_python(_FRESH_HIT.format(cache=str(warm), support=str(SUPPORT))),
            args.repeat,
        )
        bare = median_seconds(lambda: run_python("import sys"), args.repeat)
        print(
            f"fresh process, cache hit: {fresh * 1e3:8.1f} ms   bare python baseline "
            f"{bare * 1e3:.1f} ms   opweave's share {(fresh - bare) * 1e3:.1f} ms"
        )

        cold = bench_cold_compile(scratch, args.repeat)
        print(f"cold compile (demo):      {cold * 1e3:8.1f} ms")

        # One compile in a fresh process, then 8 different ones at once.
        one = bench_parallel(scratch / "one", 1)
        eight = bench_parallel(scratch / "eight", 8)
        print(
            f"8 processes, 8 modules:   {eight:8.2f} s    one process, one module "
            f"{one:.2f} s   ratio {eight / one:.2f} (8.0 if serialised)"
        )


if __name__ == "__main__":
    main()

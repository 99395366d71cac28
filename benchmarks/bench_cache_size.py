"""How much of a cache precompiled preludes take (not a test).

Each scenario runs in fresh processes against an empty cache, then reports
the cache's bytes by entry kind (``opweave cache list --json``) and the size
of its ``opweave cache export``:

- one function: a process compiles one graph (NumPy's prelude would serve it);
- a session: a process compiles six distinct graphs;
- two flag sets: the session, then one graph with ``cmodule__remove_gxx_opt``
  (a debugging flag set that compiles one module).

Beside the entries, the decompressed preludes the cache's processes share
(``v2/unpacked/``, not entries: the size limit does not count them).

Then what a compile that uses a prelude costs: the median seconds of
compiling each of eight new graphs in one process, its prelude built.

Give several interpreters (each with an opweave installed) to compare them
in one run, e.g. a baseline install and this tree::

    python benchmarks/bench_cache_size.py /tmp/ab/base/bin/python .venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_COMPILE = """
import sys
import numpy as np
import opweave
from opweave.examples.vector_times_vector import VectorTimesVector
from opweave.link.c import cmodule
from opweave.tensor import dvector
opweave.config.compiledir = sys.argv[1]
x, y = dvector("x"), dvector("y")
for count in map(int, sys.argv[2].split(",")):
    out = x
    for _ in range(count):
        out = VectorTimesVector()(out, y)
    f = opweave.function([x, y], out, mode="C")
    assert np.allclose(f(np.ones(3), np.full(3, 2.0)), 2.0**count)
assert cmodule.wait_for_prelude_builds(timeout=300)
"""

_TIMED = """
import statistics, sys, time
import numpy as np
import opweave
from opweave.examples.vector_times_vector import VectorTimesVector
from opweave.tensor import dvector
opweave.config.compiledir = sys.argv[1]
x, y = dvector("x"), dvector("y")
seconds = []
for count in range(3, 11):
    out = x
    for _ in range(count):
        out = VectorTimesVector()(out, y)
    start = time.perf_counter()
    opweave.function([x, y], out, mode="C")
    seconds.append(time.perf_counter() - start)
print(statistics.median(seconds))
"""

SCENARIOS: dict[str, list[tuple[str, str]]] = {
    "one function": [("1", "")],
    "a session": [("1,2,3,4,5,6", "")],
    "two flag sets": [("1,2,3,4,5,6", ""), ("1", "cmodule__remove_gxx_opt=True")],
}


def _run(python: str, args: list[str], flags: str = "") -> str:
    env = dict(os.environ, OPWEAVE_FLAGS=flags)
    result = subprocess.run(
        [python, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"{python} {args[:2]} failed:\n{result.stderr[-2000:]}")
    return result.stdout


def measure(python: str, steps: list[tuple[str, str]]) -> dict[str, int]:
    """Bytes by kind after ``steps`` in a fresh cache, and the export's size."""
    with tempfile.TemporaryDirectory() as scratch:
        cache = str(Path(scratch) / "cache")
        for counts, flags in steps:
            _run(python, ["-c", _COMPILE, cache, counts], flags)
        cli = [python, "-m", "opweave", "cache"]
        flags = f"compiledir={cache}"
        listed = json.loads(_run(cli[0], [*cli[1:], "list", "--json"], flags))
        sizes: dict[str, int] = {}
        for entry in listed:
            sizes[entry["kind"]] = sizes.get(entry["kind"], 0) + entry["size_bytes"]
        export = Path(scratch) / "export.tgz"
        _run(cli[0], [*cli[1:], "export", str(export)], flags)
        sizes["export file"] = export.stat().st_size
        # Not entries: the shared decompressed preludes (docs/cache.md).
        unpacked = Path(cache, "v2", "unpacked")
        sizes["unpacked"] = sum(p.stat().st_size for p in unpacked.glob("*.gch"))
        return sizes


def compile_seconds(python: str) -> float:
    """The median seconds of a new graph's compile with its prelude built."""
    with tempfile.TemporaryDirectory() as scratch:
        cache = str(Path(scratch) / "cache")
        _run(python, ["-c", _COMPILE, cache, "1,2"])
        return float(_run(python, ["-c", _TIMED, cache]))


def _mib(count: int) -> str:
    return f"{count / 2**20:6.2f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pythons", nargs="*", default=[sys.executable])
    args = parser.parse_args()
    for name, steps in SCENARIOS.items():
        print(f"{name}:")
        for python in args.pythons:
            sizes = measure(python, steps)
            export = sizes.pop("export file")
            unpacked = sizes.pop("unpacked")
            total = sum(sizes.values())
            prelude = sizes.get("prelude", 0)
            share = prelude / total if total else 0.0
            print(
                f"  {python}: cache {_mib(total)}, preludes {_mib(prelude)} ({share:4.0%}),"
                f" export {_mib(export)}; beside it, shared decompressed preludes"
                f" {_mib(unpacked)}"
            )
    print("a compile with the prelude built (median of 8):")
    for python in args.pythons:
        print(f"  {python}: {compile_seconds(python) * 1000:.1f} ms")


if __name__ == "__main__":
    main()

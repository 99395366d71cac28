"""Where a fresh process's milliseconds go, and what a 1-op cold build adds
to its compiler (not a test).

Fresh process, each step a fresh interpreter (medians of --repeat runs):
- python: ``python -c pass``;
- numpy: ``import numpy``;
- opweave: ``import numpy, opweave``;
- hit: that, then ``function()`` of a graph compiled before (a cache hit);
- call: that, then one call.
Each step's share is its difference with the step before; opweave's own
share of a fresh-process hit is everything after ``import numpy``.

1-op cold: ``function()`` of a one-op graph never compiled, in a compile dir
whose precompiled prelude is built, against running the compile command
its cache entry records, by hand, in a scratch directory with the prelude
staged as a build stages it (the bare compiler run).

With --against PYTHON (another interpreter with another opweave, e.g. a
baseline install): only opweave's share of a hit, for both interpreters in
the same run, their fresh processes alternating (``import numpy``, then
the hit, each interpreter in turn, --repeat rounds), each with a compile dir
of its own; the machine's speed moves between runs, not between
neighbouring processes.

Usage: python benchmarks/bench_fresh.py [--repeat N] [--against PYTHON]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_GRAPH = """
import sys
sys.path.insert(0, {here!r})
import numpy as np
import opweave
import scaling_graphs
opweave.config.compiledir = {cache!r}
api = scaling_graphs.import_backend("opweave")
ops = scaling_graphs.make_ops(api)
x, s = api.tensor.dvector("x"), api.tensor.dscalar("s")
f = opweave.function([x, s], scaling_graphs.chain(ops, x, s, [{k}]))
"""

STEPS = {
    "python": "pass",
    "numpy": "import numpy",
    "opweave": "import numpy, opweave",
    "hit": _GRAPH,
    "call": _GRAPH + "f(np.ones(3), np.array(2.0))\n",
}


def wall(code: str, python: str = sys.executable) -> float:
    """Seconds of a fresh interpreter (``python``) running ``code``."""
    start = time.perf_counter()
    subprocess.run([python, "-c", code], check=True)
    return time.perf_counter() - start


def alternating(pythons: list[str], repeat: int, scratch: str) -> dict[str, float]:
    """Each interpreter's share of a hit (median hit minus median ``import
    numpy``, seconds), their fresh processes alternating."""
    hits = {
        python: _GRAPH.format(here=str(HERE), cache=f"{scratch}/c{i}", k=1)
        for i, python in enumerate(pythons)
    }
    for python, code in hits.items():
        wall(code, python), wall(code, python)  # compiled, then a hit
    numpy: dict[str, list[float]] = {python: [] for python in pythons}
    hit: dict[str, list[float]] = {python: [] for python in pythons}
    for _ in range(repeat):
        for python in pythons:
            numpy[python].append(wall("import numpy", python))
            hit[python].append(wall(hits[python], python))
    return {p: statistics.median(hit[p]) - statistics.median(numpy[p]) for p in pythons}


def fresh_process(repeat: int, cache: str) -> dict[str, float]:
    """Median seconds of each step of STEPS, cumulative."""
    wall(STEPS["hit"].format(here=str(HERE), cache=cache, k=1))  # compiled, then hits
    samples: dict[str, list[float]] = {name: [] for name in STEPS}
    for _ in range(repeat):
        for name, code in STEPS.items():
            samples[name].append(wall(code.format(here=str(HERE), cache=cache, k=1)))
    return {name: statistics.median(values) for name, values in samples.items()}


def bare_compile(cache: str, library: str) -> float:
    """Seconds of the compile command recorded for ``library``'s entry, run
    by hand in a scratch directory with the prelude staged there."""
    from opweave import _core

    entry = Path(library).parent
    meta = json.loads((entry / "meta.json").read_text())
    words = shlex.split(meta["command"].split("\n", 1)[1])
    with tempfile.TemporaryDirectory() as scratch:
        if "-include" in words:
            header = Path(words[words.index("-include") + 1])
            staged = Path(scratch) / header.name
            staged.write_bytes(header.read_bytes())
            packed = header.with_name(header.name + ".gch.zst")
            content = (
                _core.zstd_decompress(packed.read_bytes(), 1 << 31)
                if packed.exists()
                else header.with_name(header.name + ".gch").read_bytes()
            )
            Path(f"{staged}.gch").write_bytes(content or b"")
            words[words.index("-include") + 1] = str(staged)
        (Path(scratch) / "module.cpp").write_bytes((entry / "module.cpp").read_bytes())
        words[words.index(next(w for w in words if w.endswith(".so")))] = "out.so"
        start = time.perf_counter()
        subprocess.run(words, cwd=scratch, check=True, capture_output=True)
        return time.perf_counter() - start


def one_op_cold(repeat: int, cache: str) -> tuple[float, float]:
    """Medians of a 1-op graph's cold function() and of its bare compile."""
    opweave_s, bare_s = [], []
    for r in range(repeat):
        code = _GRAPH.format(here=str(HERE), cache=cache, k=1000 + r)
        code += "import json\nprint(json.dumps({'library': f.library}))\n"
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        whole = time.perf_counter() - start
        library = json.loads(done.stdout.decode().strip().splitlines()[-1])["library"]
        hit = wall(_GRAPH.format(here=str(HERE), cache=cache, k=1000 + r))
        opweave_s.append(whole - hit)  # the compile's share: cold minus a hit
        bare_s.append(bare_compile(cache, library))
    return statistics.median(opweave_s), statistics.median(bare_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--against", help="another interpreter, alternated with this one")
    args = parser.parse_args()
    if args.against:
        with tempfile.TemporaryDirectory() as scratch:
            shares = alternating([args.against, sys.executable], args.repeat, scratch)
        print(f"opweave's own share of a hit (alternating, medians of {args.repeat}, ms):")
        for python, share in shares.items():
            print(f"  {share * 1e3:6.1f}  {python}")
        print(f"load average: {os.getloadavg()[0]:.2f}")
        return
    with tempfile.TemporaryDirectory() as scratch:
        cache = str(Path(scratch) / "cache")
        for k in (900, 901):  # the second module builds the prelude
            wall(_GRAPH.format(here=str(HERE), cache=cache, k=k))
        steps = fresh_process(args.repeat, cache)
        cold, bare = one_op_cold(args.repeat, cache)
    print(f"fresh process (medians of {args.repeat}, ms):")
    before = 0.0
    for name, seconds in steps.items():
        print(f"  {name:<8} {seconds * 1e3:8.1f}  (+{(seconds - before) * 1e3:6.1f})")
        before = seconds
    print(f"  opweave's own share of a hit: {(steps['hit'] - steps['numpy']) * 1e3:.1f} ms")
    print("1-op cold build (ms):")
    print(f"  opweave (cold minus a hit) {cold * 1e3:8.1f}")
    print(
        f"  the bare compiler run      {bare * 1e3:8.1f}  (opweave adds {(cold - bare) * 1e3:.1f})"
    )
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

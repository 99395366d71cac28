"""What verifying entries costs: this build against a baseline build of opweave.

Measures, in fresh processes, for each interpreter given:
- hit: `function()` of the tutorial's VectorTimesVector graph whose module is
  in a warm cache (imports done and not timed): the path a user's script
  takes on every start. This build verifies the entry (sizes, hashes, owners,
  modes) and its headers before loading it;
- cold: `function()` of a new graph in a cache where another graph was
  compiled first (so the precompiled prelude exists): a cold compile.

Each measurement runs in its own subprocess, alternating between the
interpreters so that both see the same machine load. Prints medians and the
ratio against the baseline measured in the same run.

Usage: python benchmarks/bench_cache_trust.py --baseline-python /path/to/python [--runs N]
(the baseline is an interpreter with another opweave installed, e.g. a venv
with the previous commit: `git worktree add /tmp/base <commit> && python -m venv
/tmp/bv && /tmp/bv/bin/pip install numpy /tmp/base`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

WORKER = r"""
import json, sys, time
import numpy as np
import opweave
from opweave.examples.vector_times_vector import VectorTimesVector
from opweave.link.c import cmodule
opweave.config.compiledir = sys.argv[1]
x, y = opweave.tensor.dvector("x"), opweave.tensor.dvector("y")
out = x
for _ in range(int(sys.argv[2])):
    out = VectorTimesVector()(out, y)
start = time.perf_counter()
f = opweave.function([x, y], out)
seconds = time.perf_counter() - start
assert f(np.ones(2), np.ones(2)).tolist() == [1.0, 1.0]
cmodule.wait_for_prelude_builds()
print(json.dumps({"seconds": seconds}))
"""


def run(python: str, cache: str, nodes: int) -> float:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.pop("OPWEAVE_FLAGS", None)
    done = subprocess.run(
        [python, "-c", WORKER, cache, str(nodes)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=600,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-python", required=True)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    pythons = {"this build": sys.executable, "baseline": args.baseline_python}
    results: dict[str, dict[str, list[float]]] = {name: {"hit": [], "cold": []} for name in pythons}
    with tempfile.TemporaryDirectory() as scratch:
        caches = {name: os.path.join(scratch, name.replace(" ", "-")) for name in pythons}
        for name, python in pythons.items():
            run(python, caches[name], 1)  # warm: the module and the prelude
            run(python, caches[name], 1)  # and the .pyc files
        for index in range(args.runs):
            for name, python in pythons.items():
                results[name]["hit"].append(run(python, caches[name], 1))
                results[name]["cold"].append(run(python, caches[name], 2 + index))
    print(f"{'median of ' + str(args.runs):<22}{'this build':>12}{'baseline':>12}{'ratio':>8}")
    for what, label in (("hit", "fresh-process hit"), ("cold", "cold compile")):
        mine = statistics.median(results["this build"][what])
        base = statistics.median(results["baseline"][what])
        print(f"{label:<22}{mine * 1000:>10.2f}ms{base * 1000:>10.2f}ms{mine / base:>8.3f}")


if __name__ == "__main__":
    main()

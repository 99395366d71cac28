"""opweave as PyTensor's C back end against PyTensor's own C linker (issue 25;
not a test).

What: two PyTensor graphs, "hier" (the log-density of a hierarchical normal
model and its gradient) and "wide" (24 terms, each a matrix-vector product,
a column sum of an elementwise exponential, a reversed view and an indexed
element, summed: about 100 nodes after PyTensor's rewrites, which fusion
cannot merge). Back ends, in the same run:

- "OPWEAVE" (import opweave.pytensor; the whole graph in one module);
- "C", the baseline of the ratios: PyTensor's C linker (CLinker, the whole
  graph in one module);
- "CVM" (PyTensor's C VM: a module per node), for information;
- "NUMBA" (PyTensor 3's default back end), for information, when it
  imports. Numba compiles at the first call, so its linker figures include
  that call.

The linker phase is PyTensor's own measure of it (profiling.total_time_linker):

- cold: the linker phase of the first function(), in a fresh process with
  empty compile dirs (the toolchain warm: each worker first compiles a
  one-node graph of another dtype);
- edit: the linker phase after one edited term (one constant changed),
  right after the cold build (opweave's precompiled prelude, started by
  it, is then still building on 2 cores);
- edited: the linker phase after another edited term, once each back end's
  background work is done (opweave's prelude built: a user's edit loop from
  the second run on);
- same: the linker phase of a second function() of an equal graph in the
  same process (median of 5);
- fresh: a hit in a fresh process: the import of opweave.pytensor (none for
  the others) plus the linker phase (median of 3 processes, the back ends
  in turn);
- call: per call with trust_input=True, small inputs (median of 7 x 2,000);
- large: per call on inputs of 10^6 elements (median of 7 x 3).

The call figures of opweave and of the baseline are measured again in one
process holding both functions (their caches warm), in alternate batches:
the machine's speed may change between workers (a shared machine's per-call
times moved by 2x from one run to the next). The other back ends' call
figures come from their own workers (median of 5 batches).

Each figure is the median of --repeat runs; the table shows each back end
and the ratio opweave / C. All use the same PYTENSOR_FLAGS
(blas__ldflags=-lopenblas when OpenBLAS is found), PyTensor's -O3 and
-march=native (opweave.pytensor's default cmodule__march=native), the
machine's cores, and opweave's default compile__jobs. Run it with a Python
that has PyTensor and opweave (Python >= 3.12).
Usage: python benchmarks/bench_pytensor_backend.py [--repeat N] [--json PATH]
"""

from __future__ import annotations

import contextlib
import ctypes.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

GRAPHS = ("hier", "wide")
BACKENDS = ("OPWEAVE", "C", "CVM", "NUMBA")
BASELINE = "C"
FIGURES = ("cold", "edit", "edited", "fresh", "same", "call", "large")
FRESH_RUNS = 3

WORKER = r"""
import os, sys, time, json
start = time.perf_counter()
backend, graph, phase = sys.argv[1:4]
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.debug import profiling
imported = time.perf_counter()
if "OPWEAVE" in backend.split(","):
    import opweave.pytensor  # noqa: F401
backend_import = time.perf_counter() - imported
mode = backend

def build(offset=0.0):
    if graph == "hier":
        mu, log_tau = pt.dscalar("mu"), pt.dscalar("log_tau")
        theta, y, sigma = pt.dvector("theta"), pt.dvector("y"), pt.dvector("sigma")
        tau = pt.exp(log_tau)
        logp = (
            -0.5 * ((theta - mu) / tau) ** 2 - log_tau
            - 0.5 * ((y - theta) / sigma) ** 2 - pt.log(sigma)
        ).sum() - 0.5 * mu**2 / 25.0 + pt.log1p(tau**2) * -1.0 + log_tau + offset
        inputs = [mu, log_tau, theta, y, sigma]
        return inputs, [logp, *pytensor.grad(logp, [mu, log_tau, theta])]
    ms = [pt.dmatrix(f"m{k}") for k in range(4)]
    xs = [pt.dvector(f"x{k}") for k in range(4)]
    terms = []
    for k in range(24):
        scale = 0.01 * k + (offset if k == 12 else 0.0)
        product = pt.dot(ms[k % 4], xs[(k + 1) % 4] * scale)
        column = pt.exp(ms[(k + 2) % 4] * scale).sum(axis=0)
        terms.append(product * column[::-1] + xs[k % 4][k % 3])
    return [*ms, *xs], [pt.add(*terms)]

def args(n):
    rng = np.random.default_rng(0)
    if graph == "hier":
        return [np.array(0.1), np.array(-0.2), rng.normal(size=n), rng.normal(size=n),
                np.abs(rng.normal(size=n)) + 0.5]
    side = max(3, int(round(n ** 0.5)))
    return [*(rng.normal(size=(side, side)) for _ in range(4)),
            *(rng.normal(size=side) for _ in range(4))]

def linked(offset=0.0):
    inputs, outputs = build(offset)
    before = profiling.total_time_linker
    f = pytensor.function(inputs, outputs, mode=mode, trust_input=True)
    seconds = profiling.total_time_linker - before
    if backend == "NUMBA":  # compiled at the first call
        start = time.perf_counter()
        f(*args(9))
        seconds += time.perf_counter() - start
    return f, seconds

out = {}
if phase == "cold":
    w = pt.fvector("w")
    pytensor.function([w], pt.exp(w), mode=mode)  # the toolchain warm
    f, out["cold"] = linked()
    out["nodes"] = len(f.maker.fgraph.apply_nodes)
    _, out["edit"] = linked(0.5)
    if "OPWEAVE" in backend.split(","):
        from opweave.link.c import cmodule
        cmodule.wait_for_prelude_builds(timeout=120)
    _, out["edited"] = linked(0.25)
    out["same"] = sorted(linked()[1] for _ in range(5))[2]
    small, large = args(9), args(10**6)
    f(*small)
    calls = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(2000):
            f(*small)
        calls.append((time.perf_counter() - t) / 2000)
    out["call"] = sorted(calls)[2]
    f(*large)
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(5):
            f(*large)
        runs.append((time.perf_counter() - t) / 5)
    out["large"] = sorted(runs)[2]
    out["value"] = float(np.sum(f(*small)[0]))
elif phase == "pair":
    # The calls of several back ends (their caches warm), timed in one
    # process in alternate batches: the machine's speed changes between runs.
    functions = {}
    for mode in backend.split(","):
        functions[mode] = linked()[0]
    small, large = args(9), args(10**6)
    calls = {name: [] for name in functions}
    bigs = {name: [] for name in functions}
    for f in functions.values():
        f(*small), f(*large)
    for _ in range(7):
        for name, f in functions.items():
            t = time.perf_counter()
            for _ in range(2000):
                f(*small)
            calls[name].append((time.perf_counter() - t) / 2000)
            t = time.perf_counter()
            for _ in range(3):
                f(*large)
            bigs[name].append((time.perf_counter() - t) / 3)
    out = {name: {"call": sorted(calls[name])[3], "large": sorted(bigs[name])[3]}
           for name in functions}
else:
    f, linker = linked()
    out["fresh"] = backend_import + linker
print(json.dumps(out))
"""


def run(backend: str, graph: str, phase: str, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, backend, graph, phase],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"{backend} {graph} {phase} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def backends() -> list[str]:
    """The back ends this Python can run (NUMBA only where numba imports)."""
    found = subprocess.run([sys.executable, "-c", "import numba"], capture_output=True, check=False)
    return [b for b in BACKENDS if b != "NUMBA" or found.returncode == 0]


def environment(tmp: str, pytensor_dir: str | None = None) -> dict[str, str]:
    """A worker's environment: its compile dirs under ``tmp`` (PyTensor's
    under ``pytensor_dir`` if given)."""
    env = dict(os.environ)
    # Imports read compiled bytecode, as after a pip install.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # PyTensor's Numba back end caches compiled functions under
    # base_compiledir (its default is the user's ~/.pytensor, shared by every
    # run), not under compiledir: both are set, so Numba's cold is cold.
    base = f"{pytensor_dir or tmp}/pytensor"
    flags = [f"base_compiledir={base}", f"compiledir={base}/compiledir"]
    if ctypes.util.find_library("openblas"):
        flags.append("blas__ldflags=-lopenblas")
    env["PYTENSOR_FLAGS"] = ",".join(flags)
    env["OPWEAVE_FLAGS"] = f"compiledir={tmp}/opweave"
    env["NUMBA_CACHE_DIR"] = f"{tmp}/numba"
    return env


def one_run(names: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Each back end from empty caches; then opweave's and the baseline's
    per-call figures again, paired in one process (their caches warm)."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    for graph in GRAPHS:
        with contextlib.ExitStack() as stack:
            dirs = {}
            for backend in names:
                dirs[backend] = stack.enter_context(tempfile.TemporaryDirectory())
                found = run(backend, graph, "cold", environment(dirs[backend]))
                results.setdefault(graph, {})[backend] = found
            fresh: dict[str, list[float]] = {backend: [] for backend in names}
            for _ in range(FRESH_RUNS):  # the back ends in turn, as the machine's speed moves
                for backend in names:
                    found = run(backend, graph, "fresh", environment(dirs[backend]))
                    fresh[backend].append(found["fresh"])
            for backend in names:
                results[graph][backend]["fresh"] = statistics.median(fresh[backend])
            env = environment(dirs["OPWEAVE"], pytensor_dir=dirs[BASELINE])
            paired = run(f"OPWEAVE,{BASELINE}", graph, "pair", env)
            for backend, figures in paired.items():
                results[graph][backend].update(figures)
    return results


def main() -> None:
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 1
    names = backends()
    runs = [one_run(names) for _ in range(repeat)]
    table = {}
    print(f"{'':12}" + "".join(f"{b.lower():>14}" for b in names) + "   opweave/c")
    for graph in GRAPHS:
        for figure in FIGURES:
            medians = {b: statistics.median(r[graph][b][figure] for r in runs) for b in names}
            table[f"{graph}/{figure}"] = medians
            ratio = medians["OPWEAVE"] / medians[BASELINE]
            cells = "".join(f"{medians[b] * 1e3:11.3f} ms" for b in names)
            print(f"{graph:5} {figure:7}{cells}   {ratio:9.3f}")
        values = {b: runs[0][graph][b]["value"] for b in names}
        nodes = {b: runs[0][graph][b]["nodes"] for b in names}
        print(f"{graph:5} first output sum: {values}; nodes: {nodes}")
    print(f"load average: {os.getloadavg()}")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as out:
            json.dump({"runs": runs, "medians": table, "when": time.time()}, out, indent=1)


if __name__ == "__main__":
    main()

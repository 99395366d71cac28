"""PyMC models on opweave, PyTensor's C back end and Numba (issue 37; not a
test).

Models: benchmarks/pymc_gallery.py (hierarchical, regression, time series,
a mixture, a multivariate normal with an LKJ prior, a GP). Back ends, in the
same run: "OPWEAVE" (opweave.pytensor.use()), "CVM" (PyTensor's C back end,
PyMC's backend="c") and "NUMBA" (PyTensor 3.3's default). Figures, per model
and back end:

- call: µs per call of ``model.logp_dlogp_function(ravel_inputs=True)`` at
  the initial point, the three back ends' functions alternating in one
  process (so that load hits them alike), median of --batches batches;
- cold: a fresh process with every back end's caches empty (opweave's
  compile dir, PyTensor's compiledir and Numba's cache): seconds from the
  start of the script to the first value, imports included;
- warm: the same in a fresh process whose caches the cold run filled.

Each start figure is the median of --repeat interleaved runs. With
--fastmath, opweave's figures are taken with cmodule__fastmath.
Usage: python benchmarks/bench_pymc.py [MODEL ...] [--batches N] [--repeat N]
       [--skip-starts] [--skip-calls] [--fastmath] [--json PATH]
Run it with a Python that has PyMC, PyTensor and opweave (Python >= 3.12).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pymc_gallery import MODELS

BACKENDS = ("OPWEAVE", "CVM", "NUMBA")


def environment(caches: Path, flags: str = "") -> dict[str, str]:
    """The environment of a worker whose back ends cache below ``caches``."""
    return dict(
        os.environ,
        OPWEAVE_FLAGS=",".join(filter(None, [f"compiledir={caches / 'opweave'}", flags])),
        PYTENSOR_FLAGS=f"base_compiledir={caches / 'pytensor'}",
        NUMBA_CACHE_DIR=str(caches / "numba"),
    )


def sampler_function(model_name: str, backend: str, switch: bool = False):
    """The model's logp and gradient function under ``backend``, and its
    initial point as one array; ``switch``: opweave.pytensor.use() first."""
    import pymc as pm
    from pymc.blocking import DictToArrayBijection

    import opweave.pytensor

    if switch:
        opweave.pytensor.use()
    model = MODELS[model_name](pm)
    f = model.logp_dlogp_function(ravel_inputs=True, mode=backend)
    f.set_extra_values({})
    point = model.initial_point()
    array = DictToArrayBijection.map({v.name: point[v.name] for v in model.value_vars}).data
    return f, array


def start_worker(model_name: str, backend: str, began: float) -> None:
    """Prints the seconds to the first value of the model's function."""
    f, array = sampler_function(model_name, backend, switch=backend == "OPWEAVE")
    assert f(array) is not None
    print(json.dumps({"seconds": time.perf_counter() - began}))


def calls_worker(model_name: str, batches: int) -> None:
    """Prints µs per call of each back end's function, alternating."""
    import numpy as np

    functions = {}
    for backend in BACKENDS:
        try:
            functions[backend] = sampler_function(model_name, backend)
        except Exception as error:  # a back end that cannot build this model
            print(f"{backend}: {type(error).__name__}: {error}", file=sys.stderr)
    values = {b: f(a) for b, (f, a) in functions.items()}
    reference = values.get("CVM")
    agree = (
        {
            b: bool(np.allclose(v[0], reference[0], rtol=1e-9) and np.allclose(v[1], reference[1]))
            for b, v in values.items()
        }
        if reference is not None
        else {}
    )
    print(json.dumps({"us": alternating_us(functions, batches), "agree": agree}))


def alternating_us(functions: dict[str, tuple], batches: int, n: int = 200) -> dict[str, float]:
    """Median µs per call of each ``(function, argument)``, the functions
    called in turn, ``n`` calls per batch (so that load hits them alike)."""
    times: dict[str, list[float]] = {b: [] for b in functions}
    for _ in range(batches):
        for backend, (f, array) in functions.items():
            start = time.perf_counter()
            for _ in range(n):
                f(array)
            times[backend].append((time.perf_counter() - start) / n * 1e6)
    return {b: statistics.median(t) for b, t in times.items()}


def run(args: list[str], env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, *args], env=env, capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        raise SystemExit(f"worker {args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_call(model_name: str, batches: int, fastmath: bool) -> dict:
    """µs per call of each back end (a worker with empty caches)."""
    with tempfile.TemporaryDirectory() as tmp:
        flags = "cmodule__fastmath=True" if fastmath else ""
        worker = ["--calls", model_name, "--batches", str(batches)]
        return run(worker, environment(Path(tmp), flags))


def starts(model_name: str, repeat: int) -> dict[str, dict[str, float]]:
    """Cold and warm seconds per back end, medians of interleaved runs."""
    cold: dict[str, list[float]] = {b: [] for b in BACKENDS}
    warm: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for _ in range(repeat):
        for backend in BACKENDS:
            with tempfile.TemporaryDirectory() as tmp:
                env = environment(Path(tmp))
                cold[backend].append(run(["--start", model_name, backend], env)["seconds"])
                warm[backend].append(run(["--start", model_name, backend], env)["seconds"])
    return {
        "cold": {b: statistics.median(v) for b, v in cold.items()},
        "warm": {b: statistics.median(v) for b, v in warm.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-starts", action="store_true")
    parser.add_argument("--skip-calls", action="store_true")
    parser.add_argument("--fastmath", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--start", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--calls", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.start:
        start_worker(*args.start, began=BEGAN)
        return
    if args.calls:
        calls_worker(args.calls, args.batches)
        return
    results = {}
    header = f"{'model':<24}"
    if not args.skip_calls:
        header += "".join(f"{b + ' µs':>14}" for b in BACKENDS)
    print(header + ("" if args.skip_starts else "   cold s (O/C/N)   warm s (O/C/N)"))
    for name in args.models:
        row, result = f"{name:<24}", {}
        if not args.skip_calls:
            result["calls"] = calls = per_call(name, args.batches, args.fastmath)
            us = calls["us"]
            row += "".join(f"{us.get(b, float('nan')):>14.1f}" for b in BACKENDS)
            row += "   agree" if all(calls["agree"].values()) else f"   DIFFER {calls['agree']}"
        if not args.skip_starts:
            result.update(starts(name, args.repeat))
            row += "   " + "/".join(f"{result['cold'][b]:.1f}" for b in BACKENDS)
            row += "   " + "/".join(f"{result['warm'][b]:.1f}" for b in BACKENDS)
        print(row, flush=True)
        results[name] = result
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


BEGAN = time.perf_counter()

if __name__ == "__main__":
    main()

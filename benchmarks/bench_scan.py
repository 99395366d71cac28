"""Scan on opweave (issue 38): µs per iteration of a 1,000-step scan, its
inner function linked by opweave (``mode="OPWEAVE"``), by PyTensor's
``cvm`` (``"CVM"``) and by Numba (``"NUMBA"``), forward and with its
gradient (not a test).

The step has ten nodes before rewriting (a matrix-vector product, tanh,
exp, log1p, sin, cos and the arithmetic between them). The functions are
called in turn, ``--calls`` calls per batch, and the median of
``--batches`` batches is printed per back end, with opweave's ratio to
``cvm``'s (the baseline, measured in the same run) and the largest
difference of its values from ``cvm``'s.

Usage: python benchmarks/bench_scan.py [--batches N] [--calls N] [--steps N]
Run it with a Python that has PyTensor and opweave (Python >= 3.12).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def step(x, w):
    import pytensor.tensor as pt

    y = pt.tanh(pt.dot(w, x)) * 0.5 + x * 0.5
    return pt.exp(-y * y) + pt.log1p(y * y) - pt.sin(y) + pt.cos(x) * 0.1


def functions(steps: int) -> dict[str, dict[str, object]]:
    """Per back end, the forward and the gradient functions."""
    import pytensor
    import pytensor.tensor as pt

    import opweave.pytensor  # noqa: F401

    x0, w = pt.dvector("x0"), pt.dmatrix("w")
    out = pytensor.scan(
        step, outputs_info=[x0], non_sequences=[w], n_steps=steps, return_updates=False
    )
    cost = out[-1].sum()
    grads = pytensor.grad(cost, [x0, w])
    made: dict[str, dict[str, object]] = {}
    for mode in ("OPWEAVE", "CVM", "NUMBA"):
        made[mode] = {
            "forward": pytensor.function([x0, w], cost, mode=mode),
            "gradient": pytensor.function([x0, w], [cost, *grads], mode=mode),
        }
    return made


def flat(values: object) -> np.ndarray:
    """A function's output, or list of outputs, as one vector."""
    parts = values if isinstance(values, list) else [values]
    return np.concatenate([np.ravel(v) for v in parts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1000)
    options = parser.parse_args()
    made = functions(options.steps)
    rng = np.random.default_rng(0)
    args = (rng.normal(size=5), rng.normal(size=(5, 5)) * 0.3)
    print("| function | opweave | cvm | Numba | opweave ÷ cvm | max abs. difference from cvm |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in ("forward", "gradient"):
        times: dict[str, list[float]] = {mode: [] for mode in made}
        for _ in range(options.batches):
            for mode, fs in made.items():
                f = fs[kind]
                start = time.perf_counter()
                for _ in range(options.calls):
                    f(*args)
                elapsed = time.perf_counter() - start
                times[mode].append(elapsed / options.calls / options.steps * 1e6)
        median = {mode: statistics.median(t) for mode, t in times.items()}
        diff = float(
            np.max(np.abs(flat(made["OPWEAVE"][kind](*args)) - flat(made["CVM"][kind](*args))))
        )
        print(
            f"| {kind} | {median['OPWEAVE']:.2f} | {median['CVM']:.2f} | {median['NUMBA']:.2f} "
            f"| {median['OPWEAVE'] / median['CVM']:.2f} | {diff:.1e} |"
        )


if __name__ == "__main__":
    main()

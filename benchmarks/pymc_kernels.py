"""What opweave's kernels for PyTensor ops that have C code
(opweave/pytensor/_elemwise_kernel.py, _dimshuffle_kernel.py,
_subtensor_kernel.py, _take_kernel.py, _join_kernel.py, _sum_kernel.py,
_inc_subtensor_kernel.py, _careduce_kernel.py) change per call (not a test).

For each model of benchmarks/pymc_gallery.py, one process builds the
sampler's logp+gradient function five times: on opweave, on opweave with
those kernels unregistered (PyTensor's own C code for the same nodes: the
baseline), on PyTensor's C back end ("CVM"), on Numba, and on Numba with
its fastmath off ("Numba strict": ``numba__fastmath=False``, IEEE
arithmetic as opweave's default); gives the largest
relative difference of each opweave function's values from the C back
end's (0 where bitwise equal; the Sum kernel is NumPy's pairwise sum, not
the C back end's in-order one); then calls the five alternately and prints
the median µs per call of --batches batches.

Usage: python benchmarks/pymc_kernels.py [MODEL ...] [--batches N]
Run it with a Python that has PyMC, PyTensor and opweave (Python >= 3.12).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_pymc import alternating_us, sampler_function
from pymc_gallery import MODELS

# The kernels measured: (module, class) of the ops they serve.
KERNEL_OPS = (
    ("pytensor.tensor.elemwise", "Elemwise"),
    ("pytensor.tensor.elemwise", "DimShuffle"),
    ("pytensor.tensor.subtensor", "Subtensor"),
    ("pytensor.tensor.subtensor", "AdvancedSubtensor"),
    ("pytensor.tensor.basic", "Join"),
    ("pytensor.tensor.math", "Sum"),
    ("pytensor.tensor.subtensor", "IncSubtensor"),
    ("pytensor.tensor.subtensor", "AdvancedIncSubtensor"),
    ("pytensor.tensor.elemwise", "CAReduce"),
    ("pytensor.tensor.math", "Prod"),
    ("pytensor.tensor.math", "Max"),
    ("pytensor.tensor.math", "Min"),
    ("pytensor.tensor.math", "All"),
    ("pytensor.tensor.math", "Any"),
)


def functions(model_name: str) -> dict[str, tuple]:
    """The model's function on each back end, the baseline included."""
    import importlib

    import pytensor

    from opweave.link.c import kernels

    built = {b: sampler_function(model_name, b) for b in ("NUMBA", "CVM", "OPWEAVE")}
    with pytensor.config.change_flags(numba__fastmath=False):
        built["NUMBA strict"] = sampler_function(model_name, "NUMBA")
    saved = kernels.registered_kernels()
    classes = [getattr(importlib.import_module(m), c) for m, c in KERNEL_OPS]
    classes = [c for c in classes if c in saved]
    for op_class in classes:
        kernels.unregister_kernel(op_class)
    try:
        built["OPWEAVE without kernels"] = sampler_function(model_name, "OPWEAVE")
    finally:
        for op_class in classes:
            if op_class in saved:
                kernels.register_kernel(op_class, saved[op_class])
    return built


def relative_difference(got: tuple, expected: tuple) -> float:
    """The largest ``|g - e| / |e|`` over the log-density and gradient
    (0 where they are bitwise equal)."""
    import numpy as np

    worst = 0.0
    for g, e in zip(got, expected, strict=True):
        g, e = np.asarray(g, dtype="float64"), np.asarray(e, dtype="float64")
        if g.tobytes() != e.tobytes():
            scale = np.maximum(np.abs(e), np.finfo("float64").tiny)
            worst = max(worst, float(np.max(np.abs(g - e) / scale)))
    return worst


def measure(model_name: str, batches: int) -> None:
    """Prints the model's line: µs per call, ratios to Numba, agreement."""
    built = functions(model_name)
    values = {b: f(a) for b, (f, a) in built.items()}
    differences = " / ".join(
        f"{relative_difference(values[b], values['CVM']):.1e}"
        for b in ("OPWEAVE", "OPWEAVE without kernels")
    )
    us = alternating_us(built, batches)
    cells = " | ".join(f"{us[b]:.1f}" for b in built)
    ratios = (
        " / ".join(f"{us['OPWEAVE'] / us[b]:.2f}" for b in ("NUMBA", "NUMBA strict"))
        + f" / {us['OPWEAVE without kernels'] / us['NUMBA']:.2f}"
    )
    print(f"| {model_name} | {cells} | {ratios} | {differences} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--batches", type=int, default=15)
    args = parser.parse_args()
    print(
        "| model | Numba | CVM | opweave | Numba strict | opweave without kernels | "
        "opweave ÷ Numba / ÷ Numba strict / without kernels ÷ Numba | "
        "rel. difference from CVM: opweave / without |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.models:
        measure(name, args.batches)


if __name__ == "__main__":
    main()

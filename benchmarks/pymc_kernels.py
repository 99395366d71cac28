"""What opweave's kernels for PyTensor ops that have C code
(opweave/pytensor/_elemwise_kernel.py, _dimshuffle_kernel.py,
_subtensor_kernel.py, _take_kernel.py, _join_kernel.py) change per call
(not a test).

For each model of benchmarks/pymc_gallery.py, one process builds the
sampler's logp+gradient function four times: on opweave, on opweave with
those kernels unregistered (PyTensor's own C code for the same nodes: the
baseline), on PyTensor's C back end ("CVM") and on Numba; checks that both
opweave functions give the C back end's values bitwise; then calls the four
alternately and prints the median µs per call of --batches batches.

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
)


def functions(model_name: str) -> dict[str, tuple]:
    """The model's function on each back end, the baseline included."""
    import importlib

    from opweave.link.c import kernels

    built = {b: sampler_function(model_name, b) for b in ("NUMBA", "CVM", "OPWEAVE")}
    saved = kernels.registered_kernels()
    classes = [getattr(importlib.import_module(m), c) for m, c in KERNEL_OPS]
    for op_class in classes:
        kernels.unregister_kernel(op_class)
    try:
        built["OPWEAVE without kernels"] = sampler_function(model_name, "OPWEAVE")
    finally:
        for op_class in classes:
            if op_class in saved:
                kernels.register_kernel(op_class, saved[op_class])
    return built


def measure(model_name: str, batches: int) -> None:
    """Prints the model's line: µs per call, ratios to Numba, agreement."""
    import numpy as np

    built = functions(model_name)
    values = {b: f(a) for b, (f, a) in built.items()}
    reference = values["CVM"]
    bitwise = all(
        np.array_equal(values[b][0], reference[0]) and np.array_equal(values[b][1], reference[1])
        for b in ("OPWEAVE", "OPWEAVE without kernels")
    )
    us = alternating_us(built, batches)
    cells = " | ".join(f"{us[b]:.1f}" for b in built)
    ratios = " / ".join(
        f"{us[b] / us['NUMBA']:.2f}" for b in ("OPWEAVE", "OPWEAVE without kernels")
    )
    print(f"| {model_name} | {cells} | {ratios} | {'yes' if bitwise else 'NO'} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--batches", type=int, default=15)
    args = parser.parse_args()
    print(
        "| model | Numba | CVM | opweave | opweave without kernels | "
        "÷ Numba: opweave / without | bitwise = CVM |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in args.models:
        measure(name, args.batches)


if __name__ == "__main__":
    main()

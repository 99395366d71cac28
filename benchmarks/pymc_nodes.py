"""Where opweave's time per call goes in the PyMC models of
benchmarks/pymc_gallery.py (issue 37; not a test).

For each model, the sampler's function (``model.logp_dlogp_function``,
rewritten for "OPWEAVE") is decomposed by node: each node of the rewritten
graph is linked alone by opweave (no rewrites), given the values it sees in
the model at the initial point, and timed through its ``vm()`` (the call in
C, no Python wrapper), less the time of an empty call (a one-node scalar
graph). The nodes' times are attributed to:

- call: the empty call, once per call of the whole graph;
- alloc/views: DimShuffle, Join, Reshape, Alloc, shapes and other nodes
  that make arrays or views without arithmetic;
- indexing: basic and advanced subtensors and their increments;
- BLAS: dot products and matrix products (Dot, Gemv, Gemm, Ger);
- elementwise: Elemwise nodes (Composite loops included);
- reductions: CAReduce (Sum, Max, ...);
- linalg/other: everything else with C code (solvers, ...);
- Python: nodes that opweave runs through their ``perform`` (no usable C
  code), whatever their kind.

The whole graph's ``vm()`` time (opweave's and Numba's, in one process,
alternating) is shown beside the sum of the nodes. Usage:
    python benchmarks/pymc_nodes.py [MODEL ...] [--json PATH] [--nodes]
with a Python that has PyMC, PyTensor and opweave (Python >= 3.12).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_pymc import sampler_function
from pymc_gallery import MODELS

CATEGORIES = (
    "call",
    "alloc/views",
    "indexing",
    "BLAS",
    "elementwise",
    "reductions",
    "linalg/other",
    "Python",
)

_KINDS = {
    "alloc/views": (
        "DimShuffle",
        "ExpandDims",
        "Join",
        "Reshape",
        "Alloc",
        "AllocEmpty",
        "Shape",
        "Shape_i",
        "SpecifyShape",
        "MakeVector",
        "TensorFromScalar",
        "ScalarFromTensor",
        "Split",
        "Transpose",
        "DeepCopyOp",
        "OutputGuard",
        "ViewOp",
    ),
    "indexing": (
        "Subtensor",
        "IncSubtensor",
        "AdvancedSubtensor",
        "AdvancedSubtensor1",
        "AdvancedIncSubtensor",
        "AdvancedIncSubtensor1",
    ),
    "BLAS": ("Dot", "Dot22", "Dot22Scalar", "Gemv", "Gemm", "Ger", "CGemv", "CGer", "BatchedDot"),
    "elementwise": ("Elemwise",),
    "reductions": ("CAReduce", "Sum", "Prod", "Max", "Min", "All", "Any", "Argmax", "MaxAndArgmax"),
}


def kind(op: Any) -> str:
    """The category of ``op`` (by its class and bases)."""
    names = {cls.__name__ for cls in type(op).__mro__}
    for category, classes in _KINDS.items():
        if names & set(classes):
            return category
    return "linalg/other"


def per_call_us(call: Callable[[], Any], n: int = 300, batches: int = 9) -> float:
    """Median µs per ``call()`` over ``batches`` batches of ``n``."""
    for _ in range(20):
        call()
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(n):
            call()
        times.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(times)


def runs_in_python(f: Any) -> bool:
    """Whether the one-node function ``f`` runs its node's ``perform``."""
    outcomes = getattr(f.vm.function, "node_outcomes", None)
    return outcomes is not None and None in outcomes


def bound(f: Any, values: list[Any]) -> Callable[[], Any]:
    """``f.vm`` with ``values`` in its input cells (arrays copied)."""
    import numpy as np

    for container, value in zip(f.input_storage, values, strict=True):
        container.storage[0] = np.copy(value) if isinstance(value, np.ndarray) else value
    return f.vm


def model_function(name: str, mode: str) -> tuple[Any, Any]:
    """The model's pytensor function under ``mode`` and its initial point."""
    f, array = sampler_function(name, mode)
    return f._pytensor_function, array


def decompose(name: str, show_nodes: bool) -> dict[str, Any]:
    """The model's per-node times by category, and whole-call times."""
    import numpy as np
    import pytensor
    import pytensor.tensor as pt
    from pytensor.compile.mode import Mode, get_mode
    from pytensor.graph.basic import Constant

    import opweave.pytensor  # noqa: F401  (registers "OPWEAVE")

    fn, point = model_function(name, "OPWEAVE")
    graph = fn.maker.fgraph
    plain = Mode(linker=get_mode("OPWEAVE").linker, optimizer=None)
    variables = [v for node in graph.toposort() for v in node.outputs]
    evaluate = pytensor.function(
        graph.inputs, variables, mode=Mode(linker="py", optimizer=None), accept_inplace=True
    )
    values = dict(zip(variables, evaluate(point), strict=True))
    values[graph.inputs[0]] = point
    x = pt.dscalar()
    empty = pytensor.function([x], x + 1, mode=plain)
    call = per_call_us(bound(empty, [np.array(1.0)]))
    totals: Counter[str] = Counter({"call": call})
    for node in graph.toposort():
        fresh = [v if isinstance(v, Constant) else v.type() for v in node.inputs]
        alone = node.clone_with_new_inputs(fresh)
        free = [v for v in fresh if not isinstance(v, Constant)]
        args = [values[v] for v, f in zip(node.inputs, fresh, strict=True) if f in free]
        f = pytensor.function(free, alone.outputs, mode=plain, accept_inplace=True)
        us = per_call_us(bound(f, args)) - call
        category = "Python" if runs_in_python(f) else kind(node.op)
        totals[category] += us
        if show_nodes:
            shapes = [getattr(values.get(v), "shape", None) for v in node.inputs]
            print(f"  {category:13} {us:7.2f} µs  {str(node.op)[:48]:48} {shapes}")
    whole = {"OPWEAVE": bound(fn, [point])}
    numba, numba_point = model_function(name, "NUMBA")
    whole["NUMBA"] = bound(numba, [numba_point])
    rounds: dict[str, list[float]] = {b: [] for b in whole}
    for _ in range(5):
        for backend, run in whole.items():
            rounds[backend].append(per_call_us(run, batches=3))
    return {
        "nodes": len(graph.apply_nodes),
        "by_kind": {c: round(totals[c], 2) for c in CATEGORIES},
        "sum": round(sum(totals.values()), 2),
        "whole": {b: round(statistics.median(t), 2) for b, t in rounds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--nodes", action="store_true", help="print every node's time")
    parser.add_argument("--json")
    args = parser.parse_args()
    header = "| model | nodes | " + " | ".join(CATEGORIES) + " | sum | whole: opweave / Numba |"
    print(header)
    print("|" + " --- |" * (len(CATEGORIES) + 4))
    results = {}
    for name in args.models:
        result = decompose(name, args.nodes)
        results[name] = result
        cells = " | ".join(f"{result['by_kind'][c]:.1f}" for c in CATEGORIES)
        whole = result["whole"]
        print(
            f"| {name} | {result['nodes']} | {cells} | {result['sum']:.1f} | "
            f"{whole['OPWEAVE']:.1f} / {whole['NUMBA']:.1f} |",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

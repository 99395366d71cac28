"""Per-call cost of opweave._core.StepRunner against one compiled module.

The graph is a chain of 10 VectorTimesScalar nodes (the tutorial's COp) on a
length-10 float64 vector. It runs:
- as one module: ``opweave.function([x, y], z, mode="C")``, plain and with
  ``trust_input``;
- as a StepRunner over 10 steps, each a compiled single-node graph module
  (one module, 10 instances), the intermediates kept and offered as storage
  (what the per-node linker will do); through ``__call__`` and ``call_exact``;
- as a Python loop over 10 single-node functions (``trust_input``), for scale;
- as an empty StepRunner (no steps, its argument returned): the runner's own
  per-call overhead.

Each figure is the median, over 7 repeats, of a timeit loop's time per call.
Modules are compiled into a fresh temporary compile dir unless --compiledir
names one. Usage: python benchmarks/bench_step_runner.py [--compiledir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import timeit
from typing import Any

import numpy as np
from opweave.examples.vector_times_scalar import VectorTimesScalar

import opweave
from opweave._core import StepRunner
from opweave.graph.fg import FunctionGraph
from opweave.link.c.basic import CLinker
from opweave.tensor import dscalar, dvector

N_STEPS = 10
REPEAT = 7


def per_call_ns(statement: str, names: dict[str, Any]) -> float:
    """The median over REPEAT timeit loops of the nanoseconds of one run of
    ``statement`` (one call, without a lambda's own cost)."""
    timer = timeit.Timer(statement, globals=names)
    number, _ = timer.autorange()
    return statistics.median(t / number for t in timer.repeat(REPEAT, number)) * 1e9


def chain_runner() -> tuple[StepRunner, list[tuple[Any, ...]]]:
    """Slots: 0 x, 1 y, 2 + k the output of node k; 2..10 kept and offered."""
    a, y = dvector("a"), dscalar("y")
    node = CLinker().accept(FunctionGraph([a, y], [VectorTimesScalar()(a, y)])).compile()
    steps = [
        (0, node.module.abi, node.module, node.orphans, [k + 1 if k else 0, 1], [k + 2], [True])
        for k in range(N_STEPS)
    ]
    last = N_STEPS + 1
    return StepRunner(2, N_STEPS + 2, steps, [last], keep=list(range(2, last))), steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiledir", help="compile dir (default: a fresh temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        with opweave.config.change_flags(compiledir=args.compiledir or scratch):
            x, y = dvector("x"), dscalar("y")
            z = x
            for _ in range(N_STEPS):
                z = VectorTimesScalar()(z, y)
            whole = opweave.function([x, y], z, mode="C")
            single = opweave.function([x, y], VectorTimesScalar()(x, y), mode="C")
            runner, runner_steps = chain_runner()
    single.trust_input = True
    x_value, y_value = np.linspace(0.0, 1.0, 10), np.array(1.5)
    expected = whole(x_value, y_value)
    np.testing.assert_allclose(runner(x_value, y_value), expected)

    def python_loop() -> Any:
        value = x_value
        for _ in range(N_STEPS):
            value = single(value, y_value)
        return value

    np.testing.assert_allclose(python_loop(), expected)
    names = {
        "whole": whole,
        "runner": runner,
        "one_step": StepRunner(2, 3, runner_steps[:1], [2], keep=[]),
        "single": single,
        "python_loop": python_loop,
        "empty": StepRunner(1, 1, [], [0]),
        "x": x_value,
        "y": y_value,
    }
    rows = [("one module, opweave.function(mode='C')", per_call_ns("whole(x, y)", names))]
    whole.trust_input = True
    rows += [
        ("one module, trust_input", per_call_ns("whole(x, y)", names)),
        ("StepRunner, 10 compiled steps", per_call_ns("runner(x, y)", names)),
        ("StepRunner.call_exact, 10 steps", per_call_ns("runner.call_exact(x, y)", names)),
        ("Python loop over 10 functions", per_call_ns("python_loop()", names)),
        ("one node: Function.call_exact", per_call_ns("single.call_exact(x, y)", names)),
        (
            "one node: StepRunner.call_exact, 1 step",
            per_call_ns("one_step.call_exact(x, y)", names),
        ),
        ("StepRunner, no steps", per_call_ns("empty(x)", names)),
        ("baseline: id(x)", per_call_ns("id(x)", names)),
    ]
    print(f"per-call median of {REPEAT} (ns), a chain of {N_STEPS} VectorTimesScalar nodes:")
    for label, nanoseconds in rows:
        print(f"  {label:42s} {nanoseconds:9.0f}")


if __name__ == "__main__":
    main()

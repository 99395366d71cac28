"""Kernels in graphs linked node by node (a node runs in Python): every
node's code is exported by the region modules that compiled it (where no
node adds a library or flag to them), so the next
graph with those nodes, in this process or a fresh one, compiles and links
no region (issue 37: gp's and lkj's warm starts). A preprocessor line in a
module stops it exporting its other nodes (link/c/_export_context.py): the
kernels' code has none, and the Elemwise kernel expands PyTensor's in-place
alias macros."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import get_mode  # noqa: E402
from pytensor.graph.basic import Apply  # noqa: E402
from pytensor.graph.op import Op  # noqa: E402

import opweave  # noqa: E402
import opweave.pytensor  # noqa: E402
from opweave.link.c._export_lookup import load_exports  # noqa: E402
from opweave.link.c._regions import node_codes  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402


class Reversed(Op):
    """A vector reversed, in Python only (no C code): the graph around it is
    linked by regions."""

    __props__ = ()

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0][::-1].copy()

    def pullback(self, inputs, outputs, output_grads):
        return [self(output_grads[0])]


def model_like():
    """A gradient-like graph of the kernels' ops (views, in-place loops,
    sums, a split, increments, a join) around a node that runs in Python."""
    flat = pt.vector("flat")
    a, rest = pt.split(flat, [1, 5])
    scaled = Reversed()(pt.exp(rest * 0.5) + a[0] ** 2)
    logp = -pt.log(scaled).sum() - 0.5 * (rest**2).sum() - a[0] ** 2
    grad = pytensor.grad(logp, flat)
    return [flat], [logp, pt.inc_subtensor(grad[1:], rest), pt.set_subtensor(grad[0], logp)]


def test_every_c_node_of_a_per_node_graph_is_exported(tmp_path) -> None:
    inputs, outputs = model_like()
    with opweave.config.change_flags(compiledir=str(tmp_path)):  # regions compiled here
        f = pytensor.function(inputs, outputs, mode=get_mode("OPWEAVE"))
    nodes = f.maker.fgraph.toposort()
    codes = node_codes(nodes, {id(v) for v in f.maker.fgraph.inputs})
    assert None in codes  # Reversed runs in Python: the graph is linked by regions
    kernels = {type(code_op(n)).__name__ for n, c in zip(nodes, codes, strict=True) if c}
    assert {"ElemwiseKernel", "DimShuffleKernel", "SumKernel", "SplitKernel",
            "IncSubtensorKernel"} <= kernels  # fmt: skip
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        exported = load_exports([c.key for c in codes if c is not None])
    missing = [n for n, c in zip(nodes, codes, strict=True) if c and not exported[c.key]]
    assert missing == []


def test_the_next_equal_graph_runs_from_the_exports_with_the_same_values() -> None:
    inputs, outputs = model_like()
    first = pytensor.function(inputs, outputs, mode=get_mode("OPWEAVE"))
    inputs, outputs = model_like()
    again = pytensor.function(inputs, outputs, mode=get_mode("OPWEAVE"))
    outcomes = again.vm.function.node_outcomes
    assert None in outcomes and set(outcomes) <= {"hit", None}
    reference = pytensor.function(*model_like(), mode=get_mode("CVM"))
    value = np.array([0.3, 0.1, -0.2, 0.4, 0.0, 0.25])
    for f in (first, again):
        for got, expected in zip(f(value), reference(value), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-12)

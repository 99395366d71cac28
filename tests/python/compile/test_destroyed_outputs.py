"""Graph outputs are readers: an output that a later in-place node destroys
(it is, or views, what the node overwrites) keeps the value it had when it
was computed, in every mode and through every linker object, and no copy is
added when no destroyer reaches an output (issue 36)."""

from __future__ import annotations

import numpy as np
import pytest
from support.inplace_ops import f, g, inplace_add_one, vector, view

import opweave
from opweave.compile.ops import DeepCopyOp
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import PerformLinker
from opweave.link.c.basic import CLinker, DualLinker, OpWiseCLinker
from opweave.link.vm import VMLinker
from opweave.tensor import dvector

MODES = [None, "FAST_RUN", "py", "c", "c|py", "DebugMode"]
LINKERS = [CLinker, OpWiseCLinker, PerformLinker, lambda: VMLinker(use_cloop=True), DualLinker]

X = vector(1.0, 2.0)
MID = X + 1  # f(x)


def graphs() -> dict[str, tuple[list, list[np.ndarray]]]:
    """name -> (outputs on x, the values they must have for X)."""
    x = dvector("x")
    mid, other = f(x), g(x)
    once = inplace_add_one(mid)
    return {
        "before": ([mid, inplace_add_one(mid)], [MID, MID + 1]),
        "after": ([inplace_add_one(mid), mid], [MID + 1, MID]),
        "both sides": ([mid, once, mid], [MID, MID + 1, MID]),
        "two destroyed": (
            [mid, other, inplace_add_one(mid), inplace_add_one(other)],
            [MID, 2 * X, MID + 1, 2 * X + 1],
        ),
        "view of destroyed": ([view(mid), inplace_add_one(mid)], [MID, MID + 1]),
        "destroyed through its view": ([mid, inplace_add_one(view(mid))], [MID, MID + 1]),
        "two destroyers in a row": ([mid, once, inplace_add_one(once)], [MID, MID + 1, MID + 2]),
    }, x


CASES = list(graphs()[0])


def copies(fgraph: FunctionGraph) -> int:
    return sum(isinstance(node.op, DeepCopyOp) for node in fgraph.apply_nodes)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_an_output_keeps_its_value_when_a_later_node_destroys_it(mode, case) -> None:
    cases, x = graphs()
    outputs, expected = cases[case]
    fn = opweave.function([x], outputs, mode=mode)
    for _ in range(2):  # the second call runs on kept storage
        got = fn(X.copy())
        assert len(got) == len(expected)
        for value, want in zip(got, expected, strict=True):
            np.testing.assert_array_equal(value, want)
        assert len({id(v) for v in got}) == len(got)  # no two outputs share an array


@pytest.mark.parametrize("make", LINKERS)
@pytest.mark.parametrize("case", CASES)
def test_a_linker_object_copies_an_output_a_later_node_destroys(make, case) -> None:
    cases, x = graphs()
    outputs, expected = cases[case]
    graph = FunctionGraph([x], outputs)
    linker = make().accept(graph)
    assert linker.accept(graph) is linker  # the same graph again: the same linker
    thunk, inputs, out = linker.make_thunk()
    inputs[0].data = X.copy()
    thunk()
    for container, want in zip(out, expected, strict=True):
        np.testing.assert_array_equal(container.data, want)


@pytest.mark.parametrize(
    ("case", "count"),
    [("before", 1), ("after", 1), ("both sides", 2), ("two destroyed", 2)],
)
def test_one_copy_per_output_that_shares_destroyed_memory(case, count) -> None:
    cases, x = graphs()
    fn = opweave.function([x], cases[case][0], mode="c")
    assert copies(fn.maker.fgraph) == count


def test_no_copy_when_no_destroyer_reaches_an_output() -> None:
    x = dvector("x")
    mid = f(x)
    fn = opweave.function([x], [inplace_add_one(mid), g(x)], mode="c")
    assert copies(fn.maker.fgraph) == 0
    graph = FunctionGraph([x], [inplace_add_one(mid)])
    assert CLinker().accept(graph).bound_graph() is graph
    np.testing.assert_array_equal(fn(X.copy())[0], MID + 1)

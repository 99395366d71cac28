"""Storage between calls: a result already returned never changes. Outputs
and every intermediate they view are emptied at every call (PyTensor's
``no_recycling``), through :func:`opweave.function` and through the linker
objects; the other intermediates keep their storage."""

from __future__ import annotations

import numpy as np
import pytest
from support.inplace_ops import f, g, inplace_add_one, py_double, vector, view

import opweave
from opweave.compile.debugmode import DebugMode
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import PerformLinker
from opweave.link.c.basic import CLinker, OpWiseCLinker
from opweave.link.vm import VMLinker
from opweave.tensor import dvector

MODES = ["py", "c", "c|py", DebugMode()]
LINKERS = [CLinker, OpWiseCLinker, PerformLinker, VMLinker]


def _graphs():
    """Outputs that view (or are) storage an op would reuse at the next call."""
    x = dvector("x")
    yield "view", x, [view(f(x))]
    yield "destroyed", x, [inplace_add_one(f(x))]
    yield "two views", x, [view(f(x)), g(x)]
    yield "region", x, [view(f(py_double(x))), py_double(x)]  # c|py: a region between


# A Python-only op does not run in C mode: the "region" graph is not built there.
CASES = [
    (mode, case)
    for mode in MODES
    for case in _graphs()
    if not (case[0] == "region" and mode == "c")
]


@pytest.mark.parametrize(
    ("mode", "case"), CASES, ids=lambda c: c[0] if isinstance(c, tuple) else str(c)
)
def test_a_returned_result_never_changes(mode, case) -> None:
    _, x, outputs = case
    fn = opweave.function([x], outputs, mode=mode)
    first = fn(vector(1, 2))
    kept = [np.array(r) for r in first]
    second = fn(vector(10, 20))
    for old, copy in zip(first, kept, strict=True):
        np.testing.assert_array_equal(old, copy)
    assert not np.array_equal(second[0], first[0])


@pytest.mark.parametrize("no_recycling", [None, [], True])
@pytest.mark.parametrize("make", LINKERS)
def test_linker_objects_never_change_a_returned_result(make, no_recycling) -> None:
    for label, x, outputs in _graphs():
        if label == "region" and make is CLinker:
            continue  # a Python-only op does not run in the whole-graph linker
        linker = make().accept(FunctionGraph([x], outputs), no_recycling=no_recycling)
        thunk, inputs, containers = linker.make_thunk()
        inputs[0].data = vector(1, 2)
        thunk()
        first = [c.data for c in containers]
        kept = [np.array(r) for r in first]
        inputs[0].data = vector(10, 20)
        thunk()
        for old, copy, container in zip(first, kept, containers, strict=True):
            np.testing.assert_array_equal(old, copy)
            assert container.data is not old


def test_the_module_empties_only_no_recycling_cells_at_every_call() -> None:
    x = dvector("x")
    kept, returned = f(x), f(x)
    seen = view(returned)
    graph = FunctionGraph([x], [g(kept), seen])
    spec = CLinker().accept(graph).graph_spec().spec
    run = [step.run for step in spec.run_steps]
    init = [step.run for step in spec.init_steps]
    # One intermediate is viewed by an output: emptied (and dropped) at every
    # call, before the nodes run; the other keeps its storage (emptied once).
    assert sum(name.startswith("empty_") for name in run) == 1
    assert sum(name.startswith("empty_") for name in init) == 1
    first_node = next(k for k, name in enumerate(run) if name.startswith(("node_", "call_")))
    assert max(k for k, name in enumerate(run) if name.startswith("empty_")) < first_node
    assert all(step.undo.startswith("drop_") for step in spec.run_steps if "empty_" in step.run)
    # Asking for every variable empties both.
    spec = CLinker().accept(graph, no_recycling=True).graph_spec().spec
    assert sum(step.run.startswith("empty_") for step in spec.run_steps) == 2


def test_an_intermediate_nobody_returns_keeps_its_storage() -> None:
    x = dvector("x")
    mid = f(x)
    fn = opweave.function([x], g(mid), mode="c")
    np.testing.assert_array_equal(fn(vector(1, 2)), [4, 6])
    np.testing.assert_array_equal(fn(vector(0, 0)), [2, 2])
    assert [type(n.op).__name__ for n in fn.fgraph.toposort()] == ["Affine", "Affine"]


def test_offered_storage_is_an_output_cell_and_a_returned_view_stays() -> None:
    """ABI v2: storage offered for an output is that output's own cell,
    never an intermediate's; a view returned earlier does not change."""
    x = dvector("x")
    linker = CLinker().accept(FunctionGraph([x], [view(f(x)), g(x)]))
    fn = linker.make_thunk()[0].function
    first = fn(vector(1, 2))
    offered = [np.zeros(2), np.zeros(2)]
    second = fn.call_with_outputs([vector(5, 6)], offered)
    np.testing.assert_array_equal(first[0], [2, 3])
    np.testing.assert_array_equal(second[0], [6, 7])
    np.testing.assert_array_equal(second[1], [10, 12])
    assert second[1] is offered[1]  # g wrote into the storage it was offered
    np.testing.assert_array_equal(first[0], [2, 3])

"""Destroy orderings: a destroyed variable (and every view of it) is read by
every other node first, in every mode and linker; two destroyers, a cycle
or a schedule that breaks an ordering raise; a node never destroys the
caller's array unless the input is ``In(mutable=True)``."""

from __future__ import annotations

import numpy as np
import pytest
from support.inplace_ops import f, g, h, inplace_add_one, py_double, vector, view

import opweave
from opweave.compile.debugmode import DebugMode
from opweave.compile.io import In
from opweave.compile.sharedvalue import shared
from opweave.graph.basic import Constant
from opweave.graph.destroy import (
    InconsistencyError,
    infer_reuse_pattern,
    no_recycling_of,
    order_nodes,
)
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import PerformLinker
from opweave.link.c.basic import CLinker, OpWiseCLinker
from opweave.link.vm import VMLinker
from opweave.tensor import dvector

MODES = ["py", "c", "c|py"]
LINKERS = [CLinker, OpWiseCLinker, PerformLinker, VMLinker]


def _mid_a_b():
    x = dvector("x")
    mid = f(x)
    return x, mid, inplace_add_one(mid), g(mid)


def _run(linker, *values):
    thunk, inputs, outputs = linker.make_thunk()
    for container, value in zip(inputs, values, strict=True):
        container.data = value
    thunk()
    return [c.data for c in outputs]


# --- the ordering -------------------------------------------------------------


def test_a_destroyer_runs_after_every_other_reader() -> None:
    x, _, a, b = _mid_a_b()
    nodes = FunctionGraph([x], [a, b]).toposort()
    assert nodes.index(b.owner) < nodes.index(a.owner)  # io_toposort would put a first


def test_readers_of_views_run_first_too() -> None:
    x = dvector("x")
    mid = f(x)
    seen = view(mid)
    a, b = inplace_add_one(mid), g(seen)
    nodes = FunctionGraph([x], [a, b]).toposort()
    assert nodes.index(b.owner) < nodes.index(a.owner)


@pytest.mark.parametrize("mode", [*MODES, DebugMode()])
def test_mid_a_b_is_right_in_every_mode(mode) -> None:
    x, _, a, b = _mid_a_b()
    fn = opweave.function([x], [a, b], mode=mode)
    result_a, result_b = fn(vector(1, 2))
    np.testing.assert_array_equal(result_a, [3, 4])  # (x + 1) + 1
    np.testing.assert_array_equal(result_b, [4, 6])  # (x + 1) * 2, before the destroy


def test_mid_a_b_is_right_through_a_view_and_across_regions() -> None:
    x = dvector("x")
    mid = py_double(x)  # Python: the C nodes after it are a region of their own
    a, b, c = inplace_add_one(view(mid)), g(mid), h(py_double(mid))
    for mode in ("py", "c|py"):
        result = opweave.function([x], [a, b, c], mode=mode)(vector(1, 2))
        np.testing.assert_array_equal(result[0], [3, 5])
        np.testing.assert_array_equal(result[1], [4, 8])
        np.testing.assert_array_equal(result[2], [12, 24])


@pytest.mark.parametrize("make", LINKERS)
def test_linker_objects_order_destroyers(make) -> None:
    x, _, a, b = _mid_a_b()
    result = _run(make().accept(FunctionGraph([x], [a, b])), vector(1, 2))
    np.testing.assert_array_equal(result[0], [3, 4])
    np.testing.assert_array_equal(result[1], [4, 6])


# --- errors -------------------------------------------------------------------


def test_two_destroyers_raise_naming_both() -> None:
    x = dvector("x")
    mid = f(x)
    first, second = inplace_add_one(mid), inplace_add_one(view(mid))
    with pytest.raises(InconsistencyError) as caught:
        FunctionGraph([x], [first, second]).toposort()
    assert set(map(id, caught.value.nodes)) == {id(first.owner), id(second.owner)}
    assert "destroyed by two nodes" in str(caught.value)
    for mode in MODES:
        with pytest.raises(InconsistencyError):
            opweave.function([x], [first, second], mode=mode)
    with pytest.raises(InconsistencyError):
        CLinker().accept(FunctionGraph([x], [first, second])).make_thunk()


def test_two_destroyers_of_an_input_raise_before_any_copy() -> None:
    x = dvector("x")
    with pytest.raises(InconsistencyError):
        opweave.function([x], [inplace_add_one(x), inplace_add_one(x)], mode="c")


def test_an_order_that_cannot_be_kept_is_a_cycle() -> None:
    x = dvector("x")
    mid = f(x)
    a = inplace_add_one(mid)
    # g reads both mid (so it must run before the destroyer) and a view of
    # the destroyer's result (so it must run after it).
    from opweave.graph.basic import Apply

    both = Apply(Joined(), [mid, a], [dvector()]).outputs[0]
    with pytest.raises(InconsistencyError) as caught:
        FunctionGraph([x], [both]).toposort()
    assert "cycle" in str(caught.value) and id(a.owner) in set(map(id, caught.value.nodes))


class Joined(opweave.Op):
    """Reads two vectors (never run)."""

    __props__ = ()

    def perform(self, node, inputs, outputs):  # pragma: no cover - never run
        outputs[0][0] = inputs[0] + inputs[1]


# --- schedules ----------------------------------------------------------------


@pytest.mark.parametrize("make", LINKERS)
def test_a_user_schedule_is_honoured_and_checked(make) -> None:
    x = dvector("x")
    one, two = f(x), h(x)
    graph = FunctionGraph([x], [one, two])
    asked: list[int] = []

    def reversed_order(fgraph):
        asked.append(1)
        return list(reversed(fgraph.toposort()))

    linker = make(schedule=reversed_order).accept(graph)
    assert linker.order() == [two.owner, one.owner] and asked
    result = _run(linker, vector(1, 2))
    np.testing.assert_array_equal(result[0], [2, 3])
    np.testing.assert_array_equal(result[1], [3, 6])

    x, _, a, b = _mid_a_b()
    bad = make(
        schedule=lambda fg: [n for n in order_nodes(fg.apply_nodes) if n is not b.owner] + [b.owner]
    )
    with pytest.raises(InconsistencyError) as caught:
        bad.accept(FunctionGraph([x], [a, b])).make_thunk()
    assert id(b.owner) in set(map(id, caught.value.nodes))


def test_a_python_schedule_runs_nodes_in_its_order() -> None:
    calls: list[str] = []

    class Recording(opweave.Op):
        __props__ = ("label",)

        def __init__(self, label):
            self.label = label

        def make_node(self, x):
            return opweave.Apply(self, [x], [dvector()])

        def perform(self, node, inputs, outputs):
            calls.append(self.label)
            outputs[0][0] = inputs[0]

    x = dvector("x")
    first, second = Recording("first")(x), Recording("second")(x)
    graph = FunctionGraph([x], [first, second])
    for make in (PerformLinker, OpWiseCLinker):
        calls.clear()
        _run(make(schedule=lambda fg: list(reversed(fg.toposort()))).accept(graph), vector(1))
        assert calls == ["second", "first"]


# --- inputs, constants and shared values are never destroyed ------------------


@pytest.mark.parametrize("mode", [*MODES, DebugMode()])
def test_an_inplace_op_on_an_input_works_on_a_copy(mode) -> None:
    x = dvector("x")
    data = vector(1, 2)
    fn = opweave.function([x], inplace_add_one(view(x)), mode=mode)
    np.testing.assert_array_equal(fn(data), [2, 3])
    np.testing.assert_array_equal(fn(data), [2, 3])
    np.testing.assert_array_equal(data, [1, 2])  # the caller's array


@pytest.mark.parametrize("mode", MODES)
def test_a_mutable_input_may_be_destroyed(mode) -> None:
    x = dvector("x")
    data = vector(1, 2)
    fn = opweave.function([In(x, mutable=True)], inplace_add_one(x), mode=mode)
    np.testing.assert_array_equal(fn(data), [2, 3])
    np.testing.assert_array_equal(data, [2, 3])  # destroyed in place, as allowed
    assert [type(n.op).__name__ for n in fn.fgraph.toposort()] == ["InplaceAddOne", "DeepCopyOp"]


@pytest.mark.parametrize("mode", MODES)
def test_constants_and_shared_values_are_never_destroyed(mode) -> None:
    k = Constant(dvector().type, vector(1, 2))
    fn = opweave.function([], inplace_add_one(k), mode=mode)
    for _ in range(3):
        np.testing.assert_array_equal(fn(), [2, 3])
    np.testing.assert_array_equal(k.data, [1, 2])
    s = shared(vector(5, 6))
    fs = opweave.function([], inplace_add_one(s), mode=mode)
    for _ in range(2):
        np.testing.assert_array_equal(fs(), [6, 7])
    np.testing.assert_array_equal(s.get_value(), [5, 6])


# --- what may not be recycled -------------------------------------------------


def test_infer_reuse_pattern_follows_views_both_ways() -> None:
    x = dvector("x")
    mid = f(x)
    seen, other, fresh = view(mid), view(mid), g(mid)
    graph = FunctionGraph([x], [seen, fresh, other])
    found = {id(v) for v in infer_reuse_pattern(graph, [seen])}
    assert found == {id(mid), id(seen), id(other)}  # the root and every view of it
    destroyed = inplace_add_one(f(x))
    graph = FunctionGraph([x], [destroyed])
    assert {id(v) for v in infer_reuse_pattern(graph, [destroyed])} == {
        id(destroyed),
        id(destroyed.owner.inputs[0]),
    }
    of_input = view(x)
    found = infer_reuse_pattern(FunctionGraph([x], [of_input]), [of_input])
    assert [id(v) for v in found] == [id(of_input)]  # the input itself is not a cell


def test_no_recycling_of_adds_what_the_caller_asks() -> None:
    x = dvector("x")
    mid = f(x)
    out = g(mid)
    graph = FunctionGraph([x], [out])
    assert [id(v) for v in no_recycling_of(graph)] == [id(out)]
    assert {id(v) for v in no_recycling_of(graph, [mid, x])} == {id(out), id(mid)}
    assert {id(v) for v in no_recycling_of(graph, True)} == {id(out), id(mid)}

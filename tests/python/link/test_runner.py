"""The step loop of ``mode="c|py"`` and ``mode="py"`` (opweave/link/runner.py):
compiled regions between Python nodes, errors from either, conversions of
arguments, and re-entrant calls."""

from __future__ import annotations

import numpy as np
import pytest
from support.layout_ops import AddScaled, Increment, chain

import opweave
from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.tensor import dvector


class PyDouble(Op):
    """z = 2 * x in Python only; raises ValueError on NaN."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        if np.isnan(inputs[0]).any():
            raise ValueError("NaN reached the Python node")
        outputs[0][0] = inputs[0] * 2


class PyRecurse(Op):
    """z = x + f(x - 1) while x > 0, where f is the function being compiled:
    each call re-enters it from inside its own loop."""

    __props__ = ()
    function = None

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        if x[0] <= 0:
            outputs[0][0] = x.copy()
        else:
            outputs[0][0] = x + type(self).function(x - 1)


def mixed_graph():
    x, y = dvector("x"), dvector("y")
    first = chain(x, [Increment()] * 3)  # a C region: nodes 0-2
    middle = PyDouble()(first)  # node 3
    last = AddScaled(3.0)(chain(middle, [Increment()] * 2), y)  # nodes 4-6
    return [x, y], [last, middle]


def test_regions_and_python_nodes_match_perform() -> None:
    inputs, outputs = mixed_graph()
    f = opweave.function(inputs, outputs, mode="c|py")
    assert f.node_outcomes[3] is None and None not in f.node_outcomes[:3] + f.node_outcomes[4:]
    expected = opweave.function(inputs, outputs, mode="py")(np.ones(2), np.full(2, 10.0))
    for got, want in zip(f(np.ones(2), np.full(2, 10.0)), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 10.0))[0], [40.0, 40.0])


def test_a_python_node_that_raises_is_named_and_the_function_still_works() -> None:
    inputs, outputs = mixed_graph()
    f = opweave.function(inputs, outputs, mode="c|py")
    with pytest.raises(ValueError, match="NaN reached") as raised:
        f(np.array([np.nan]), np.ones(1))
    assert any("node 3 (PyDouble" in note for note in raised.value.__notes__)
    np.testing.assert_array_equal(f(np.zeros(1), np.zeros(1))[1], [6.0])


def test_failing_c_code_in_a_region_names_the_node_of_the_whole_graph() -> None:
    x = dvector("x")
    limited = chain(PyDouble()(x), [Increment(), Increment(limit=5.0), Increment()])
    f = opweave.function([x], limited, mode="c|py")
    with pytest.raises(ValueError, match="above the limit") as raised:
        f(np.array([3.0]))  # node 2 sees 7
    notes = raised.value.__notes__
    assert any("node 2 (Increment{limit=5.0})" in note for note in notes)
    assert not any("raised by node 0" in note for note in notes)
    np.testing.assert_array_equal(f(np.array([1.0])), [5.0])


def test_arguments_are_bound_converted_and_checked() -> None:
    inputs, outputs = mixed_graph()
    f = opweave.function(inputs, outputs, mode="c|py")
    got = f(y=[10.0, 10.0], x=[1, 1])  # keywords, lists of ints
    np.testing.assert_array_equal(got[0], [40.0, 40.0])
    with pytest.raises(TypeError, match="input 1 \\('y'\\)"):
        f(np.ones(2), "not numbers")
    with pytest.raises(TypeError, match="takes 2 inputs"):
        f(np.ones(2))


def test_re_entrant_calls_from_a_python_node() -> None:
    x = dvector("x")
    out = Increment()(PyRecurse()(AddScaled(0.0)(x, x)))
    f = opweave.function([x], out, mode="c|py")
    PyRecurse.function = f
    try:
        # f(n) = f(n - 1) + n + 1, f(0) = 1
        np.testing.assert_array_equal(f(np.array([3.0])), [10.0])
    finally:
        PyRecurse.function = None


def test_an_input_returned_as_an_output_is_converted() -> None:
    x = dvector("x")
    f = opweave.function([x], [x, PyDouble()(x)], mode="c|py")
    same, doubled = f([1, 2])
    assert isinstance(same, np.ndarray) and same.dtype == np.float64
    np.testing.assert_array_equal(doubled, [2.0, 4.0])


class Remember(Op):
    """z = x + 1 in Python, keeping a weak reference to each z it makes."""

    __props__ = ()
    made: list = []  # noqa: RUF012  # shared by the test's instances

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        import weakref

        outputs[0][0] = inputs[0] + 1
        Remember.made.append(weakref.ref(outputs[0][0]))


class Probe(Op):
    """z = x in Python, noting whether the first value Remember made is alive."""

    __props__ = ()
    alive: list = []  # noqa: RUF012

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        Probe.alive.append(Remember.made[0]() is not None)
        outputs[0][0] = inputs[0].copy()


@pytest.mark.parametrize("allow_gc", [True, False])
def test_allow_gc_frees_an_intermediate_after_its_last_reader(allow_gc: bool) -> None:
    from opweave.compile.mode import Mode
    from opweave.link.basic import PerformLinker
    from opweave.link.c.opwise import OpWiseCLinker

    x = dvector("x")
    y = Probe()(PyDouble()(Remember()(x)))
    for linker in (PerformLinker(allow_gc=allow_gc), OpWiseCLinker(allow_gc=allow_gc)):
        Remember.made.clear()
        Probe.alive.clear()
        f = opweave.function([x], y, mode=Mode(linker=linker, optimizer=None))
        np.testing.assert_array_equal(f(np.ones(2)), [4.0, 4.0])
        assert Probe.alive == [not allow_gc]

"""An error raised by a node's code carries the node's number in the graph's
order as ``error.failed_node``, with the note naming that node, in every
mode (``py``, ``C``, ``c|py``, DebugMode) and through the linker objects."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.debug_ops import DOUBLE_REUSING, COnlyOp, DebugOp, double_perform, vector

import opweave
import opweave.tensor as pt
from opweave.compile.debugmode import DebugMode
from opweave.graph.fg import FunctionGraph

# x * 2, but a ValueError when the first element is negative.
CHECKED_DOUBLE = (
    """
if (PyArray_DIMS(%(x)s)[0] > 0 && *(double*)PyArray_GETPTR1(%(x)s, 0) < 0) {
    PyErr_SetString(PyExc_ValueError, "CheckedDouble: a negative first element");
    %(fail)s
}
"""
    + DOUBLE_REUSING
)


def _checked_double(node, inputs, outputs):
    if inputs[0].size and inputs[0][0] < 0:
        raise ValueError("CheckedDouble: a negative first element")
    outputs[0][0] = inputs[0] * 2


def _negate(node, inputs, outputs):
    outputs[0][0] = -inputs[0]


DOUBLE = DebugOp("Double", DOUBLE_REUSING, double_perform)
CHECKED = DebugOp("CheckedDouble", CHECKED_DOUBLE, _checked_double)
CHECKED_C_ONLY = COnlyOp("CheckedDoubleC", CHECKED_DOUBLE)
NEGATE_PY_ONLY = DebugOp("NegatePy", None, _negate)  # no C code: perform in c|py
CHECKED_PY_ONLY = DebugOp("CheckedDoublePy", None, _checked_double)

MODES = ["py", "C", "c|py", DebugMode()]


def _graph(checked):
    """x -> Double -> Double -> checked -> Double: the checked node is number 2
    (the graph is a chain, so its order is fixed)."""
    x = pt.dvector("x")
    return x, DOUBLE(checked(DOUBLE(DOUBLE(x))))


def _raises_at(call, number, label):
    with pytest.raises(ValueError, match="negative first element") as caught:
        call()
    error = caught.value
    assert error.failed_node == number
    assert type(error.failed_node) is int
    notes = " ".join(getattr(error, "__notes__", []))
    assert re.search(rf"node {number} \({label}\)", notes), notes
    return error


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_failed_node_in_every_mode(mode):
    x, y = _graph(CHECKED)
    f = opweave.function([x], y, mode=mode)
    np.testing.assert_array_equal(f(vector([1, 2])), [16, 32])
    _raises_at(lambda: f(vector([-1, 2])), 2, "CheckedDouble")


def test_failed_node_of_a_c_node_inside_a_c_region_after_python_nodes():
    # c|py: node 0 runs perform, nodes 1-4 are one compiled region whose node
    # 3 fails: the number is the whole graph's, not the region's.
    x = pt.dvector("x")
    y = DOUBLE(CHECKED_C_ONLY(DOUBLE(DOUBLE(NEGATE_PY_ONLY(x)))))
    f = opweave.function([x], y, mode="c|py")
    np.testing.assert_array_equal(f(vector([-1])), [16])
    _raises_at(lambda: f(vector([1])), 3, "CheckedDoubleC")


def test_failed_node_of_a_python_node_among_c_regions():
    x = pt.dvector("x")
    y = DOUBLE(CHECKED_PY_ONLY(DOUBLE(x)))
    for mode in ("c|py", "py", DebugMode()):
        f = opweave.function([x], y, mode=mode)
        np.testing.assert_array_equal(f(vector([1])), [8])
        _raises_at(lambda f=f: f(vector([-1])), 1, "CheckedDoublePy")


@pytest.mark.parametrize("linker_name", ["CLinker", "OpWiseCLinker", "PerformLinker", "VMLinker"])
def test_failed_node_through_the_linker_objects(linker_name):
    from opweave.link.basic import PerformLinker
    from opweave.link.c.basic import CLinker
    from opweave.link.c.opwise import OpWiseCLinker
    from opweave.link.vm import VMLinker

    linkers = {
        "CLinker": CLinker,
        "OpWiseCLinker": OpWiseCLinker,
        "PerformLinker": PerformLinker,
        "VMLinker": VMLinker,
    }
    x, y = _graph(CHECKED)
    thunk, inputs, outputs = linkers[linker_name]().accept(FunctionGraph([x], [y])).make_thunk()
    inputs[0].data = vector([1, 2])
    thunk()
    np.testing.assert_array_equal(outputs[0].data, [16, 32])
    inputs[0].data = vector([-1, 2])
    _raises_at(thunk, 2, "CheckedDouble")


def test_an_error_outside_any_node_has_no_failed_node():
    x, y = _graph(CHECKED)
    for mode in MODES:
        f = opweave.function([x], y, mode=mode)
        with pytest.raises(TypeError) as caught:
            f("not a vector")
        assert not hasattr(caught.value, "failed_node")

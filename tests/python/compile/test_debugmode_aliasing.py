"""DebugMode's rule for outputs that alias each other: PyTensor's
``_check_viewmap``, tested with PyTensor's own cases (its
``tests/compile/test_debugmode.py``, ``TestViewMap``) rewritten for opweave,
each with ``perform`` and with C code.

Two outputs of a node may share memory when one of them is a declared view
of an input, or when one of them is read by no other node (being returned
by the function does not count); otherwise it is a BadViewMap.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.debug_ops import ADD, DOUBLE_REUSING, DebugOp, add_perform, double_perform, vector

import opweave
import opweave.tensor as pt
from opweave.compile.debugmode import BadViewMap, DebugMode

C_ONLY = DebugMode(check_py_code=False, check_preallocated_output=["ALL"])
PY_ONLY = DebugMode(check_c_code=False, check_preallocated_output=["ALL"])
BOTH = DebugMode(check_preallocated_output=["ALL"])
MODES = [
    pytest.param(C_ONLY, id="c"),
    pytest.param(PY_ONLY, id="py"),
    pytest.param(BOTH, id="both"),
]

DOUBLE = DebugOp("Double", DOUBLE_REUSING, double_perform)
ADD_OP = DebugOp("Add", ADD, add_perform)


def _slice_c(target: str, source: str, start: str, stop: str) -> str:
    """C that sets ``target`` (an output, ``%(w)s``) to the view
    ``source[start:stop]`` (Python slice bounds; ``NULL`` for none)."""
    return f"""
{{
    PyObject* lo = {"NULL" if start == "NULL" else f"PyLong_FromLong({start})"};
    PyObject* hi = {"NULL" if stop == "NULL" else f"PyLong_FromLong({stop})"};
    PyObject* slice = PySlice_New(lo, hi, NULL);
    Py_XDECREF(lo);
    Py_XDECREF(hi);
    PyObject* view = slice ? PyObject_GetItem((PyObject*){source}, slice) : NULL;
    Py_XDECREF(slice);
    if (!view) %(fail)s
    Py_XDECREF({target});
    {target} = (PyArrayObject*)view;
}}
"""


# z = x and w = x[1:], both declared views of input 0.
VIEWS_OF_INPUT = "Py_XDECREF(%(z)s);\nPy_INCREF(%(x)s);\n%(z)s = %(x)s;\n" + _slice_c(
    "%(w)s", "%(x)s", "1", "NULL"
)

# r = 2 * x (new); z = r and w = r[1:].
TWICE_THEN_TAIL = DOUBLE_REUSING + _slice_c("%(w)s", "%(z)s", "1", "NULL")

# r = 2 * x (new); z = r[:-1] and w = r[1:]: two overlapping views.
OVERLAPPING = (
    "{\nPyArrayObject* r = NULL;\n"
    + DOUBLE_REUSING.replace("%(z)s", "r")
    + _slice_c("%(z)s", "r", "NULL", "-1")
    + _slice_c("%(w)s", "r", "1", "NULL")
    + "Py_DECREF(r);\n}\n"
)


def _views_of_input(node, inputs, outputs):
    outputs[0][0] = inputs[0]
    outputs[1][0] = inputs[0][1:]


def _twice_then_tail(node, inputs, outputs):
    r = inputs[0] * 2
    outputs[0][0] = r
    outputs[1][0] = r[1:]


def _overlapping(node, inputs, outputs):
    r = inputs[0] * 2
    outputs[0][0] = r[:-1]
    outputs[1][0] = r[1:]


def test_overlapping_is_written_correctly():
    # The C bodies' slices must hold what perform's do (both runs agree).
    op = DebugOp("Overlapping", OVERLAPPING, _overlapping, n_out=2)
    x = pt.dvector("x")
    f = opweave.function([x], op(x), mode=BOTH)
    r0, r1 = f(vector([1, 2, 3, 4]))
    np.testing.assert_array_equal(r0, [2, 4, 6])
    np.testing.assert_array_equal(r1, [4, 6, 8])


@pytest.mark.parametrize("mode", MODES)
def test_aliased_outputs_ok(mode):
    # Both outputs alias each other, and each is a declared view of input 0.
    op = DebugOp(
        "ViewsOfInput", VIEWS_OF_INPUT, _views_of_input, n_out=2, view_map={0: [0], 1: [0]}
    )
    x, y = pt.dvector("x"), pt.dvector("y")
    f = opweave.function([x], op(x), mode=mode)
    r0, r1 = f(vector([1, 2, 3, 4]))
    np.testing.assert_array_equal(r0, [1, 2, 3, 4])
    np.testing.assert_array_equal(r1, [2, 3, 4])
    # Both read later, too: still fine, they are declared views.
    first, second = op(x)
    f = opweave.function([x, y], [DOUBLE(first), ADD_OP(second, y)], mode=mode)
    r0, r1 = f(vector([1, 2, 3, 4]), vector([10, 20, 30]))
    np.testing.assert_array_equal(r0, [2, 4, 6, 8])
    np.testing.assert_array_equal(r1, [12, 23, 34])


@pytest.mark.parametrize("mode", MODES)
def test_aliased_outputs_ok_output(mode):
    # Both outputs are only returned by the function: fine.
    op = DebugOp("TwiceThenTail", TWICE_THEN_TAIL, _twice_then_tail, n_out=2)
    x = pt.dvector("x")
    f = opweave.function([x], op(x), mode=mode)
    r0, r1 = f(vector([1, 2, 3, 4]))
    np.testing.assert_array_equal(r0, [2, 4, 6, 8])
    np.testing.assert_array_equal(r1, [4, 6, 8])


@pytest.mark.parametrize("mode", MODES)
def test_aliased_outputs_ok_shadow(mode):
    # Only output 0 is read by another node; output 1 is a shadow of it.
    op = DebugOp("TwiceThenTail", TWICE_THEN_TAIL, _twice_then_tail, n_out=2)
    x = pt.dvector("x")
    f = opweave.function([x], DOUBLE(op(x)[0]), mode=mode)
    np.testing.assert_array_equal(f(vector([1, 2, 3, 4])), [4, 8, 12, 16])
    # Output 1 returned while output 0 is read: still fine.
    first, second = op(x)
    f = opweave.function([x], [DOUBLE(first), second], mode=mode)
    r0, r1 = f(vector([1, 2, 3, 4]))
    np.testing.assert_array_equal(r0, [4, 8, 12, 16])
    np.testing.assert_array_equal(r1, [4, 6, 8])


@pytest.mark.parametrize("mode", MODES)
def test_aliased_outputs_bad(mode):
    # Both outputs are read by later nodes: destroying one would change the
    # other, and no view_map can say so.
    op = DebugOp("Overlapping", OVERLAPPING, _overlapping, n_out=2)
    x = pt.dvector("x")
    first, second = op(x)
    f = opweave.function([x], ADD_OP(DOUBLE(first), DOUBLE(second)), mode=mode)
    with pytest.raises(BadViewMap) as caught:
        f(vector([1, 2, 3, 4]))
    assert caught.value.output_idx == 0 and caught.value.out_alias_idx == 1
    assert caught.value.in_alias_idx is None
    assert "Overlapping" in str(caught.value)
    # Also when one of the two is a graph output as well as read later.
    f = opweave.function([x], [first, ADD_OP(first, second)], mode=mode)
    with pytest.raises(BadViewMap):
        f(vector([1, 2, 3, 4]))


@pytest.mark.parametrize("mode", MODES)
def test_aliasing_an_input_is_checked_whoever_reads_the_output(mode):
    # The rule for outputs does not relax the rule for inputs.
    op = DebugOp("ViewsOfInputUndeclared", VIEWS_OF_INPUT, _views_of_input, n_out=2)
    x = pt.dvector("x")
    f = opweave.function([x], op(x), mode=mode)
    with pytest.raises(BadViewMap) as caught:
        f(vector([1, 2, 3]))
    assert caught.value.in_alias_idx == 0 and caught.value.out_alias_idx is None

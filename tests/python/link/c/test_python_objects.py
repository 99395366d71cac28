"""``py_<name>`` of a node's inputs (link/c/_node_code.py): before a node's
code runs, the Python object of every input its code names is valid, also
when the input is an intermediate result (PyTensor's Subtensor asserts
``py_x == (PyObject*)x``; its TensorFromScalar converts ``py_x``)."""

from __future__ import annotations

import numpy as np
import pytest
from support.layout_ops import Increment
from support.ops import SameObject

import opweave
from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.scalar.basic import get_scalar_type
from opweave.tensor import dvector

MODES = ["c", "c|py"]


class ScalarPlusOne(COp):
    """s + 1 for an int64 scalar (its C value is an npy_int64)."""

    __props__ = ()

    def make_node(self, s):
        return Apply(self, [s], [s.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.int64(inputs[0] + 1)

    def c_code(self, node, name, inp, out, sub):
        return f"{out[0]} = {inp[0]} + 1;\n"


class FromPython(COp):
    """A vector of ``n`` ones times ``n``, where ``n`` is read from the
    scalar's Python object (``PyLong_AsLongLong(py_n)``), not its C value."""

    __props__ = ()

    def make_node(self, n):
        return Apply(self, [n], [dvector().type()])

    def perform(self, node, inputs, output_storage):
        n = int(inputs[0])
        output_storage[0][0] = np.full(n, float(n))

    def c_code(self, node, name, inp, out, sub):
        (n,), (z,) = inp, out
        return f"""{{
        long long count = PyLong_AsLongLong(py_{n});
        if (count == -1 && PyErr_Occurred()) {sub["fail"]}
        if (count != (long long){n}) {{
            PyErr_SetString(PyExc_AssertionError, "py_n does not hold n");
            {sub["fail"]}
        }}
        npy_intp dims[1] = {{(npy_intp)count}};
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_EMPTY(1, dims, NPY_FLOAT64, 0);
        if (!{z}) {sub["fail"]}
        for (npy_intp i = 0; i < count; ++i) {{
            ((double*)PyArray_DATA({z}))[i] = (double)count;
        }}
        }}"""


@pytest.mark.parametrize("mode", MODES)
def test_the_python_object_of_an_intermediate_array_is_the_array(mode: str) -> None:
    x = dvector("x")
    f = opweave.function([x], SameObject()(Increment()(x)), mode=mode)
    for n in (3, 5, 3):  # a new intermediate each call
        values = np.arange(float(n))
        np.testing.assert_array_equal(f(values), (values + 1) * 2)


@pytest.mark.parametrize("mode", MODES)
def test_the_python_object_of_an_intermediate_scalar_holds_its_value(mode: str) -> None:
    s = get_scalar_type("int64")("s")  # its C value is an npy_int64, not an array
    f = opweave.function([s], FromPython()(ScalarPlusOne()(s)), mode=mode)
    for value in (2, 4, 0):
        np.testing.assert_array_equal(f(np.int64(value)), np.full(value + 1, value + 1.0))


def test_a_graph_input_keeps_its_own_object() -> None:
    x = dvector("x")
    f = opweave.function([x], SameObject()(x))
    values = np.arange(4.0)
    np.testing.assert_array_equal(f(values), values * 2)


def test_code_that_does_not_name_py_objects_does_not_sync() -> None:
    from opweave.graph.fg import FunctionGraph
    from opweave.link.c.basic import CLinker

    x = dvector("x")
    mid = Increment()(x)
    named = CLinker().accept(FunctionGraph([x], [SameObject()(mid)])).get_src_code()
    plain = CLinker().accept(FunctionGraph([x], [Increment()(mid)])).get_src_code()
    assert ".sync() != 0" in named
    assert ".sync() != 0" not in plain

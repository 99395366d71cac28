"""Small ops shared by several test modules."""

from __future__ import annotations

from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.link.c.op import COp


def copy_and_update(x: str, z: str, fail: str, update: str, ctype: str = "double") -> str:
    """C code: ``z`` = a copy of the array ``x`` (of C type ``ctype``), then
    ``update`` (a statement on ``ctype* value``, which may use ``fail``) on
    each element."""
    return f"""
    Py_XDECREF({z});
    {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
    if (!{z}) {fail}
    for (npy_intp i = 0; i < PyArray_SIZE({z}); ++i) {{
        {ctype}* value = ({ctype}*)PyArray_DATA({z}) + i;
        {update}
    }}
    """


class PyPlusOne(Op):
    """Python only (no C code): z = x + 1."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] + 1


class TwoWays(COp):
    """C computes x + 1, perform computes x + 2: the result says which ran."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] + 2

    def c_code_cache_version(self):
        return (1,)

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        return copy_and_update(x, z, sub["fail"], "*value += 1;", f"dtype_{z}")


class SameObject(COp):
    """z = x * 2, after checking that ``py_x`` is the array ``x``."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * 2

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        check = (
            f"if (py_{x} != (PyObject*){x}) {{\n"
            f'PyErr_SetString(PyExc_AssertionError, "py_x is not x");\n{sub["fail"]}\n}}\n'
        )
        return check + copy_and_update(x, z, sub["fail"], "*value *= 2;")

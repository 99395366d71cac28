"""Ops for the tests of the module layout (one struct per distinct node code,
cells, the step table): an elementwise op of any float dtype with a constant
in its C text, one that fails above a limit, and one with per-node state."""

from __future__ import annotations

import numpy as np

from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from support.ops import copy_and_update


class AddScaled(COp):
    """z = x * k + y, elementwise, for vectors of one float dtype."""

    __props__ = ("k",)

    def __init__(self, k: float = 1.0) -> None:
        self.k = k

    def make_node(self, x, y):
        return Apply(self, [x, y], [x.type()])

    def perform(self, node, inputs, output_storage):
        x, y = inputs
        output_storage[0][0] = (x * self.k + y).astype(node.outputs[0].dtype)

    def c_code(self, node, name, inp, out, sub):
        (x, y), (z,) = inp, out
        dtype = node.outputs[0].dtype
        return f"""
        if ({z} == NULL || PyArray_DIMS({z})[0] != PyArray_DIMS({x})[0]) {{
            Py_XDECREF({z});
            {z} = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS({x}), PyArray_TYPE({x}), 0);
            if (!{z}) {sub["fail"]}
        }}
        for (npy_intp i = 0; i < PyArray_DIMS({x})[0]; ++i) {{
            *(npy_{dtype}*)PyArray_GETPTR1({z}, i) =
                *(npy_{dtype}*)PyArray_GETPTR1({x}, i) * {self.k!r}
                + *(npy_{dtype}*)PyArray_GETPTR1({y}, i);
        }}
        """


class Increment(COp):
    """z = x + 1; raises ValueError (in C and in perform) when an element of x
    is above ``limit``."""

    __props__ = ("limit",)

    def __init__(self, limit: float = 1e300) -> None:
        self.limit = limit

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        if (x > self.limit).any():
            raise ValueError("above the limit")
        output_storage[0][0] = x + 1

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        error = 'PyErr_SetString(PyExc_ValueError, "above the limit");'
        check = f"if (*value > {self.limit!r}) {{ {error} {sub['fail']} }}\n*value += 1;"
        return copy_and_update(x, z, sub["fail"], check)


class Counter(COp):
    """z = x + n, where n counts this node's calls: state kept per node in
    the struct (c_support_code_struct and its init and cleanup)."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def c_support_code_struct(self, node, name):
        return f"long calls_{name};\ndouble* scratch_{name};\n"

    def c_init_code_struct(self, node, name, sub):
        return (
            f"calls_{name} = 0;\nscratch_{name} = (double*)malloc(sizeof(double));\n"
            f"if (!scratch_{name}) {{ PyErr_NoMemory(); {sub['fail']} }}\n"
        )

    def c_cleanup_code_struct(self, node, name):
        return f"free(scratch_{name});\n"

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        return f"""
        calls_{name} += 1;
        *scratch_{name} = (double)calls_{name};
        """ + copy_and_update(x, z, sub["fail"], f"*value += *scratch_{name};")


def chain(x, ops):
    """``x`` through ``ops`` in order (each op applied to the last result)."""
    y = x
    for op in ops:
        y = op(y)
    return y


def values(n: int, dtype: str = "float64", seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)

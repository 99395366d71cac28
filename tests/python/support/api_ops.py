"""Module-level ops for the tests of PyTensor's op-author and function API
(module level so that pickles, and `spawn` workers, find them by name)."""

from __future__ import annotations

import numpy as np

from opweave.compile.ops import wrap_py
from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.tensor import dmatrix, dvector


class Plus(COp):
    """z = x + y for arrays of one dtype (y may be 0-d): C through NumPy's
    PyNumber_Add, perform through numpy.add. ``wrong=True`` makes perform
    add one more (so C and Python disagree)."""

    __props__ = ("wrong",)

    def __init__(self, wrong: bool = False) -> None:
        self.wrong = wrong

    def make_node(self, x, y):
        return Apply(self, [x, y], [x.type()])

    def perform(self, node, inputs, outputs):
        x, y = inputs
        result = np.add(x, y) + (1 if self.wrong else 0)
        outputs[0][0] = np.asarray(result, dtype=node.outputs[0].type.dtype)

    def c_code(self, node, name, inp, out, sub):
        (x, y), (z,) = inp, out
        dtype = node.outputs[0].type.dtype_specs()[2]
        return f"""
        Py_XDECREF({z});
        {{
            PyObject* sum = PyNumber_Add((PyObject*){x}, (PyObject*){y});
            if (!sum) {{ {sub["fail"]} }}
            {z} = (PyArrayObject*)PyArray_FROM_OTF(sum, {dtype}, NPY_ARRAY_DEFAULT);
            Py_DECREF(sum);
            if (!{z}) {{ {sub["fail"]} }}
        }}
        """

    def c_code_cache_version(self):
        return (1,)


plus = Plus()


@wrap_py([dmatrix, dmatrix], dmatrix)
def elementwise_product(a, b):
    """A module-level Python op (picklable by reference)."""
    return a * b


@wrap_py([dvector], [dvector, dvector])
def split_signs(x):
    """Two outputs: the positive part and the negative part."""
    return np.maximum(x, 0.0), np.minimum(x, 0.0)


def call_in_worker(fn, *args):
    """Runs a (pickled) function in a worker: its result and cache outcome."""
    return fn(*args), getattr(fn, "cache_outcome", None)

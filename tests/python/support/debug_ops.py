"""Ops for DebugMode tests: one class whose C code and ``perform`` are given
per instance, so that each deliberately broken op is a few lines.

The C body is formatted with ``%(x)s`` (the first input), ``%(y)s`` (the
second, if any), ``%(z)s`` and ``%(w)s`` (the outputs) and ``%(fail)s``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.link.c.op import COp
from opweave.tensor.type import TensorType

# C that makes %(z)s a fresh float64 copy of %(x)s (reusing nothing).
FRESH_COPY = """
Py_XDECREF(%(z)s);
%(z)s = (PyArrayObject*)PyArray_FromAny((PyObject*)%(x)s, PyArray_DescrFromType(NPY_FLOAT64),
                                        0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ENSURECOPY, NULL);
if (!%(z)s) %(fail)s
"""

# C that makes %(z)s x * 2, allocating only when the offered storage does not
# fit: the correct way to reuse a preallocated output.
DOUBLE_REUSING = """
{
    npy_intp n = PyArray_DIMS(%(x)s)[0];
    if (%(z)s == NULL || PyArray_NDIM(%(z)s) != 1 || PyArray_DIMS(%(z)s)[0] != n) {
        Py_XDECREF(%(z)s);
        %(z)s = (PyArrayObject*)PyArray_EMPTY(1, &n, NPY_FLOAT64, 0);
        if (!%(z)s) %(fail)s
    }
    for (npy_intp i = 0; i < n; ++i)
        *(double*)PyArray_GETPTR1(%(z)s, i) = 2 * *(double*)PyArray_GETPTR1(%(x)s, i);
}
"""


def double_perform(node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
    outputs[0][0] = inputs[0] * 2


# C that makes %(z)s the sum of two float64 vectors of one length, %(x)s
# and %(y)s (any strides), in a new array.
ADD = """
{
    npy_intp n = PyArray_DIMS(%(x)s)[0];
    if (PyArray_DIMS(%(y)s)[0] != n) {
        PyErr_SetString(PyExc_ValueError, "Add: the vectors differ in length");
        %(fail)s
    }
    Py_XDECREF(%(z)s);
    %(z)s = (PyArrayObject*)PyArray_EMPTY(1, &n, NPY_FLOAT64, 0);
    if (!%(z)s) %(fail)s
    for (npy_intp i = 0; i < n; ++i)
        *(double*)PyArray_GETPTR1(%(z)s, i) =
            *(double*)PyArray_GETPTR1(%(x)s, i) + *(double*)PyArray_GETPTR1(%(y)s, i);
}
"""


def add_perform(node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
    if inputs[0].shape != inputs[1].shape:
        raise ValueError("Add: the vectors differ in length")
    outputs[0][0] = inputs[0] + inputs[1]


class DebugOp(COp):
    """An op on float64 arrays with the given C body and ``perform``."""

    __props__ = ("label", "body", "n_out", "out_dtype", "out_ndim")

    def __init__(
        self,
        label: str,
        body: str | None,
        perform: Callable[..., None] | None = None,
        *,
        n_out: int = 1,
        out_dtype: str = "float64",
        out_ndim: int | None = None,
        destroy_map: dict[int, list[int]] | None = None,
        view_map: dict[int, list[int]] | None = None,
    ) -> None:
        self.label, self.body, self.n_out = label, body, n_out
        self.out_dtype, self.out_ndim = out_dtype, out_ndim
        self._perform = perform
        if destroy_map:
            self.destroy_map = destroy_map
        if view_map:
            self.view_map = view_map

    def __str__(self) -> str:
        return self.label

    def make_node(self, *inputs: Any) -> Apply:
        ndim = inputs[0].type.ndim if self.out_ndim is None else self.out_ndim
        outputs = [TensorType(self.out_dtype, shape=(None,) * ndim)() for _ in range(self.n_out)]
        return Apply(self, list(inputs), outputs)

    def perform(self, node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
        if self._perform is None:
            raise NotImplementedError("no perform")
        self._perform(node, inputs, outputs)

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)

    def c_code(self, node: Any, name: str, inp: list[str], out: list[str], sub: dict) -> str:
        if self.body is None:
            raise NotImplementedError("no C code")
        names = {"x": inp[0], "y": inp[-1], "z": out[0], "w": out[-1], "fail": sub["fail"]}
        return self.body % names


def vector(values: Any) -> np.ndarray:
    return np.asarray(values, dtype="float64")


class COnlyOp(DebugOp):
    """A DebugOp with no Python implementation."""

    perform = Op.perform  # type: ignore[assignment]

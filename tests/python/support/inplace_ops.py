"""Ops on float64 vectors for the tests of destroy orderings and storage
between calls: a fresh result that reuses its output storage when it fits
(as PyTensor's ops do, so that recycled storage shows), an in-place op, a
view, and a Python-only op (to cut ``c|py`` graphs into regions)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.link.c.op import COp
from opweave.tensor import dvector

# z = x * %(scale)s + %(shift)s, into z's storage when it has the right length.
_REUSING = """
{
    npy_intp n = PyArray_DIMS(%(x)s)[0];
    if (%(z)s == NULL || PyArray_NDIM(%(z)s) != 1 || PyArray_DIMS(%(z)s)[0] != n) {
        Py_XDECREF(%(z)s);
        %(z)s = (PyArrayObject*)PyArray_EMPTY(1, &n, NPY_FLOAT64, 0);
        if (!%(z)s) %(fail)s
    }
    for (npy_intp i = 0; i < n; ++i)
        *(double*)PyArray_GETPTR1(%(z)s, i) =
            *(double*)PyArray_GETPTR1(%(x)s, i) * %(scale)s + %(shift)s;
}
"""

# z is x, incremented in place.
_IN_PLACE = """
Py_XDECREF(%(z)s);
%(z)s = %(x)s;
Py_INCREF(%(z)s);
for (npy_intp i = 0; i < PyArray_DIMS(%(x)s)[0]; ++i)
    *(double*)PyArray_GETPTR1(%(z)s, i) += 1;
"""

# z is x.
_VIEW = """
Py_XDECREF(%(z)s);
%(z)s = %(x)s;
Py_INCREF(%(z)s);
"""


class PyAffine(Op):
    """``x * scale + shift`` in Python only (no C code)."""

    __props__ = ("scale", "shift")

    def __init__(self, scale: float, shift: float) -> None:
        self.scale, self.shift = float(scale), float(shift)

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [dvector()])

    def perform(self, node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
        outputs[0][0] = inputs[0] * self.scale + self.shift


class Affine(PyAffine, COp):
    """``x * scale + shift`` in C too, a fresh result (its storage reused
    when it fits)."""

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)

    def c_code(self, node: Any, name: str, inp: list[str], out: list[str], sub: dict) -> str:
        values = {"x": inp[0], "z": out[0], "fail": sub["fail"]}
        return _REUSING % {**values, "scale": repr(self.scale), "shift": repr(self.shift)}


class InplaceAddOne(COp):
    """``x + 1``, written into ``x`` (``destroy_map = {0: [0]}``)."""

    __props__ = ()
    destroy_map = {0: [0]}  # noqa: RUF012

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [dvector()])

    def perform(self, node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
        inputs[0] += 1
        outputs[0][0] = inputs[0]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)

    def c_code(self, node: Any, name: str, inp: list[str], out: list[str], sub: dict) -> str:
        return _IN_PLACE % {"x": inp[0], "z": out[0]}


class View(COp):
    """``x`` itself (``view_map = {0: [0]}``)."""

    __props__ = ()
    view_map = {0: [0]}  # noqa: RUF012

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [dvector()])

    def perform(self, node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
        outputs[0][0] = inputs[0]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)

    def c_code(self, node: Any, name: str, inp: list[str], out: list[str], sub: dict) -> str:
        return _VIEW % {"x": inp[0], "z": out[0]}


f = Affine(1.0, 1.0)  # x + 1
g = Affine(2.0, 0.0)  # x * 2
h = Affine(3.0, 0.0)  # x * 3
inplace_add_one = InplaceAddOne()
view = View()
py_double = PyAffine(2.0, 0.0)


def vector(*values: float) -> np.ndarray:
    """A float64 vector."""
    return np.asarray(values, dtype="float64")

# mypy: disable-error-code="import-not-found"
"""``Split``: its pieces as views kept when they are the same views (see
:mod:`opweave.pytensor._views`).

A PyMC model whose random walk or time series splits a vector into its
first value and the rest does so at every call of the gradient; PyTensor's
C code makes a new ndarray per piece each time (about 0.4 µs for two
pieces). This kernel checks the split sizes as PyTensor's C does (same
messages), then leaves each piece's view in its output, kept from the last
call where it is the same view.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._views import ViewKernel, view_code

__all__ = ["SplitKernel", "split_kernel"]

_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")


class SplitKernel(ViewKernel):
    """``np.split(x, cumsum(splits[:-1]), axis)`` as views of ``x``."""

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The checks, then one view per piece."""
        x, splits = inputs
        fail, axis, count = sub["fail"], self.op.axis, self.op.len_splits
        ndim = node.inputs[0].type.ndim
        size = f"(npy_intp)*(dtype_{splits}*)PyArray_GETPTR1({splits}, %d)"
        pieces = "\n".join(
            f"""dims[{axis}] = {size % i};
{view_code(x, z, "PyArray_BYTES(" + x + ") + start * axis_stride", ndim, "dims",
           "PyArray_STRIDES(" + x + ")", fail)}
start += dims[{axis}];"""
            for i, z in enumerate(outputs)
        )  # fmt: skip
        return f"""{{
if (PyArray_NDIM({x}) != {ndim}) {{
    PyErr_Format(PyExc_ValueError, "Input to Split does not have expected ndim");
    {fail}
}}
if (PyArray_DIM({splits}, 0) != {count}) {{
    PyErr_Format(PyExc_ValueError, "Split: splits count (%d) != expected count (%d).",
                 (int)PyArray_DIM({splits}, 0), {count});
    {fail}
}}
npy_intp total = 0;
for (int i = 0; i < {count}; ++i) {{
    const npy_intp length = (npy_intp)*(dtype_{splits}*)PyArray_GETPTR1({splits}, i);
    if (length < 0) {{
        PyErr_Format(PyExc_ValueError,
                     "Split: you try to take a negative number (%ld) of elements.", (long)length);
        {fail}
    }}
    total += length;
}}
if (total != PyArray_DIM({x}, {axis})) {{
    PyErr_Format(PyExc_ValueError, "Split: the splits sums to %ld, expected %ld.", (long)total,
                 (long)PyArray_DIM({x}, {axis}));
    {fail}
}}
npy_intp dims[{ndim}];
memcpy(dims, PyArray_DIMS({x}), sizeof dims);
const npy_intp axis_stride = PyArray_STRIDE({x}, {axis});
npy_intp start = 0;
{pieces}
}}
"""


def split_kernel(node: Any) -> SplitKernel | None:
    """A SplitKernel for a ``Split`` of a tensor into at least one piece by
    integer sizes, or None (PyTensor's code runs)."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("len_splits", "axis"):
        return None
    if op.len_splits < 1 or len(node.outputs) != op.len_splits:
        return None
    x, splits = node.inputs
    if getattr(x.type, "ndim", 0) < 1 or getattr(splits.type, "ndim", None) != 1:
        return None
    if splits.type.dtype not in _INTEGERS:
        return None
    return SplitKernel(op)

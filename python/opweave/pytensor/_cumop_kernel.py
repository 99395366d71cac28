# mypy: disable-error-code="import-not-found"
"""``CumOp`` (cumsum, cumprod) of a vector: one loop.

PyTensor's C code calls NumPy's ``PyArray_CumSum``/``PyArray_CumProd``
(about 1 µs for a handful of elements, the accumulate machinery) and reads
its axis and mode from params whose ``EnumType`` support code defines a
macro (``PyInt_Check``), which stops every other node of its module from
being exported. For a vector NumPy accumulates in order, element after
element, in the input's dtype: this loop does the same, so values are
bitwise NumPy's, into last call's result when its shape and dtype fit.
Declines (PyTensor's code runs): other ndims, dtypes whose C arithmetic is
not NumPy's (integers, bool, float16, complex).
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._kernel_base import Kernel

__all__ = ["CumOpKernel", "cumop_kernel"]

# Floats only: a signed integer overflow is undefined in C (NumPy wraps).
_DTYPES = ("float64", "float32")

_LOOP = r"""
{
    const npy_intp n = PyArray_DIMS(%(x)s)[0];
    const int type_num = PyArray_TYPE(%(x)s);
    if (!(%(z)s != NULL && PyArray_NDIM(%(z)s) == 1 && PyArray_DIMS(%(z)s)[0] == n &&
          PyArray_TYPE(%(z)s) == type_num && PyArray_IS_C_CONTIGUOUS(%(z)s) &&
          PyArray_ISWRITEABLE(%(z)s) && %(z)s != %(x)s)) {
        Py_XDECREF(%(z)s);
        %(z)s = (PyArrayObject*)PyArray_EMPTY(1, (npy_intp*)&n, type_num, 0);
        if (%(z)s == NULL) {
            %(fail)s
        }
    }
    const char* const x_bytes = PyArray_BYTES(%(x)s);
    const npy_intp x_stride = PyArray_STRIDES(%(x)s)[0];
    dtype_%(z)s* const out = (dtype_%(z)s*)PyArray_DATA(%(z)s);
    dtype_%(z)s acc = 0;
    for (npy_intp i = 0; i < n; ++i) {
        const dtype_%(z)s value = *(const dtype_%(x)s*)(x_bytes + i * x_stride);
        acc = i == 0 ? value : (dtype_%(z)s)(acc %(operator)s value);
        out[i] = acc;
    }
}
"""


class CumOpKernel(Kernel):
    """``np.cumsum``/``np.cumprod`` of a vector, as a loop."""

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The running sum (or product) into the output."""
        operator = "+" if self.op.mode == "add" else "*"
        names = {"x": inputs[0], "z": outputs[0], "fail": sub["fail"], "operator": operator}
        return _LOOP % names


def cumop_kernel(node: Any) -> CumOpKernel | None:
    """A CumOpKernel for a cumsum or cumprod of a vector, or None."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("axis", "mode"):
        return None
    (x,) = node.inputs
    if x.type.ndim != 1 or op.axis != 0 or op.mode not in ("add", "mul"):
        return None
    if x.type.dtype not in _DTYPES or node.outputs[0].type.dtype != x.type.dtype:
        return None
    return CumOpKernel(op)

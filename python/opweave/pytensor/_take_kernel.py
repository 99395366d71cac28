# mypy: disable-error-code="import-not-found"
"""``x[idx]`` for a vector ``x`` and a vector of integer indices: a gather
loop.

PyTensor's C code for this ``AdvancedSubtensor`` calls NumPy's
``PyArray_TakeFrom``, which allocates a new array at every call and goes
through NumPy's generic machinery (about 1.4 µs for 900 indices; PyMC's
hierarchical models do this once per group-level parameter). This kernel
checks each index as ``np.take`` does (negative indices count from the end;
one out of bounds raises NumPy's ``IndexError``) and copies the elements
into last call's result when its shape and dtype still fit (opweave's
module keeps an intermediate result between calls; results returned to the
caller are never kept). Values are those of ``take``: element copies.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._kernel_base import Kernel

__all__ = ["TakeKernel", "take_kernel"]

# uint64 is left to NumPy: its values past the largest intp wrap when cast.
_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")

_TAKE = r"""
{
    const npy_intp n_x = PyArray_DIMS(%(x)s)[0];
    const npy_intp n_out = PyArray_DIMS(%(idx)s)[0];
    const int type_num = PyArray_TYPE(%(x)s);
    if (n_x == 0 && n_out > 0) {
        PyErr_SetString(PyExc_IndexError, "cannot do a non-empty take from an empty axes.");
        %(fail)s
    }
    if (!(%(z)s != NULL && PyArray_NDIM(%(z)s) == 1 && PyArray_DIMS(%(z)s)[0] == n_out &&
          PyArray_TYPE(%(z)s) == type_num && PyArray_IS_C_CONTIGUOUS(%(z)s) &&
          PyArray_ISWRITEABLE(%(z)s))) {
        Py_XDECREF(%(z)s);
        %(z)s = (PyArrayObject*)PyArray_EMPTY(1, (npy_intp*)&n_out, type_num, 0);
        if (%(z)s == NULL) {
            %(fail)s
        }
    }
    const char* const x_bytes = PyArray_BYTES(%(x)s);
    const npy_intp x_stride = PyArray_STRIDES(%(x)s)[0];
    const char* const idx_bytes = PyArray_BYTES(%(idx)s);
    const npy_intp idx_stride = PyArray_STRIDES(%(idx)s)[0];
    dtype_%(z)s* const out = (dtype_%(z)s*)PyArray_DATA(%(z)s);
    %(unchecked)s
    for (npy_intp k = 0; k < n_out; ++k) {
        npy_intp i = (npy_intp)*(const dtype_%(idx)s*)(idx_bytes + k * idx_stride);
        if (i < 0) {
            i += n_x;
        }
        if (i < 0 || i >= n_x) {
            PyErr_Format(PyExc_IndexError,
                         "index %%" NPY_INTP_FMT " is out of bounds for axis 0 with size %%"
                         NPY_INTP_FMT,
                         (npy_intp)*(const dtype_%(idx)s*)(idx_bytes + k * idx_stride), n_x);
            %(fail)s
        }
        out[k] = *(const dtype_%(z)s*)(x_bytes + i * x_stride);
    }
}
"""


# Constant indices, all within x's static length: no index needs a check
# while x has that length (tested once per call; PyTensor's own code trusts
# the static length without a test).
_UNCHECKED = r"""if (n_x == %(length)d) {
        for (npy_intp k = 0; k < n_out; ++k) {
            const npy_intp i = (npy_intp)*(const dtype_%(idx)s*)(idx_bytes + k * idx_stride);
            out[k] = *(const dtype_%(z)s*)(x_bytes + i * x_stride);
        }
    } else"""


class TakeKernel(Kernel):
    """``x[idx]``, vector by vector of integers, as ``np.take``; with
    ``length``, the indices are constants within ``[0, length)``, the
    static length of ``x``."""

    __props__ = ("op", "length")

    def __init__(self, op: Any, length: int | None = None) -> None:
        super().__init__(op)
        self.length = length

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The gather into the output (kept when it fits), each index
        checked unless they are known to be in bounds."""
        x, idx = inputs
        names = {"x": x, "idx": idx, "z": outputs[0], "fail": sub["fail"], "length": self.length}
        unchecked = "" if self.length is None else _UNCHECKED % names
        return _TAKE % dict(names, unchecked=unchecked)


def take_kernel(node: Any) -> TakeKernel | None:
    """A TakeKernel for ``x[idx]`` with ``x`` and ``idx`` vectors (``idx``
    of integers), or None (PyTensor's code runs)."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("idx_list",):
        return None
    idx_list = tuple(getattr(op, "idx_list", ()))
    if len(idx_list) != 1 or type(idx_list[0]) is not int or len(node.inputs) != 2:
        return None
    x, idx = node.inputs
    if getattr(x.type, "ndim", None) != 1 or getattr(idx.type, "ndim", None) != 1:
        return None
    if idx.type.dtype not in _INTEGERS or x.type.dtype in ("float16", "object"):
        return None
    if node.outputs[0].type.dtype != x.type.dtype:
        return None
    return TakeKernel(op, _static_bound(x, idx))


def _static_bound(x: Any, idx: Any) -> int | None:
    """``x``'s static length when ``idx`` is a constant whose every value
    is within it (and not negative), else None."""
    import numpy as np

    length, data = x.type.shape[0], getattr(idx, "data", None)
    if length is None or not isinstance(data, np.ndarray) or data.size == 0:
        return None
    return int(length) if 0 <= data.min() and data.max() < length else None

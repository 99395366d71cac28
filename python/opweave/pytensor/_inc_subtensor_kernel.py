# mypy: disable-error-code="import-not-found"
"""``IncSubtensor`` of a vector (``x[i] += y``, ``x[a:b] = y``, ...): a loop.

PyTensor's C code for it makes a view of the output with
``PyArray_NewFromDescr``, then adds through ``PyNumber_InPlaceAdd`` (or
copies through ``PyArray_CopyInto``): NumPy's generic machinery for one
element or a few hundred (about 1.2 µs for ``x[0] += y``, which a random
walk's gradient does once per call). This kernel takes the view's offset,
length and stride from PyTensor's own ``Subtensor.helper_c_code`` (its
checks and messages) and adds or copies in a C loop: ``t[k] = t[k] + y[k]``,
the operation NumPy's ``add`` does element by element, so values are
bitwise equal. A copy of ``x`` (when the op is not in place) goes into last
call's result when it still fits.

Where ``y`` does not have the view's length (broadcasting, or an error) or
shares memory with the output, PyTensor's path runs instead, with NumPy's
broadcasting and messages. Declines (PyTensor's C code runs): ``x`` of other
than one dimension, ``y`` of another dtype, dtypes where NumPy's ``+`` is
not C's (bool, complex, float16).
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._kernel_base import Kernel

__all__ = ["IncSubtensorKernel", "inc_subtensor_kernel"]

_VERSION = 1

_DTYPES = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
)  # fmt: skip

# The output: x itself (in place), else a copy of x in a kept or new vector.
_OUTPUT = r"""
if (%(inplace)d) {
    if (%(z)s != %(x)s) {
        Py_XDECREF(%(z)s);
        Py_INCREF(%(x)s);
        %(z)s = %(x)s;
    }
} else {
    const npy_intp length = PyArray_DIMS(%(x)s)[0];
    if (!(%(z)s != NULL && %(z)s != %(x)s && PyArray_NDIM(%(z)s) == 1 &&
          PyArray_DIMS(%(z)s)[0] == length && PyArray_TYPE(%(z)s) == PyArray_TYPE(%(x)s) &&
          PyArray_IS_C_CONTIGUOUS(%(z)s) && PyArray_ISWRITEABLE(%(z)s))) {
        Py_XDECREF(%(z)s);
        %(z)s = (PyArrayObject*)PyArray_EMPTY(1, (npy_intp*)&length, PyArray_TYPE(%(x)s), 0);
        if (%(z)s == NULL) {
            %(fail)s
        }
    }
    const npy_intp x_stride = PyArray_STRIDES(%(x)s)[0];
    if (x_stride == (npy_intp)sizeof(dtype_%(z)s) || length <= 1) {
        if (length > 0) {
            memcpy(PyArray_DATA(%(z)s), PyArray_DATA(%(x)s), (size_t)length * sizeof(dtype_%(z)s));
        }
    } else {
        dtype_%(z)s* const to = (dtype_%(z)s*)PyArray_DATA(%(z)s);
        const char* const from = PyArray_BYTES(%(x)s);
        for (npy_intp k = 0; k < length; ++k) {
            to[k] = *(const dtype_%(z)s*)(from + k * x_stride);
        }
    }
}
"""

# x[i] (+)= y: one element.
_ELEMENT = r"""
{
    dtype_%(z)s* const target = (dtype_%(z)s*)(PyArray_BYTES(%(z)s) + xview_offset);
    const dtype_%(z)s value = *(const dtype_%(z)s*)PyArray_DATA(%(y)s);
    *target = %(apply)s;
}
"""

# x[a:b:c] (+)= y: a loop where y has the slice's length and no memory in
# common with the output, else PyTensor's view and NumPy's operation.
_SLICE = r"""
{
    const npy_intp n = xview_dims[0];
    const npy_intp t_stride = xview_strides[0];
    const npy_intp y_stride = PyArray_STRIDES(%(y)s)[0];
    char* const t_bytes = PyArray_BYTES(%(z)s) + xview_offset;
    const char* const y_bytes = PyArray_BYTES(%(y)s);
    int loop = PyArray_DIMS(%(y)s)[0] == n;
    if (loop && n > 0) {
        const npy_intp item = (npy_intp)sizeof(dtype_%(z)s);
        const char* t_low = t_bytes + (t_stride < 0 ? (n - 1) * t_stride : 0);
        const char* t_high = t_bytes + (t_stride < 0 ? 0 : (n - 1) * t_stride) + item;
        const char* y_low = y_bytes + (y_stride < 0 ? (n - 1) * y_stride : 0);
        const char* y_high = y_bytes + (y_stride < 0 ? 0 : (n - 1) * y_stride) + item;
        loop = t_high <= y_low || y_high <= t_low;
    }
    if (loop) {
        for (npy_intp k = 0; k < n; ++k) {
            dtype_%(z)s* const target = (dtype_%(z)s*)(t_bytes + k * t_stride);
            const dtype_%(z)s value = *(const dtype_%(z)s*)(y_bytes + k * y_stride);
            *target = %(apply)s;
        }
    } else {
        Py_INCREF(PyArray_DESCR(%(z)s));
        PyArrayObject* zview = (PyArrayObject*)PyArray_NewFromDescr(
            &PyArray_Type, PyArray_DESCR(%(z)s), 1, xview_dims, xview_strides, t_bytes,
            PyArray_FLAGS(%(z)s), NULL);
        if (zview == NULL) {
            %(fail)s
        }
        int failed;
        if (%(set)d) {
            failed = PyArray_CopyInto(zview, %(y)s) != 0;
        } else {
            PyObject* added = PyNumber_InPlaceAdd((PyObject*)zview, (PyObject*)%(y)s);
            failed = added == NULL;
            Py_XDECREF(added);
        }
        Py_DECREF(zview);
        if (failed) {
            %(fail)s
        }
    }
}
"""


class IncSubtensorKernel(Kernel):
    """``x[idx] += y`` or ``x[idx] = y`` for a vector ``x`` and one integer
    or slice index, in a C loop."""

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """The kernel's version and that of PyTensor's view arithmetic."""
        from pytensor.tensor.subtensor import Subtensor

        helper = Subtensor.helper_c_code_cache_version()
        return (_VERSION, helper) if helper else ()

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The output, the view's geometry (PyTensor's), then the loop."""
        from pytensor.tensor.subtensor import Subtensor

        op, (z,) = self.op, outputs
        x, y = inputs[:2]
        view_ndim = node.outputs[0].type.ndim - sum(not isinstance(i, slice) for i in op.idx_list)
        geometry = Subtensor.helper_c_code(
            node=node, name=name, inputs=outputs[:1] + inputs[2:], outputs=outputs,
            sub=sub, idx_list=op.idx_list, view_ndim=view_ndim,
            **Subtensor.default_helper_c_code_args(),
        )  # fmt: skip
        names = {
            "x": x, "y": y, "z": z, "fail": sub["fail"], "inplace": int(op.inplace),
            "set": int(op.set_instead_of_inc),
            "apply": "value" if op.set_instead_of_inc else "*target + value",
        }  # fmt: skip
        body = (_ELEMENT if view_ndim == 0 else _SLICE) % names
        return f"""
if (PyArray_NDIM({x}) != 1) {{
    PyErr_SetString(PyExc_ValueError, "Expected 1 dimension input");
    {sub["fail"]}
}}
{_OUTPUT % names}
{{
{geometry}
{body}
}}
"""


def inc_subtensor_kernel(node: Any) -> IncSubtensorKernel | None:
    """An IncSubtensorKernel for a vector ``x``, one integer or slice index
    and a ``y`` of ``x``'s dtype with the view's dimensions, or None
    (PyTensor's code runs)."""
    op = node.op
    props = ("idx_list", "inplace", "set_instead_of_inc", "destroyhandler_tolerate_aliased")
    if tuple(getattr(type(op), "__props__", ())) != props:
        return None
    idx_list = tuple(op.idx_list)
    if len(idx_list) != 1:
        return None
    x, y = node.inputs[:2]
    if getattr(x.type, "ndim", None) != 1 or x.type.dtype not in _DTYPES:
        return None
    if getattr(y.type, "dtype", None) != x.type.dtype or node.outputs[0].type.dtype != x.type.dtype:
        return None
    if y.type.ndim != (1 if isinstance(idx_list[0], slice) else 0):
        return None
    return IncSubtensorKernel(op)

# mypy: disable-error-code="import-not-found"
"""``Join`` of vectors of one dtype: copies into one new (or kept) vector.

Every PyMC gradient ends in a ``Join`` of its pieces, often scalars turned
into 1-element vectors. PyTensor's C code builds a tuple and calls NumPy's
``PyArray_Concatenate`` whenever it cannot reuse its output, which it
never can when the join is what the function returns (about 1.2 µs for
seven short vectors). This kernel copies each input's elements in order
(``memcpy`` for a contiguous input) into last call's result when its
length still fits, else into a new vector; the values are the inputs'
elements, as ``np.concatenate`` gives them.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._kernel_base import Kernel

__all__ = ["JoinKernel", "join_kernel"]

_NUMBERS = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)  # fmt: skip


class JoinKernel(Kernel):
    """``np.concatenate`` of vectors that share the output's dtype."""

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The total length, the output (kept when it fits), then each
        input's elements in order."""
        (z,), fail = outputs, sub["fail"]
        names = ", ".join(inputs)
        return f"""{{
PyArrayObject* const parts[{len(inputs)}] = {{{names}}};
npy_intp total = 0;
for (int p = 0; p < {len(inputs)}; ++p) {{
    total += PyArray_DIMS(parts[p])[0];
}}
if (!({z} != NULL && PyArray_NDIM({z}) == 1 && PyArray_DIMS({z})[0] == total &&
      PyArray_TYPE({z}) == PyArray_TYPE(parts[0]) && PyArray_IS_C_CONTIGUOUS({z}) &&
      PyArray_ISWRITEABLE({z}))) {{
    Py_XDECREF({z});
    {z} = (PyArrayObject*)PyArray_EMPTY(1, &total, PyArray_TYPE(parts[0]), 0);
    if ({z} == NULL) {{
        {fail}
    }}
}}
dtype_{z}* out = (dtype_{z}*)PyArray_DATA({z});
for (int p = 0; p < {len(inputs)}; ++p) {{
    const npy_intp n = PyArray_DIMS(parts[p])[0];
    const npy_intp stride = PyArray_STRIDES(parts[p])[0];
    const char* from = PyArray_BYTES(parts[p]);
    if (stride == (npy_intp)sizeof(dtype_{z}) || n <= 1) {{
        if (n > 0) {{
            memcpy(out, from, (size_t)n * sizeof(dtype_{z}));
        }}
    }} else {{
        for (npy_intp i = 0; i < n; ++i) {{
            out[i] = *(const dtype_{z}*)(from + i * stride);
        }}
    }}
    out += n;
}}
}}
"""


def join_kernel(node: Any) -> JoinKernel | None:
    """A JoinKernel for a ``Join`` of vectors whose dtype is the output's,
    or None (PyTensor's code runs)."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("axis",) or getattr(op, "axis", None) != 0:
        return None
    dtype = node.outputs[0].type.dtype
    if dtype not in _NUMBERS or node.outputs[0].type.ndim != 1 or not node.inputs:
        return None
    if any(v.type.ndim != 1 or v.type.dtype != dtype for v in node.inputs):
        return None
    return JoinKernel(op)

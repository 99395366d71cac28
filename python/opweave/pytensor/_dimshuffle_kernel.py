# mypy: disable-error-code="import-not-found"
"""``DimShuffle`` that keeps last call's view when it is the same view
(see :mod:`opweave.pytensor._views`): a PyMC gradient has a dozen
``ExpandDims`` of scalars, each a new 1-element array at every call with
PyTensor's code.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._views import ViewKernel, view_code

__all__ = ["DimShuffleKernel", "dimshuffle_kernel"]

_VERSION = 1


class DimShuffleKernel(ViewKernel):
    """``DimShuffle``'s view, kept from the last call when it is the same."""

    def c_code_cache_version(self) -> tuple[int, ...]:
        """The kernel's version and the op's."""
        return (_VERSION, *self.op.c_code_cache_version())

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The view's shape and strides; last call's view if it is the
        same, else a new view of the input."""
        (x,), (z,) = inputs, outputs
        fail = sub["fail"]
        order = [-1 if d == "x" else d for d in self.op.new_order]
        nd = len(order)
        lines = []
        for axis in self.op.drop:
            lines.append(
                f"if (PyArray_DIMS({x})[{axis}] != 1) {{\n"
                f'PyErr_SetString(PyExc_ValueError, "DimShuffle: cannot drop axis {axis} '
                f'with length not equal to one.");\n{fail}\n}}'
            )
        for i, d in enumerate(order):
            # A length-1 axis gets the itemsize as stride (never 0: some
            # BLAS libraries mishandle zero strides), as in PyTensor's code.
            if d == -1:
                lines.append(f"dims[{i}] = 1; strides[{i}] = itemsize;")
            else:
                lines.append(
                    f"dims[{i}] = PyArray_DIMS({x})[{d}];\n"
                    f"strides[{i}] = dims[{i}] == 1 ? itemsize : PyArray_STRIDES({x})[{d}];"
                )
        body = "\n".join(lines)
        size = max(nd, 1)
        view = view_code(x, z, f"PyArray_DATA({x})", nd, "dims", "strides", fail)
        return f"""{{
const npy_intp itemsize = PyArray_ITEMSIZE({x});
npy_intp dims[{size}];
npy_intp strides[{size}];
{body}
{view}}}
"""


def dimshuffle_kernel(node: Any) -> DimShuffleKernel | None:
    """A DimShuffleKernel for ``node``, or None outside the props it was
    written for."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("input_ndim", "new_order"):
        return None
    if not hasattr(op, "drop") or not hasattr(op, "c_code_cache_version"):
        return None
    if len(node.inputs) != 1 or not hasattr(node.inputs[0].type, "dtype"):
        return None
    return DimShuffleKernel(op)

# mypy: disable-error-code="import-not-found"
"""``Subtensor`` (basic indexing: integers and slices) that keeps last
call's view when it is the same view (see :mod:`opweave.pytensor._views`).

A PyMC sampler function takes one vector and cuts each variable out of it
with ``x[i]`` or ``x[start:stop]``: with PyTensor's code each is a new
ndarray at every call. The view's shape, strides and offset come from
PyTensor's own ``Subtensor.helper_c_code`` (the code its C uses, with its
checks and messages); only the making of the view differs.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._views import ViewKernel, view_code

__all__ = ["SubtensorKernel", "subtensor_kernel"]

_VERSION = 1


class SubtensorKernel(ViewKernel):
    """``x[idx]`` for basic indices, as a view kept when it is the same."""

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """The kernel's version and that of PyTensor's view arithmetic."""
        helper = type(self.op).helper_c_code_cache_version()
        return (_VERSION, helper) if helper else ()

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The view's geometry (PyTensor's arithmetic), then the view."""
        x, (z,) = inputs[0], outputs
        ndim, view_ndim = node.inputs[0].type.ndim, node.outputs[0].type.ndim
        fail = sub["fail"]
        geometry = type(self.op).helper_c_code(
            node, name, inputs, outputs, sub, self.op.idx_list, view_ndim
        )
        view = view_code(
            x, z, f"PyArray_BYTES({x}) + xview_offset", view_ndim, "xview_dims",
            "xview_strides", fail,
        )  # fmt: skip
        return f"""
if (PyArray_NDIM({x}) != {ndim}) {{
    PyErr_SetString(PyExc_ValueError, "Expected {ndim} dimensions input");
    {fail}
}}
{{
{geometry}
{view}
}}
"""


def subtensor_kernel(node: Any) -> SubtensorKernel | None:
    """A SubtensorKernel for a ``Subtensor`` of a tensor, or None where
    PyTensor's code runs (another PyTensor's props or helper)."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("idx_list",):
        return None
    if not all(hasattr(type(op), h) for h in ("helper_c_code", "helper_c_code_cache_version")):
        return None
    from pytensor.tensor.type import TensorType

    if not isinstance(node.inputs[0].type, TensorType):
        return None
    return SubtensorKernel(op)

"""Views that opweave's kernels keep from one call to the next.

A view is a new ndarray object at every call, which costs more than
computing it. opweave's module keeps an intermediate result between calls,
and the array a view looks into is usually the same as last time (its
producer reuses its storage). When the kept view has the data pointer,
dtype, shape, strides and writability the new one would have, it *is* that
view, and is kept. Results already returned to the caller are never kept
(their cells are emptied at each call), so nothing a caller holds changes.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._kernel_base import Kernel

__all__ = ["SAME_VIEW", "ViewKernel", "view_code"]

# Support code: whether ``view`` is an array over ``data`` of type
# ``type_num`` with these dimensions, strides and writability. One text for
# every kernel that uses it (a module holds each support text once), with no
# preprocessor line (see _kernel_base.py's NO_CARRIED_DEPENDENCES).
SAME_VIEW = r"""
static inline int opweave_same_view(PyArrayObject* view, const void* data, int type_num,
                                    int nd, const npy_intp* dims, const npy_intp* strides,
                                    int writeable) {
    if (view == NULL || PyArray_DATA(view) != data || PyArray_TYPE(view) != type_num ||
        PyArray_NDIM(view) != nd || PyArray_ISWRITEABLE(view) != writeable) {
        return 0;
    }
    for (int d = 0; d < nd; ++d) {
        if (PyArray_DIMS(view)[d] != dims[d] || PyArray_STRIDES(view)[d] != strides[d]) {
            return 0;
        }
    }
    return 1;
}
"""


def view_code(x: str, z: str, data: str, nd: int, dims: str, strides: str, fail: str) -> str:
    """C that leaves in ``z`` a view of array ``x`` over ``data`` with ``nd``
    dimensions ``dims`` and strides ``strides`` (C arrays, or NULL when
    ``nd`` is 0), writable when ``x`` is: ``z`` itself when it is that view
    already, else a new one whose base is ``x``."""
    return f"""{{
const int writeable = PyArray_ISWRITEABLE({x}) ? 1 : 0;
if (!opweave_same_view({z}, {data}, PyArray_TYPE({x}), {nd}, {dims}, {strides}, writeable)) {{
    Py_XDECREF({z});
    Py_INCREF(PyArray_DESCR({x}));
    {z} = (PyArrayObject*)PyArray_NewFromDescr(&PyArray_Type, PyArray_DESCR({x}), {nd}, {dims},
                                               {strides}, (void*)({data}),
                                               writeable ? NPY_ARRAY_WRITEABLE : 0, NULL);
    if ({z} == NULL) {{
        {fail}
    }}
    Py_INCREF((PyObject*){x});
    if (PyArray_SetBaseObject({z}, (PyObject*){x}) != 0) {{  // it took the reference
        Py_CLEAR({z});  // a view without its base must not stay in the cell
        {fail}
    }}
}}
}}
"""


class ViewKernel(Kernel):
    """A kernel whose C code ends in :func:`view_code`: it needs the view
    comparison as support code."""

    def c_support_code(self, **kwargs: Any) -> str:
        """The view comparison."""
        return SAME_VIEW

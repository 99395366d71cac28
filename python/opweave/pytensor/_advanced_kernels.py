# mypy: disable-error-code="import-not-found"
"""Advanced indexing where PyTensor's C code declines: ``AdvancedSubtensor``
(``x[idx...]``), ``AdvancedIncSubtensor`` (``x[idx...] = y``, ``+= y``, and
``np.add.at``) with any index PyTensor allows: integer arrays of any
dimensions on any axes, boolean masks, slices between them.

``perform`` builds the index tuple and lets NumPy index. The kernel builds
the same tuple in C and calls NumPy's indexing through its C API (the
library's ``get_item``/``set_item``), so values, shapes and errors are
NumPy's. Where every index is an integer array of one shape on the leading
axes (PyMC's ``x[rows, cols]``), the library's loops gather or scatter
directly (``gather``/``scatter``: repeated indices accumulate in order, as
``np.add.at`` adds them), and fall back to NumPy's path for anything else,
an index out of bounds included, before writing anything.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._library_kernel import LibraryKernel, c_string
from opweave.pytensor._take_kernel import _INTEGERS, take_kernel

__all__ = [
    "AdvancedIncKernel",
    "AdvancedKernel",
    "advanced_inc_kernel",
    "advanced_subtensor_kernel",
]

# PyTensor's integer dtypes (its own C code takes uint64 too).
_ALL_INTEGERS = (*_INTEGERS, "uint64")


def _key_code(idx_list: tuple[Any, ...], indices: list[str], fail: str) -> str:
    """C that builds ``perform``'s index tuple as ``key`` (a new reference)."""
    lines = [f"PyObject* key = PyTuple_New({len(idx_list)});", f"if (key == NULL) {{ {fail} }}"]
    for position, entry in enumerate(idx_list):
        if isinstance(entry, int):
            lines.append(f"Py_INCREF((PyObject*){indices[entry]});")
            lines.append(f"PyTuple_SET_ITEM(key, {position}, (PyObject*){indices[entry]});")
            continue
        parts = [
            "Py_None" if part is None else f"(PyObject*){indices[part]}"
            for part in (entry.start, entry.stop, entry.step)
        ]
        lines.append(f"PyObject* slice_{position} = PySlice_New({', '.join(parts)});")
        lines.append(f"if (slice_{position} == NULL) {{ Py_DECREF(key); {fail} }}")
        lines.append(f"PyTuple_SET_ITEM(key, {position}, slice_{position});")
    return "\n".join(lines) + "\n"


def _fast_indices(node: Any, first_index: int) -> list[int] | None:
    """The positions of the node's index inputs when they are integer arrays
    of one number of dimensions on the leading axes (the library's loops
    apply), else None."""
    idx_list = tuple(node.op.idx_list)
    k = len(idx_list)
    if idx_list != tuple(range(k)) or k > node.inputs[0].type.ndim:
        return None
    index_inputs = node.inputs[first_index:]
    ndims = {v.type.ndim for v in index_inputs}
    if any(v.type.dtype not in _INTEGERS for v in index_inputs) or len(ndims) != 1 or 0 in ndims:
        return None
    return list(range(first_index, first_index + k))


class AdvancedKernel(LibraryKernel):
    """``x[idx...]`` as ``AdvancedSubtensor.perform`` computes it; with
    ``fast``, the library's gather first."""

    __props__ = ("op", "fast")

    def __init__(self, op: Any, fast: bool) -> None:
        super().__init__(op)
        self.fast = fast

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The gather, or NumPy's ``x[key]`` (copied where ``perform`` copies)."""
        x, indices, z, fail = inputs[0], list(inputs[1:]), outputs[0], sub["fail"]
        idx_list = tuple(self.op.idx_list)
        arrays = [i for i, entry in enumerate(idx_list) if isinstance(entry, int)]
        copy = int(not any(node.inputs[1 + idx_list[i]].type.ndim > 0 for i in arrays))
        code = ["{", "const struct opweave_kernels_v1* api = opweave_kernels_import();"]
        code.append("int done = 1;")
        if self.fast:
            code.append(f"PyArrayObject* idx[{len(indices)}] = {{{', '.join(indices)}}};")
            code.append(f"done = api->gather({x}, {len(indices)}, idx, &{z});")
        code.append("if (done == 1) {")
        code.append(_key_code(idx_list, indices, fail))
        code.append(f"done = api->get_item({x}, key, {copy}, &{z});")
        code.append("Py_DECREF(key);")
        code.append("}")
        code.append(f"if (done != 0) {{ {fail} }}")
        code.append("}")
        return "\n".join(code) + "\n"


def _pytensor_takes(node: Any) -> bool:
    """Whether PyTensor's own C code runs this ``AdvancedSubtensor`` (one
    integer array on one axis, every other axis whole)."""
    take_axis = getattr(node.op, "_take_axis", None)
    if take_axis is None or take_axis() is None:
        return False
    return len(node.inputs) == 2 and node.inputs[1].type.dtype in _ALL_INTEGERS


def advanced_subtensor_kernel(node: Any) -> Any:
    """The gather of vectors (:mod:`._take_kernel`), else, where PyTensor's
    C code declines, an AdvancedKernel; None where PyTensor's C code runs or
    outside the dtypes written for."""
    if tuple(getattr(type(node.op), "__props__", ())) != ("idx_list",):
        return None
    taken = take_kernel(node)
    if taken is not None or _pytensor_takes(node):
        return taken
    if node.inputs[0].type.dtype == "object" or not hasattr(node.op, "idx_list"):
        return None
    return AdvancedKernel(node.op, _fast_indices(node, 1) is not None)


class AdvancedIncKernel(LibraryKernel):
    """``AdvancedIncSubtensor.perform``: set, ``+=`` or ``np.add.at`` through
    NumPy's indexing; with ``fast``, the library's scatter first."""

    __props__ = ("op", "fast")

    def __init__(self, op: Any, fast: bool) -> None:
        super().__init__(op)
        self.fast = fast

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """A copy of ``x`` (unless in place), updated at the indices."""
        op, fail = self.op, sub["fail"]
        x, y, indices, z = inputs[0], inputs[1], list(inputs[2:]), outputs[0]
        mode = 0 if op.set_instead_of_inc else (1 if op.ignore_duplicates else 2)
        release = f"Py_DECREF(target); {fail}"
        code = ["{", _broadcast_check(node, x, y, indices, fail)]
        code.append("const struct opweave_kernels_v1* api = opweave_kernels_import();")
        if op.inplace:
            code.append(f"PyArrayObject* target = {x};\nPy_INCREF(target);")
        else:
            code.append(
                f"PyArrayObject* target = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);"
            )
            code.append(f"if (target == NULL) {{ {fail} }}")
        code.append("int done = 1;")
        if self.fast and mode != 1:
            code.append(f"PyArrayObject* idx[{len(indices)}] = {{{', '.join(indices)}}};")
            code.append(f"done = api->scatter(target, {y}, {len(indices)}, idx, {int(mode == 2)});")
        code.append("if (done == 1) {")
        code.append(_key_code(tuple(op.idx_list), indices, release))
        code.append(f"done = api->set_item(target, key, (PyObject*){y}, {mode});")
        code.append("Py_DECREF(key);")
        code.append("}")
        code.append(f"if (done != 0) {{ {release} }}")
        code.append(f"Py_XDECREF({z});\n{z} = target;")
        code.append("}")
        return "\n".join(code) + "\n"


def _broadcast_check(node: Any, x: str, y: str, indices: list[str], fail: str) -> str:
    """``perform``'s runtime check that ``x[idx] (+)= y`` does not broadcast
    ``y`` where its type says it cannot (one integer vector index only)."""
    op = node.op
    if tuple(op.idx_list) != (0,) or node.inputs[2].type.ndim != 1:
        return ""
    if node.inputs[2].type.dtype == "bool":
        return ""
    x_ndim, y_type = node.inputs[0].type.ndim, node.inputs[1].type
    tests = []
    for j in range(min(y_type.ndim, x_ndim)):
        y_axis, x_axis = y_type.ndim - 1 - j, x_ndim - 1 - j
        if y_type.broadcastable[y_axis]:
            continue
        expected = (
            f"PyArray_DIMS({indices[0]})[0]" if x_axis == 0 else f"PyArray_DIMS({x})[{x_axis}]"
        )
        tests.append(f"(PyArray_DIMS({y})[{y_axis}] == 1 && {expected} != 1)")
    if not tests:
        return ""
    message = c_string(op._runtime_broadcast_error_msg)
    return (
        f"if ({' || '.join(tests)}) {{\n"
        f"    PyErr_SetString(PyExc_ValueError, {message});\n    {fail}\n}}"
    )


_INC_PROPS = ("idx_list", "inplace", "set_instead_of_inc", "ignore_duplicates")


def _pytensor_increments(node: Any) -> bool:
    """Whether PyTensor's own C code runs this ``AdvancedIncSubtensor``
    (its C code's own test)."""
    op = node.op
    if tuple(op.idx_list) != (0,) or op.ignore_duplicates or len(node.inputs) != 3:
        return False
    x, y, idx = node.inputs
    complex_ = ("complex64", "complex128")
    return (
        x.type.ndim == 1
        and y.type.broadcastable == idx.type.broadcastable
        and idx.type.ndim >= 1
        and idx.type.dtype in _ALL_INTEGERS
        and x.type.dtype not in complex_
        and y.type.dtype not in complex_
    )


def advanced_inc_kernel(node: Any) -> AdvancedIncKernel | None:
    """An AdvancedIncKernel where PyTensor's C code declines, else None."""
    if tuple(getattr(type(node.op), "__props__", ())) != _INC_PROPS or _pytensor_increments(node):
        return None
    if node.inputs[0].type.dtype == "object":
        return None
    return AdvancedIncKernel(node.op, _fast_indices(node, 2) is not None)

"""The C code of :class:`~opweave.tensor.type.TensorType`.

A tensor variable ``<name>`` is a ``PyArrayObject*`` holding its own
reference; ``py_<name>`` is the Python object it came from or goes to.

The input checks in :func:`extract` are the fast path of every compiled call
(inputs that are already exact skip Python's ``filter``), so on success they
only compare integers: no allocation, no call into Python.
"""

from __future__ import annotations

from collections.abc import Sequence

from opweave.scalar.dtypes import DTypeInfo

__all__ = ["declare", "extract", "sync"]


def declare(name: str, info: DTypeInfo, check_input: bool) -> str:
    """``PyArrayObject* <name>;``, plus ``typedef npy_<dtype> dtype_<name>;``
    when ``check_input`` (op code commonly uses ``dtype_%(x)s``)."""
    typedef = f"typedef {info.c_type} dtype_{name};\n" if check_input else ""
    return f"PyArrayObject* {name};\n{typedef}"


def _raise(fail: str, message: str, *args: str) -> str:
    """Sets a TypeError with ``PyErr_Format(message, *args)`` and fails."""
    arguments = "".join(f", {a}" for a in args)
    return f'    PyErr_Format(PyExc_TypeError, "{message}"{arguments});\n    {fail}\n'


def _dtype_test(array: str, info: DTypeInfo) -> str:
    """A C condition true when ``array`` does not hold ``info``'s dtype. Two
    type numbers can name one dtype (NPY_LONG and NPY_LONGLONG are both int64
    on Linux); the equivalence test only runs when the numbers differ."""
    return (
        f"PyArray_TYPE({array}) != {info.typenum} && "
        f"!PyArray_EquivTypenums(PyArray_TYPE({array}), {info.typenum})"
    )


def _static_checks(array: str, fail: str, shape: Sequence[int | None], what: str) -> str:
    code = ""
    for axis, length in enumerate(shape):
        if length is None:
            continue
        code += f"if (PyArray_DIMS({array})[{axis}] != {length}) {{\n"
        code += _raise(
            fail,
            f"{what} shape[{axis}] == {length} (static shape), got %zd",
            f"(Py_ssize_t)PyArray_DIMS({array})[{axis}]",
        )
        code += "}\n"
    return code


def extract(
    name: str,
    fail: str,
    info: DTypeInfo,
    ndim: int,
    static_shape: Sequence[int | None],
    check_input: bool,
) -> str:
    """Sets ``<name>`` to ``py_<name>`` (a new reference). When
    ``check_input``, first raises TypeError for None, a non-array, a wrong
    ndim or dtype, a misaligned or byte-swapped array, or a static length
    that differs (``static_shape``; pass ``()`` to skip those)."""
    take = f"{name} = (PyArrayObject*)py_{name};\nPy_INCREF({name});\n"
    if not check_input:
        return take
    py, array = f"py_{name}", f"((PyArrayObject*)py_{name})"
    # A failed check runs c_cleanup, which releases <name>: it must be NULL,
    # not whatever the declaration left in it.
    return (
        f"{name} = NULL;\n"
        f"if ({py} == Py_None) {{\n"
        + _raise(fail, "expected an ndarray, not None")
        + "}\n"
        + f"if (!PyArray_Check({py})) {{\n"
        + _raise(fail, "expected an ndarray, got %s", f"Py_TYPE({py})->tp_name")
        + "}\n"
        + f"if (PyArray_NDIM({array}) != {ndim}) {{\n"
        + _raise(
            fail, f"expected an ndarray with {ndim} dimensions, got %d", f"PyArray_NDIM({array})"
        )
        + "}\n"
        + f"if ({_dtype_test(array, info)}) {{\n"
        + _raise(
            fail,
            f"expected dtype {info.name}, got type_num %d (%s)",
            f"PyArray_TYPE({array})",
            f"PyArray_DESCR({array})->typeobj->tp_name",
        )
        + "}\n"
        + f"if (!PyArray_ISALIGNED({array}) || !PyArray_ISNOTSWAPPED({array})) {{\n"
        + _raise(
            fail,
            "expected an aligned ndarray in native byte order (copy it with "
            f"numpy.array(x, dtype='{info.name}'))",
        )
        + "}\n"
        + _static_checks(array, fail, static_shape, "expected")
        + take
    )


def sync(
    name: str,
    fail: str,
    info: DTypeInfo,
    ndim: int,
    static_shape: Sequence[int | None],
    type_text: str,
) -> str:
    """Points ``py_<name>`` at ``<name>`` (at None when it is NULL), holding
    a new reference and releasing the old one. An array of the wrong dtype,
    ndim or static length (an op's bug) raises TypeError naming the type
    ``type_text`` instead of returning it."""
    what = f"an output of type {_c_text(type_text)} must have"
    checks = (
        f"if (PyArray_NDIM({name}) != {ndim}) {{\n"
        + _raise(fail, f"{what} {ndim} dimensions, got %d", f"PyArray_NDIM({name})")
        + "}\n"
        + f"if ({_dtype_test(name, info)}) {{\n"
        + _raise(
            fail,
            f"{what} dtype {info.name}, got type_num %d (%s)",
            f"PyArray_TYPE({name})",
            f"PyArray_DESCR({name})->typeobj->tp_name",
        )
        + "}\n"
        + _static_checks(name, fail, static_shape, what)
    )
    return (
        f"if (!{name}) {{\n"
        f"    Py_XDECREF(py_{name});\n"
        "    Py_INCREF(Py_None);\n"
        f"    py_{name} = Py_None;\n"
        f"}} else {{\n" + _indent(checks) + f"    if ((PyObject*){name} != py_{name}) {{\n"
        f"        Py_XDECREF(py_{name});\n"
        f"        py_{name} = (PyObject*){name};\n"
        f"        Py_INCREF(py_{name});\n"
        "    }\n"
        "}\n"
    )


def _c_text(text: str) -> str:
    """``text`` made safe inside a C string literal used as a format."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return escaped.replace("%", "%%")


def _indent(code: str) -> str:
    return "".join(f"    {line}\n" if line else "\n" for line in code.splitlines())

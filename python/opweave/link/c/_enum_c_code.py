"""The C side of enumerations (:mod:`.enum_type`): the C scalar types an
enum's ``ctype`` may be, a constant's value checked against it, the C
literals of values, and the code that defines the constants, reads a value
from Python and names a constant (the debug helper)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opweave._namedtuple import NamedTuple
from opweave.configparser import config

__all__ = [
    "CTYPES",
    "CScalar",
    "c_string",
    "number",
    "read_number",
    "support_code",
    "to_string_code",
]


class CScalar(NamedTuple):
    """What opweave knows about a C scalar type usable as an enum's ctype."""

    integral: bool
    signed: bool
    bits: int


def _integers(names: str, signed: bool, bits: int) -> dict[str, CScalar]:
    return {name: CScalar(True, signed, bits) for name in names.split(", ")}


# Sizes are those of the LP64 ABI (Linux and macOS on 64-bit machines), the
# only ones opweave builds for.
CTYPES: dict[str, CScalar] = {
    **_integers("signed char, int8_t, npy_int8, npy_byte", True, 8),
    **_integers("unsigned char, uint8_t, npy_uint8, npy_ubyte", False, 8),
    **_integers("short, int16_t, npy_int16, npy_short", True, 16),
    **_integers("unsigned short, uint16_t, npy_uint16, npy_ushort", False, 16),
    **_integers("int, signed, int32_t, npy_int32, npy_int", True, 32),
    **_integers("unsigned, unsigned int, uint32_t, npy_uint32, npy_uint", False, 32),
    **_integers(
        "long, long int, long long, int64_t, npy_int64, npy_intp, ssize_t, Py_ssize_t, "
        "npy_long, npy_longlong",
        True,
        64,
    ),
    **_integers(
        "unsigned long, unsigned long long, uint64_t, npy_uint64, size_t, npy_uintp, "
        "npy_ulong, npy_ulonglong",
        False,
        64,
    ),
    "float": CScalar(False, True, 32),
    "npy_float32": CScalar(False, True, 32),
    "npy_float": CScalar(False, True, 32),
    "double": CScalar(False, True, 64),
    "npy_float64": CScalar(False, True, 64),
    "npy_double": CScalar(False, True, 64),
}


def c_string(text: str) -> str:
    """``text`` made safe inside a C string literal used as a printf format."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return escaped.replace("%", "%%")


def number(name: str, value: Any, scalar: CScalar, ctype: str) -> int | float:
    """The constant ``value`` as a Python int or float that ``ctype`` holds,
    or TypeError/ValueError."""
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    elif isinstance(value, np.integer):
        value = int(value)
    elif isinstance(value, np.floating):
        value = float(value)
    if not isinstance(value, (int, float)):
        raise TypeError(
            f"enum constant {name} must be an int or a float (or (alias, value)), "
            f"got {type(value).__name__} ({value!r})"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"enum constant {name} must be finite, got {value!r}")
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        # 1.0 is the constant 1: equal enums are one type with one C text.
        value = int(value)
    if scalar.integral:
        if isinstance(value, float):
            raise TypeError(
                f"enum constant {name} is {value!r}, but ctype {ctype!r} holds integers"
            )
        low = -(2 ** (scalar.bits - 1)) if scalar.signed else 0
        high = 2 ** (scalar.bits - 1 if scalar.signed else scalar.bits) - 1
        if not low <= value <= high:
            raise ValueError(
                f"enum constant {name} = {value} does not fit ctype {ctype!r} ([{low}, {high}])"
            )
    return value


def c_number(value: int | float, scalar: CScalar) -> str:
    """A C literal for ``value`` with a suffix giving its type (for the
    checks in the generated code)."""
    if isinstance(value, float):
        return repr(value) if value >= 0 else f"({value!r})"
    if value == -(2**63):
        return "(-9223372036854775807LL - 1)"
    suffix = "LL" if scalar.signed else "ULL"
    return f"{value}{suffix}" if value >= 0 else f"({value}{suffix})"


def define_value(value: int | float) -> str:
    """The text of a ``#define`` for ``value``: a plain number (usable in
    ``#if`` and ``case``), with a suffix only where C needs one."""
    if isinstance(value, float):
        return repr(value) if value >= 0 else f"({value!r})"
    if value == -(2**63):
        return "(-9223372036854775807LL - 1)"
    if value >= 2**63:
        return f"{value}ULL"
    return str(value) if value >= 0 else f"({value})"


def support_code(enum: Any) -> str:
    """One ``#define NAME value`` per constant of ``enum``, sorted by name. Two enums
    of one module may share a name only with the same value: a
    ``static_assert`` stops the compile otherwise, instead of letting the
    second definition silently win."""
    lines = [f"/* {type(enum).__name__} {enum.cname}: {', '.join(sorted(enum))} */"]
    for name in sorted(enum):
        value = define_value(enum[name])
        lines += [
            f"#ifndef {name}",
            f"#define {name} {value}",
            "#endif",
            f'static_assert({name} == {value}, "opweave: the enum constant {name} has '
            f"two different values in this module ({type(enum).__name__} {enum.cname} "
            f'wants {value})");',
        ]
    return "\n".join(lines) + "\n"


def to_string_code(enum: Any) -> str:
    """With ``config.cmodule__debug``, the C function
    ``opweave_enum_to_string_<cname>(value, out)`` (also reachable by
    PyTensor's name, ``pytensor_enum_to_string_<cname>``), which writes
    the name of the constant ``value`` equals into ``out`` and returns 0,
    or sets a ValueError and returns -1; otherwise nothing."""
    if not config.cmodule__debug:
        return ""
    function = f"opweave_enum_to_string_{enum.cname}"
    guard = f"OPWEAVE_ENUM_TO_STRING_{enum.cname}"
    what = c_string(f"{type(enum).__name__} {enum.cname}")
    tests = "".join(
        f"    if (value == ({enum.ctype})({constant})) {{\n"
        f'        strcpy(out, "{constant}");\n        return 0;\n    }}\n'
        for constant in sorted(enum)
    )
    return (
        f"#ifndef {guard}\n#define {guard}\n"
        f"static inline int {function}({enum.ctype} value, char* out) {{\n{tests}"
        f'    PyErr_SetString(PyExc_ValueError, "{what}: the value is no constant");\n'
        "    return -1;\n}\n"
        f"#define pytensor_enum_to_string_{enum.cname} {function}\n#endif\n"
    )


def read_number(enum: Any, name: str, fail: str, check_input: bool, index: bool = False) -> str:
    """Opens a C block setting, for ``enum``, ``value_<name>`` from ``py_<name>``, with
    the checks; the caller closes the block. ``index``: read an integer
    whatever ``ctype`` is (a :class:`CEnumType` index)."""
    what = c_string(f"{type(enum).__name__} {enum.cname}")
    scalar = CTYPES["long long"] if index else enum._scalar
    if scalar.integral:
        kind = "long long" if scalar.signed else "unsigned long long"
        read = "PyLong_AsLongLong" if scalar.signed else "PyLong_AsUnsignedLongLong"
        shown = ("%lld" if scalar.signed else "%llu", f"value_{name}")
        code = (
            "{\n"
            f"PyObject* index_{name} = PyNumber_Index(py_{name});\n"
            f"if (!index_{name}) {{\n"
            "    PyErr_Clear();\n"
            f'    PyErr_Format(PyExc_TypeError, "{what}: expected an int, got %s",\n'
            f"                 Py_TYPE(py_{name})->tp_name);\n"
            f"    {fail}\n"
            "}\n"
            f"{kind} value_{name} = {read}(index_{name});\n"
            f"Py_DECREF(index_{name});\n"
            f"if (value_{name} == ({kind})-1 && PyErr_Occurred()) {{\n    {fail}\n}}\n"
        )
    else:
        shown = ("%R", f"py_{name}")
        code = (
            "{\n"
            f"double value_{name} = PyFloat_AsDouble(py_{name});\n"
            f"if (value_{name} == -1.0 && PyErr_Occurred()) {{\n"
            "    PyErr_Clear();\n"
            f'    PyErr_Format(PyExc_TypeError, "{what}: expected a number, got %s",\n'
            f"                 Py_TYPE(py_{name})->tp_name);\n"
            f"    {fail}\n"
            "}\n"
        )
    if check_input:
        tests = " || ".join(
            f"value_{name} == {c_number(v, scalar)}" for v in sorted(set(enum.values()))
        )
        code += (
            f"if (!({tests})) {{\n"
            f'    PyErr_Format(PyExc_ValueError, "{what}: {shown[0]} is not the value '
            f'of one of its constants", {shown[1]});\n'
            f"    {fail}\n"
            "}\n"
        )
    return code

"""The C++ text of a :class:`~opweave.link.c.params_type.ParamsType`: the
members of its struct, and the code that fills one from a ``Params`` dict."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["C_CPP_KEYWORDS", "ERROR_CONTEXT", "check_field_name", "extract_code", "struct_members"]


_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

C_CPP_KEYWORDS = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char
    char8_t char16_t char32_t class compl concept const const_cast consteval
    constexpr constinit continue co_await co_return co_yield decltype default
    delete do double dynamic_cast else enum explicit export extern false float
    for friend goto if inline int long mutable namespace new noexcept not not_eq
    nullptr operator or or_eq private protected public register reinterpret_cast
    requires restrict return short signed sizeof static static_assert static_cast
    struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
    _Static_assert _Thread_local NULL
    """.split()
)
"""Names that cannot be fields: the C and C++ keywords, and ``NULL``."""

# Members of the generated struct, and the attribute Params keeps its type in.
_RESERVED = frozenset({"extract", "cleanup", "setErrorOccurred", "errorOccurred", "params_type"})
_RESERVED_PREFIX = "opweave_"

# A failed field extraction raises its error again, the message naming the
# field and the original error as the cause. (PyErr_Fetch is deprecated from
# Python 3.12 on, PyErr_GetRaisedException new in it.)
ERROR_CONTEXT = """\
#ifndef OPWEAVE_PARAMS_ERROR_CONTEXT
#define OPWEAVE_PARAMS_ERROR_CONTEXT
static inline PyObject* opweave_params_take_error() {
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value && traceback) {
        PyException_SetTraceback(value, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
#endif
}
static inline void opweave_params_error_context(const char* field) {
    PyObject* cause = opweave_params_take_error();
    if (!cause) {
        PyErr_Format(PyExc_RuntimeError,
                     "ParamsType: extracting field '%s' failed without setting an error", field);
        return;
    }
    PyErr_Format((PyObject*)Py_TYPE(cause), "ParamsType field '%s': %S", field, cause);
    PyObject* raised = opweave_params_take_error();
    if (!raised) {
        Py_DECREF(cause);
        return;
    }
    PyException_SetCause(raised, cause); /* steals the reference to cause */
    PyErr_SetObject((PyObject*)Py_TYPE(raised), raised);
    Py_DECREF(raised);
}
#endif
"""


def check_field_name(name: str) -> None:
    """Raises AttributeError unless ``name`` can name a field of a ParamsType's
    struct: a C identifier, no C or C++ keyword, none of the struct's own."""
    if not _FIELD_NAME.match(name):
        raise AttributeError(f"ParamsType: field name {name!r} is not a C identifier")
    if name in C_CPP_KEYWORDS:
        raise AttributeError(f"ParamsType: field name {name!r} is a C or C++ keyword")
    if name in _RESERVED or name.startswith(_RESERVED_PREFIX):
        raise AttributeError(
            f"ParamsType: field name {name!r} is reserved (the struct's own members are "
            f"{', '.join(sorted(_RESERVED))} and names starting with {_RESERVED_PREFIX!r})"
        )


def _field_sub(field: str, position: int) -> dict[str, str]:
    return {
        "fail": "{this->setErrorOccurred(); return;}",
        "id": str(position + 1),
        "py_ptr": f"py_{field}",
    }


def struct_members(items: Sequence[tuple[str, Any]]) -> str:
    """The struct's body except what names the struct: one member (and one
    extraction method) per ``(field, type)``, an error counter, cleanup."""
    declare, init, cleanup, extract, cases = [], [], [], [], []
    for position, (field, field_type) in enumerate(items):
        sub = _field_sub(field, position)
        declare.append(field_type.c_declare(field, sub))
        init.append(field_type.c_init(field, sub))
        cleanup.append(field_type.c_cleanup(field, sub))
        extract.append(
            f"void opweave_extract_{field}(PyObject* py_{field}) {{\n"
            f"{field_type.c_extract(field, sub)}\n}}\n"
        )
        cases.append(f"case {position}: opweave_extract_{field}(object); break;\n")
    return (
        "int opweave_errors;\n"
        + "".join(declare)
        + "void opweave_init() {\nopweave_errors = 0;\n"
        + "".join(init)
        + "}\nvoid cleanup() {\n"
        + "".join(cleanup)
        + "}\n"
        + "".join(extract)
        + "void extract(PyObject* object, int field_pos) {\n"
        "switch (field_pos) {\n" + "".join(cases) + "default:\n"
        '    PyErr_Format(PyExc_TypeError, "ParamsType: no field at position %d", field_pos);\n'
        "    setErrorOccurred();\n"
        "    break;\n"
        "}\n}\n"
        "void setErrorOccurred() { ++opweave_errors; }\n"
        "int errorOccurred() const { return opweave_errors; }\n"
    )


def extract_code(name: str, fail: str, struct_name: str, fields: Sequence[str]) -> str:
    """Allocates the struct ``name`` and fills every field from the dict
    ``py_<name>``. None raises ValueError; another non-dict or a missing
    field raises TypeError; a field's own extraction error is raised again
    naming the field."""
    what = f"ParamsType({', '.join(fields)})"
    code = (
        f"{name} = NULL;\n"
        f"if (py_{name} == Py_None) {{\n"
        f'    PyErr_SetString(PyExc_ValueError, "{what}: expected a Params value, got None");\n'
        f"    {fail}\n"
        "}\n"
        f"if (!PyDict_Check(py_{name})) {{\n"
        f'    PyErr_Format(PyExc_TypeError, "{what}: expected a Params value (a dict of '
        f'its fields), got %s", Py_TYPE(py_{name})->tp_name);\n'
        f"    {fail}\n"
        "}\n"
        f"{name} = new (std::nothrow) {struct_name};\n"
        f"if (!{name}) {{\n    PyErr_NoMemory();\n    {fail}\n}}\n"
    )
    for position, field in enumerate(fields):
        item = f"field_{name}_{position}"
        code += (
            "{\n"
            f'PyObject* {item} = PyDict_GetItemString(py_{name}, "{field}");\n'
            f"if (!{item}) {{\n"
            f'    PyErr_SetString(PyExc_TypeError, "{what}: the params value has no '
            f"field '{field}'\");\n"
            f"    {fail}\n"
            "}\n"
            f"{name}->extract({item}, {position});\n"
            f"if ({name}->errorOccurred()) {{\n"
            f'    opweave_params_error_context("{field}");\n'
            f"    {fail}\n"
            "}\n"
            "}\n"
        )
    return code

"""The C++ text of a :class:`~opweave.link.c.params_type.ParamsType`: the
members of its struct, and the code that fills one from a ``Params`` dict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["extract_code", "struct_members"]


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

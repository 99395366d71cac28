"""A small C++ extension that runs a type's C code, for the type tests.

Each function of the module takes one object and runs some of a type's
``c_declare`` / ``c_init`` / ``c_extract`` / ``c_sync`` / ``c_cleanup``
code on a variable named ``V1``, the way a generated graph module does;
``%(fail)s`` jumps to the function's error exit, which cleans up and returns
NULL with the Python exception set.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import opweave
from opweave.link.c import cmodule

NAME = "V1"
SUB = {"fail": "{ goto fail; }", "id": "1", "failure_var": "__failure"}

# Warnings are errors, so that a C literal the compiler has to reinterpret
# (9223372036854775808LL) fails. The unused dtype_V1 typedefs and the unused
# argument and error label of some harness functions are expected.
FLAGS = [
    "-DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-local-typedefs",
    "-Wno-unused-parameter",
    "-Wno-unused-label",
]

_PRELUDE = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <type_traits>
"""


def _function(name: str, body: str, cleanup: str) -> str:
    return (
        f"static PyObject* {name}(PyObject*, PyObject* obj) {{\n"
        f"    PyObject* py_{NAME} = NULL;\n"
        f"{body}"
        f"    return py_{NAME};\n"
        "fail:\n"
        f"{cleanup}"
        f"    Py_XDECREF(py_{NAME});\n"
        "    return NULL;\n"
        "}\n"
    )


def extract_body(
    c_type: Any, check_input: bool = True, sync: bool = True, **kwargs: Any
) -> tuple[str, str]:
    """``py_V1 = obj``, declare, extract, then sync (or, with ``sync=False``,
    return V1 itself, for tensors), clean up; returns ``py_V1``."""
    cleanup = c_type.c_cleanup(NAME, SUB)
    code = (
        f"py_{NAME} = obj;\nPy_INCREF(py_{NAME});\n"
        + c_type.c_declare(NAME, SUB, check_input)
        + c_type.c_init(NAME, SUB)
        + "{\n"
        + c_type.c_extract(NAME, SUB, check_input, **kwargs)
    )
    if sync:
        code += c_type.c_sync(NAME, SUB)
    else:
        code += f"Py_DECREF(py_{NAME});\npy_{NAME} = (PyObject*){NAME};\nPy_INCREF(py_{NAME});\n"
    code += "}\n" + cleanup
    return code, cleanup


def sync_body(c_type: Any) -> tuple[str, str]:
    """V1 = obj (NULL for None), ``py_V1 = None``, sync, clean up; returns ``py_V1``."""
    cleanup = c_type.c_cleanup(NAME, SUB)
    code = (
        f"py_{NAME} = Py_None;\nPy_INCREF(py_{NAME});\n"
        + c_type.c_declare(NAME, SUB)
        + c_type.c_init(NAME, SUB)
        + f"if (obj != Py_None) {{\n    {NAME} = (PyArrayObject*)obj;\n    Py_INCREF({NAME});\n}}\n"
        + "{\n"
        + c_type.c_sync(NAME, SUB)
        + "}\n"
        + cleanup
    )
    return code, cleanup


def literal_body(c_type: Any, value: Any) -> tuple[str, str]:
    """V1 = the type's C literal for ``value`` (checked at compile time to
    have exactly the type's C type), then sync; returns ``py_V1``."""
    literal = c_type.c_literal(value)
    element = c_type.c_element_type()
    code = (
        c_type.c_declare(NAME, SUB)
        + c_type.c_init(NAME, SUB)
        + f"static_assert(std::is_same<decltype({literal}), {element}>::value, "
        f'"{literal} is not a {element}");\n'
        + f"{NAME} = {literal};\n"
        + "{\n"
        + c_type.c_sync(NAME, SUB)
        + "}\n"
    )
    return code, ""


def harness_source(module_name: str, c_type: Any, functions: Mapping[str, tuple[str, str]]) -> str:
    """The source of an extension ``module_name`` with one METH_O function
    per entry of ``functions`` (name -> (body, cleanup on failure)), using
    ``c_type``'s headers and init code."""
    headers = "".join(f"#include {h}\n" for h in c_type.c_headers())
    init = "\n".join(c_type.c_init_code())
    table = "".join(f'    {{"{name}", (PyCFunction){name}, METH_O, NULL}},\n' for name in functions)
    return (
        _PRELUDE
        + headers
        + "".join(_function(name, body, cleanup) for name, (body, cleanup) in functions.items())
        + f"static PyMethodDef methods[] = {{\n{table}    {{NULL, NULL, 0, NULL}},\n}};\n"
        + f'static struct PyModuleDef module_def = {{PyModuleDef_HEAD_INIT, "{module_name}", '
        "NULL, -1, methods, NULL, NULL, NULL, NULL};\n"
        + f"PyMODINIT_FUNC PyInit_{module_name}(void) {{\n    {init}\n"
        "    return PyModule_Create(&module_def);\n}\n"
    )


@contextlib.contextmanager
def compiled(
    cache_dir: Path, module_name: str, c_type: Any, functions: Mapping[str, tuple[str, str]]
) -> Iterator[ModuleType]:
    """Compiles the harness into ``cache_dir`` (not the user's cache) and
    yields the imported module."""
    source = harness_source(module_name, c_type, functions)
    job = cmodule.extension_job(include_dirs=[np.get_include()], flags=FLAGS)
    with opweave.config.change_flags(compiledir=str(cache_dir)):
        yield cmodule.compile_extension(source, module_name, job).module

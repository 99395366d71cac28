"""Cells: one C++ struct per distinct type code, holding a variable's C value.

A variable's type is asked for its code under the fixed name ``V`` (so the
code never depends on where the variable sits in the graph), and the code
becomes a struct::

    struct cell_<hash> {
        PyObject* py_V;
        <c_declare>                      // e.g. PyArrayObject* V; typedef ... dtype_V;
        int take(PyObject* object);      // py_V = object (a new reference); c_extract
        int take_output(PyObject** slot);  // what the caller offers there, or c_init
        int init_empty();                // py_V = None; c_init
        int sync();                      // c_sync
        void release();                  // c_cleanup; drop py_V
    };

The graph holds one instance per variable and calls these functions, so the
type's code is compiled once per distinct text, however many variables use
it. Functions return 0, or non-zero with a Python error set (the type's
``%(fail)s``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opweave._sha256 import Sha256
from opweave.graph.utils import not_defined_errors
from opweave.link.c.hooks import call_hook

__all__ = ["CELL_NAME", "Cells", "code_hash", "step_function"]

CELL_NAME = "V"
_HOOKS = ("c_declare", "c_extract", "c_cleanup", "c_init", "c_sync")
_OPTIONAL = ("c_init", "c_sync")
_END = "}\n__label_1:\nreturn __failure;\n}\n"  # closes a function body
# A cell's take, take_output, sync and release are compiled once per
# translation unit, not inlined into each step and export that calls them: a
# module with node exports (c|py) calls them from both, and their code (a
# type's extract and sync code) would be compiled for each (docs/cache.md).
_OUT_OF_LINE = "__attribute__((noinline)) "
_STORE = "for (int i = 0; i < a[2]; ++i) {\nopweave_store(o + a[3 + i], c.py_V);\n}\n"
# role -> (is an undo function, body); the body's `{cell}` is the struct's name.
_ROLES = {
    # graph inputs and constants: takes values[position]
    "take": (False, "(void)o;\nreturn g->{cell}_v[a[0]].take(v[a[1]]);\n"),
    # intermediate results
    "empty": (False, "(void)v;\n(void)o;\nreturn g->{cell}_v[a[0]].init_empty();\n"),
    # node outputs that are graph outputs: what the caller offers in the first slot
    "take_output": (False, "(void)v;\nreturn g->{cell}_v[a[0]].take_output(o + a[3]);\n"),
    # constants that are graph outputs
    "store": (False, "(void)v;\n{cell}& c = g->{cell}_v[a[0]];\n" + _STORE + "return 0;\n"),
    # undoes take, empty: stores graph inputs that are outputs, when nothing
    # failed (not at cleanup, where there are no outputs: o is NULL)
    "drop": (
        True,
        "{cell}& c = g->{cell}_v[a[0]];\nif (failure == 0 && o != NULL) {\n"
        + _STORE
        + "}\nc.release();\nreturn 0;\n",
    ),
    # undoes take_output: c_sync and stores the output, when nothing failed
    "finish": (
        True,
        "{cell}& c = g->{cell}_v[a[0]];\nint status = 0;\nif (failure == 0) {\n"
        "status = c.sync();\nif (status == 0) {\n"
        + _STORE
        + "}\n}\nc.release();\nreturn status;\n",
    ),
}


def step_function(name: str, body: str, undo: bool = False) -> str:
    """A step or undo function (see include/opweave/module_source.hpp)."""
    params = "int failure, PyObject** o" if undo else "PyObject* const* v, PyObject** o"
    return f"static int {name}(opweave_graph* g, const int* a, {params}) {{\n{body}}}\n"


_SUB = {"fail": "OPWEAVE_FAIL(1)", "id": "1", "failure_var": "__failure", "py_ptr": "py_V"}

# A _core.CodeFragment's and a _core.Step's fields: the core takes any such
# tuple, and a plain one costs a tenth of a named one to make.
Fragment = tuple[str, int]
StepFields = tuple[int, str, str, list[int]]
Fragmenter = Callable[[Any, str], Fragment]


def code_hash(*texts: str) -> str:
    """16 hex digits naming a piece of generated code by its text."""
    digest = Sha256()
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


class Cells:
    """The cell structs of one module, each defined once."""

    def __init__(self, fragment: Fragmenter) -> None:
        self.fragment = fragment
        self.counts: dict[str, int] = {}  # struct name -> instances in the graph
        self.roles: dict[str, list[str]] = {}  # struct name -> step functions used
        self.names: dict[str, str] = {}  # hook texts -> struct name
        self.types: dict[str, Any] = {}  # struct name -> (type, check_input)
        self.definitions: dict[str, list[Fragment]] = {}  # struct name -> its text
        self.synced: set[str] = set()  # the structs that have sync() (their type's c_sync)

    def cell(self, variable: Any, check: bool, what: str, needs: tuple[str, ...] = ()) -> str:
        """The struct for ``variable``'s type code (checked or not), defined
        on first use; ``what`` names the variable in errors. ``needs`` lists
        the optional hooks (``c_init``, ``c_sync``) the variable's role
        requires; a type may leave out the others (params have no c_sync)."""
        kind = variable.type
        texts = [
            self.hook_text(kind, hook, what, check, required=hook not in _OPTIONAL or hook in needs)
            for hook in _HOOKS
        ]
        key = "\0".join("\1" if text is None else text for text in texts)
        name = self.names.get(key)
        if name is None:
            name = f"cell_{code_hash(key)}"
            self.names[key] = name
            self.types[name] = (kind, check)
            parts = [
                None if text is None else self.fragment(text, f"{what} {hook}")
                for hook, text in zip(_HOOKS, texts, strict=True)
            ]
            declare, extract, cleanup, init, sync = parts
            # c_declare, c_extract and c_cleanup are required: hook_text raised if missing.
            assert declare is not None and extract is not None and cleanup is not None
            self.definitions[name] = self._define(name, declare, extract, cleanup, init, sync)
            if sync is not None:
                self.synced.add(name)
        return name

    def place(self, name: str, roles: tuple[str, ...]) -> int:
        """A new instance of cell ``name`` in the graph (its index in the
        array ``<name>_v``), whose steps call the functions ``roles``."""
        index = self.counts.get(name, 0)
        self.counts[name] = index + 1
        used = self.roles.setdefault(name, [])
        used.extend(role for role in roles if role not in used)
        return index

    def members(self) -> list[Fragment]:
        """The graph struct's arrays of cells."""
        return [(f"{name} {name}_v[{count}];\n", -1) for name, count in self.counts.items()]

    def step_functions(self) -> list[list[Fragment]]:
        """The step functions the graph's steps call, per cell and role.
        Their ``args`` are ``[index, position, n_slots, slots...]``."""
        return [
            [(step_function(f"{role}_{name}", _ROLES[role][1].replace("{cell}", name), undo), -1)]
            for name, roles in self.roles.items()
            for role in roles
            for undo in [_ROLES[role][0]]
        ]

    @staticmethod
    def hook_text(kind: Any, hook: str, what: str, check: bool, required: bool) -> str | None:
        """The text of one type hook under the cell's name; None when an
        optional hook is not implemented."""
        try:
            text = call_hook(kind, hook, CELL_NAME, dict(_SUB), default="", check_input=check)
        except not_defined_errors(NotImplementedError):
            if required:
                raise
            return None
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{what} {hook} must return a string, got {type(text).__name__}")
        return text or ""

    def _define(
        self,
        name: str,
        declare: Fragment,
        extract: Fragment,
        cleanup: Fragment,
        init: Fragment | None,
        sync: Fragment | None,
    ) -> list[Fragment]:
        parts = [
            (f"struct {name} {{\nPyObject* py_V;\n", -1),
            declare,
            (
                f"{_OUT_OF_LINE}int take(PyObject* __object) {{\nint __failure = 0;\n"
                "py_V = __object;\nPy_INCREF(py_V);\n{\n",
                -1,
            ),
            extract,
            (_END, -1),
        ]
        if init is not None:
            parts += [
                (
                    f"{_OUT_OF_LINE}int take_output(PyObject** __slot) {{\n"
                    "PyObject* __object = *__slot;\n*__slot = NULL;\n"
                    "if (__object != NULL && __object != Py_None) {\n"
                    "int __status = take(__object);\nPy_DECREF(__object);\nreturn __status;\n}\n"
                    "Py_XDECREF(__object);\nreturn init_empty();\n}\n"
                    "int init_empty() {\nint __failure = 0;\n"
                    "py_V = Py_None;\nPy_INCREF(py_V);\n{\n",
                    -1,
                ),
                init,
                (_END, -1),
            ]
        if sync is not None:
            parts += [
                (f"{_OUT_OF_LINE}int sync() {{\nint __failure = 0;\n{{\n", -1),
                sync,
                (_END, -1),
            ]
        return [
            *parts,
            (f"{_OUT_OF_LINE}void release() {{\nint __failure = 0;\n{{\n", -1),
            cleanup,
            ("}\n__label_1:\n(void)__failure;\nPy_XDECREF(py_V);\n}\n};\n", -1),
        ]

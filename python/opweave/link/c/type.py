"""Types with C code: :class:`CType` and :class:`Generic` (any Python object).

The enumerations (:class:`EnumType`, :class:`EnumList`, :class:`CEnumType`)
live in :mod:`opweave.link.c.enum_type` and are importable from here too, as
in PyTensor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opweave.graph.type import Type
from opweave.graph.utils import EqualByProps
from opweave.link.c.interface import CLinkerType

if TYPE_CHECKING:
    from opweave.link.c.enum_type import CEnumType, EnumList, EnumType

__all__ = ["CDataType", "CEnumType", "CType", "EnumList", "EnumType", "Generic", "generic"]


class CType(Type, CLinkerType):
    """A :class:`~opweave.graph.type.Type` with a C representation."""


class Generic(CType):
    """Any Python object; in C it is a ``PyObject*`` (a new reference)."""

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        return data

    def is_valid_value(self, data: Any, strict: bool = True) -> bool:
        return True

    def c_declare(self, name: str, sub: dict[str, str], check_input: bool = True) -> str:
        return f"PyObject* {name};\n"

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        return f"{name} = NULL;\n"

    def c_extract(
        self, name: str, sub: dict[str, str], check_input: bool = True, **kwargs: Any
    ) -> str:
        return f"Py_INCREF(py_{name});\n{name} = py_{name};\n"

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        return f"Py_XDECREF({name});\n{name} = NULL;\n"

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        return (
            f"Py_XDECREF(py_{name});\n"
            f"py_{name} = {name} ? {name} : Py_None;\n"
            f"Py_INCREF(py_{name});\n"
        )

    def c_code_cache_version(self) -> tuple[Any, ...]:
        return (1,)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __str__(self) -> str:
        return "generic"


generic = Generic()


class CDataType(EqualByProps, CType):
    """A C pointer of type ``ctype`` (e.g. ``"void *"``), held in Python by
    a capsule.

    ``freefunc`` names a C function ``void freefunc(ctype)`` (declared by
    ``headers`` or by an op's support code) that frees a pointer. A pointer
    an op stores in an output is owned by the graph until it leaves as a
    capsule, which then owns it and calls ``freefunc`` when it dies; a
    pointer that never leaves (an intermediate result) is freed at the end
    of the call. Pointers read from input capsules are borrowed.

    ``headers``, ``header_dirs``, ``libraries``, ``lib_dirs`` and
    ``compile_args`` feed the matching hooks; ``extra_support_code`` is
    added to the module; ``version`` enters the cache key (None: the type's
    text only).
    """

    __props__ = (
        "ctype",
        "freefunc",
        "headers",
        "header_dirs",
        "libraries",
        "lib_dirs",
        "compile_args",
        "extra_support_code",
        "version",
    )

    def __init__(
        self,
        ctype: str,
        freefunc: str | None = None,
        headers: Sequence[str] = (),
        header_dirs: Sequence[str] = (),
        libraries: Sequence[str] = (),
        lib_dirs: Sequence[str] = (),
        compile_args: Sequence[str] = (),
        extra_support_code: str = "",
        version: Any = None,
    ) -> None:
        if not isinstance(ctype, str) or not ctype.strip():
            raise TypeError(f"CDataType: ctype must be a C type name, got {ctype!r}")
        if freefunc is not None and not _C_NAME.match(freefunc):
            raise ValueError(f"CDataType: freefunc must be a C function name, got {freefunc!r}")
        self.ctype = ctype
        self.freefunc = freefunc
        self.headers = tuple(headers)
        self.header_dirs = tuple(header_dirs)
        self.libraries = tuple(libraries)
        self.lib_dirs = tuple(lib_dirs)
        self.compile_args = tuple(compile_args)
        self.extra_support_code = extra_support_code
        self.version = version

    def __str__(self) -> str:
        return f"CDataType{{{self.ctype}, {self.freefunc}}}"

    __repr__ = __str__

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """A capsule (or None, the NULL pointer) as it is; TypeError otherwise."""
        if data is not None and type(data).__name__ != "PyCapsule":
            raise TypeError(f"{self} expects a capsule, got {type(data).__name__}")
        return data

    def values_eq(self, a: Any, b: Any) -> bool:
        return a is b

    # --- C side ----------------------------------------------------------------

    def c_headers(self, **kwargs: Any) -> list[str]:
        return list(self.headers)

    def c_header_dirs(self, **kwargs: Any) -> list[str]:
        return list(self.header_dirs)

    def c_libraries(self, **kwargs: Any) -> list[str]:
        return list(self.libraries)

    def c_lib_dirs(self, **kwargs: Any) -> list[str]:
        return list(self.lib_dirs)

    def c_compile_args(self, **kwargs: Any) -> list[str]:
        return list(self.compile_args)

    def c_support_code(self, **kwargs: Any) -> str:
        """The capsule destructor (it calls the ``freefunc`` kept as the
        capsule's context), then ``extra_support_code``."""
        return (
            "#ifndef OPWEAVE_CDATA_DESTRUCTOR\n#define OPWEAVE_CDATA_DESTRUCTOR\n"
            "typedef void (*opweave_cdata_free)(void*);\n"
            "static void opweave_cdata_destructor(PyObject* capsule) {\n"
            "    void* data = PyCapsule_GetPointer(capsule, NULL);\n"
            "    opweave_cdata_free release = "
            "reinterpret_cast<opweave_cdata_free>(PyCapsule_GetContext(capsule));\n"
            "    if (data != NULL && release != NULL) {\n        release(data);\n    }\n"
            "}\n#endif\n" + self.extra_support_code
        )

    def c_declare(self, name: str, sub: dict[str, str], check_input: bool = True) -> str:
        # `<name>_borrowed` is the pointer an input capsule holds: not ours.
        return f"{self.ctype} {name};\n{self.ctype} {name}_borrowed;\n"

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        return f"{name} = NULL;\n{name}_borrowed = NULL;\n"

    def c_extract(
        self, name: str, sub: dict[str, str], check_input: bool = True, **kwargs: Any
    ) -> str:
        return (
            f"if (py_{name} == Py_None) {{\n    {name} = NULL;\n}} else {{\n"
            f"    if (!PyCapsule_CheckExact(py_{name})) {{\n"
            f'        PyErr_Format(PyExc_TypeError, "expected a capsule of {self.ctype}, got %s", '
            f"Py_TYPE(py_{name})->tp_name);\n        {sub['fail']}\n    }}\n"
            f"    {name} = ({self.ctype})PyCapsule_GetPointer(py_{name}, NULL);\n"
            f"    if ({name} == NULL) {{\n        {sub['fail']}\n    }}\n}}\n"
            f"{name}_borrowed = {name};\n"
        )

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        """Wraps a pointer the graph made in a capsule, which takes it over."""
        release = f"({self.freefunc})" if self.freefunc else "NULL"
        free_on_failure = f"        {self.freefunc}({name});\n" if self.freefunc else ""
        return (
            f"if ({name} != {name}_borrowed) {{\n"
            f"    Py_XDECREF(py_{name});\n"
            f"    if ({name} == NULL) {{\n"
            f"        py_{name} = Py_None;\n        Py_INCREF(Py_None);\n"
            "    } else {\n"
            f"        py_{name} = PyCapsule_New((void*){name}, NULL, opweave_cdata_destructor);\n"
            f"        if (py_{name} != NULL && PyCapsule_SetContext(py_{name}, "
            f"reinterpret_cast<void*>({release})) != 0) {{\n"
            f"            Py_CLEAR(py_{name});\n        }}\n"
            f"        if (py_{name} == NULL) {{\n{free_on_failure}"
            f"            {name} = NULL;\n            {name}_borrowed = NULL;\n"
            f"            py_{name} = Py_None;\n            Py_INCREF(Py_None);\n"
            f"            {sub['fail']}\n        }}\n    }}\n"
            f"    {name}_borrowed = {name};\n}}\n"
        )

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        """Frees a pointer the graph made that no capsule took over."""
        free = (
            f"if ({name} != NULL && {name} != {name}_borrowed) {{\n"
            f"    {self.freefunc}({name});\n}}\n"
            if self.freefunc
            else ""
        )
        return free + f"{name} = NULL;\n{name}_borrowed = NULL;\n"

    def c_code_cache_version(self) -> tuple[Any, ...]:
        return (1,) if self.version is None else (1, self.version)


_C_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_ENUM_NAMES = ("CEnumType", "EnumList", "EnumType")


def __getattr__(name: str) -> Any:
    # The enumerations subclass CType, so enum_type imports this module; they
    # are looked up on first use to keep either import order working.
    if name in _ENUM_NAMES:
        from opweave.link.c import enum_type

        return getattr(enum_type, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

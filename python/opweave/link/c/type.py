"""Types with C code: :class:`CType` and :class:`Generic` (any Python object).

The enumerations (:class:`EnumType`, :class:`EnumList`, :class:`CEnumType`)
live in :mod:`opweave.link.c.enum_type` and are importable from here too, as
in PyTensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opweave.graph.type import Type
from opweave.link.c.interface import CLinkerType

if TYPE_CHECKING:
    from opweave.link.c.enum_type import CEnumType, EnumList, EnumType

__all__ = ["CEnumType", "CType", "EnumList", "EnumType", "Generic", "generic"]


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


_ENUM_NAMES = ("CEnumType", "EnumList", "EnumType")


def __getattr__(name: str) -> Any:
    # The enumerations subclass CType, so enum_type imports this module; they
    # are looked up on first use to keep either import order working.
    if name in _ENUM_NAMES:
        from opweave.link.c import enum_type

        return getattr(enum_type, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

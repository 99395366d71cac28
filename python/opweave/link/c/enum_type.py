"""Enumerations usable as C types: :class:`EnumType`, :class:`EnumList` and
:class:`CEnumType`.

An enumeration is an immutable ``dict`` of constant names (``^[A-Z][A-Z0-9_]*$``)
to numbers. In C a value is a plain scalar of the enumeration's ``ctype``; the
support code ``#define``s every constant, so op code can write
``switch (%(params)s) { case ADD: ... }``. Each constant may also have an
alias, a free-form string that :meth:`EnumType.filter` accepts in place of the
value (``"+"`` for ``ADD``).

Enumerations are mostly used as an op's ``params_type`` (alone or inside a
:class:`~opweave.link.c.params_type.ParamsType`). They cannot be the type of
an op's output: their ``c_sync`` raises.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import numpy as np

from opweave.link.c._enum_c_code import (
    CTYPES,
    c_string,
    number,
    read_number,
    support_code,
    to_string_code,
)
from opweave.link.c.type import CType

__all__ = ["CEnumType", "EnumList", "EnumType"]

_CONSTANT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names a generated module already uses: its variables (V1, V2, ...) and the
# prefixes of NumPy's, Python's and opweave's own macros.
_TAKEN_NAME = re.compile(r"^(V[0-9]+|NPY_.*|PY_.*|OPWEAVE_.*)$")


class EnumType(CType, dict):  # type: ignore[misc]
    """An enumeration of named numeric constants:
    ``EnumType(ADD=1, SUB=2, MUL=("*", 3), ctype="int")``.

    Constant names match ``^[A-Z][A-Z0-9_]*$`` (AttributeError otherwise) and
    are attributes of the type (``op_type.ADD``). A value is an int or a float
    (a bool becomes an int; anything else is a TypeError), or a tuple
    ``(alias, value)`` giving the constant a string alias, unique and not equal
    to any constant name (TypeError). ``ctype`` is the C scalar type of a value
    (``"double"`` by default; an integer type needs integer values that fit
    it); ``cname`` names the enumeration in C diagnostics (default: ``ctype``
    with spaces as underscores).

    In C a variable is a ``ctype`` scalar, and ``c_support_code`` has one
    ``#define NAME value`` per constant. Python values are the constants'
    numbers; :meth:`filter` also accepts an alias or a constant name.
    """

    # The constants are #defined in the module, so their names must not be
    # names the module already uses.
    _defines_names = True

    def __init__(
        self, *, ctype: str = "double", cname: str | None = None, **constants: Any
    ) -> None:
        if isinstance(ctype, str):
            ctype = " ".join(ctype.split())
        if ctype not in CTYPES:
            raise ValueError(
                f"{type(self).__name__}: unsupported ctype {ctype!r}; use one of "
                + ", ".join(sorted(CTYPES))
            )
        if cname is None:
            cname = ctype.replace(" ", "_")
        if not isinstance(cname, str) or not _C_IDENTIFIER.match(cname):
            raise ValueError(f"{type(self).__name__}: cname must be a C identifier, got {cname!r}")
        if not constants:
            raise ValueError(f"{type(self).__name__} needs at least one constant")
        scalar = CTYPES[ctype]
        values: dict[str, int | float] = {}
        aliases: dict[str, str] = {}
        for name, given in constants.items():
            if not _CONSTANT_NAME.match(name):
                raise AttributeError(
                    f"{type(self).__name__}: invalid constant name {name!r}: it must match "
                    f"{_CONSTANT_NAME.pattern} (an upper-case C identifier)"
                )
            if self._defines_names and _TAKEN_NAME.match(name):
                raise AttributeError(
                    f"{type(self).__name__}: constant name {name!r} is taken in generated "
                    "modules (V<n> variables, NPY_, PY_ and OPWEAVE_ macros); choose another"
                )
            if isinstance(given, tuple):
                if len(given) != 2 or not isinstance(given[0], str) or not given[0]:
                    raise TypeError(
                        f"{type(self).__name__}: constant {name} must be a number or "
                        f"(alias, value) with a non-empty string alias, got {given!r}"
                    )
                alias, given = given
                if alias in constants:
                    raise TypeError(
                        f"{type(self).__name__}: alias {alias!r} of {name} is also a constant name"
                    )
                if alias in aliases:
                    raise TypeError(
                        f"{type(self).__name__}: alias {alias!r} is used by both "
                        f"{aliases[alias]} and {name}"
                    )
                aliases[alias] = name
            values[name] = number(name, given, scalar, ctype)
        dict.__init__(self, values)
        self.__dict__.update(ctype=ctype, cname=cname, aliases=aliases, _scalar=scalar)

    # --- an immutable dict -------------------------------------------------------

    def _immutable(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(f"{type(self).__name__} is immutable")

    __setitem__ = __delitem__ = _immutable
    clear = pop = popitem = setdefault = update = _immutable  # type: ignore[assignment]
    __ior__ = _immutable  # type: ignore[assignment]

    def __setattr__(self, name: str, value: Any) -> None:
        self._immutable()

    def __getattr__(self, name: str) -> Any:
        if name in self:
            return self[name]
        raise AttributeError(f"{type(self).__name__} has no constant or attribute {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        constants = {
            name: (self.alias_of(name), value) if self.alias_of(name) else value
            for name, value in self.items()
        }
        return (_rebuild_enum, (type(self), self.ctype, self.cname, constants))

    def _key(self) -> tuple[Any, ...]:
        # Values compare as numbers, as in PyTensor (True == 1 == 1.0).
        items = tuple(sorted(self.items()))
        return (self.ctype, self.cname, items, tuple(sorted(self.aliases.items())))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((type(self), self._key()))

    def _describe(self, name: str) -> str:
        alias = self.alias_of(name)
        return f"{name}={(alias, self[name]) if alias else self[name]!r}"

    def __str__(self) -> str:
        names = ", ".join(self._describe(name) for name in self)
        return f"{type(self).__name__}<{self.ctype}>({names})"

    __repr__ = __str__

    # --- constants and aliases -------------------------------------------------------

    def alias_of(self, name: str) -> str | None:
        """The alias of constant ``name``, or None if it has none."""
        for alias, constant in self.aliases.items():
            if constant == name:
                return alias
        return None

    def fromalias(self, alias: str) -> int | float:
        """The value of the constant with this alias, or of the constant named
        ``alias`` if no constant has that alias. Raises KeyError otherwise."""
        if alias in self.aliases:
            return self[self.aliases[alias]]
        if alias in self:
            return self[alias]
        raise KeyError(
            f"{self} has no constant with alias or name {alias!r} "
            f"(aliases: {', '.join(sorted(self.aliases)) or 'none'})"
        )

    def has_alias(self, alias: str) -> bool:
        """True if some constant has the alias ``alias``."""
        return alias in self.aliases

    def get_aliases(self) -> tuple[str, ...]:
        """Every alias, sorted."""
        return tuple(sorted(self.aliases))

    # --- values ----------------------------------------------------------------

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """``data`` as the value of one of the constants, or TypeError.

        ``strict``: ``data`` must be an int or float equal to a constant's
        value. Otherwise a bool, a NumPy number, an alias or a constant name
        is accepted too."""
        value = data
        if not strict:
            if isinstance(data, str):
                try:
                    return self.fromalias(data)
                except KeyError as error:
                    raise TypeError(error.args[0]) from None
            if isinstance(data, (bool, np.bool_, np.integer)):
                value = int(data)
            elif isinstance(data, np.floating):
                value = float(data)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            for constant in self.values():
                if constant == value:
                    return constant
        raise TypeError(
            f"{self}: expected the value of one of its constants"
            + ("" if strict else ", an alias or a constant name")
            + f", got {data!r}"
        )

    def values_eq(self, a: Any, b: Any) -> bool:
        """True if ``a`` and ``b`` name the same value (each may be a value,
        an alias or a constant name)."""
        return bool(self._normalized(a) == self._normalized(b))

    def _normalized(self, value: Any) -> Any:
        try:
            return self.filter(value)
        except TypeError:
            return value

    # --- C side ----------------------------------------------------------------

    def c_headers(self, **kwargs: Any) -> list[str]:
        """NumPy's header when ``ctype`` is a NumPy type (``npy_...``)."""
        return ["<numpy/arrayobject.h>"] if self.ctype.startswith("npy_") else []

    def c_support_code(self, **kwargs: Any) -> str:
        """One ``#define NAME value`` per constant, sorted by name (see
        :func:`._enum_c_code.support_code`), and with ``config.cmodule__debug``
        the function naming a constant (:func:`._enum_c_code.to_string_code`)."""
        return support_code(self) + to_string_code(self)

    def c_declare(self, name: str, sub: dict[str, str], check_input: bool = True) -> str:
        """``<ctype> <name>;``"""
        return f"{self.ctype} {name};\n"

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        """Sets ``<name>`` to zero."""
        return f"{name} = ({self.ctype})0;\n"

    def c_extract(
        self, name: str, sub: dict[str, str], check_input: bool = True, **kwargs: Any
    ) -> str:
        """Reads ``py_<name>`` (a Python number). A non-number raises
        TypeError; when checking, a number that is no constant's value raises
        ValueError."""
        code = read_number(self, name, sub["fail"], check_input)
        return code + f"{name} = ({self.ctype})value_{name};\n}}\n"

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        """Raises NotImplementedError: an enumeration cannot be an output."""
        raise NotImplementedError(
            f"{type(self).__name__} has no c_sync: an enumeration cannot be the type of an "
            "op's output (use it as a params_type or an input)"
        )

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """The version of the C code, with everything that shapes it."""
        return (1, *self._key())


class EnumList(EnumType):
    """An enumeration whose values are ``0, 1, ..., n-1`` in the order given:
    ``EnumList("ADD", ("SUB", "-"), ctype="int")``. Each entry is a constant
    name or a ``(name, alias)`` tuple."""

    def __init__(
        self, *names: str | tuple[str, str], ctype: str = "int", cname: str | None = None
    ) -> None:
        constants: dict[str, Any] = {}
        for index, entry in enumerate(names):
            value: int | tuple[str, int]  # the index, or (alias, index)
            if isinstance(entry, tuple):
                if len(entry) != 2:
                    raise TypeError(
                        f"{type(self).__name__}: an entry must be a name or (name, alias), "
                        f"got {entry!r}"
                    )
                name, value = entry[0], (entry[1], index)
            else:
                name, value = entry, index
            if not isinstance(name, str):
                raise TypeError(
                    f"{type(self).__name__}: a constant name must be a string, got {name!r}"
                )
            if name in constants:
                raise ValueError(f"{type(self).__name__}: constant {name} is given twice")
            constants[name] = value
        super().__init__(ctype=ctype, cname=cname, **constants)

    def __reduce__(self) -> tuple[Any, ...]:
        entries = [(n, self.alias_of(n)) if self.alias_of(n) else n for n in self]
        return (_rebuild_list, (type(self), tuple(entries), self.ctype, self.cname))


class CEnumType(EnumList):
    """An :class:`EnumList` whose C values are constants defined in C headers
    (give them through an op's ``c_headers``/``c_header_dirs``):
    ``CEnumType("MILLION", ("BILLION", "billion"), ctype="size_t")``.

    In Python a value is the constant's index; the C variable holds the
    header's constant of that name. No ``#define`` is emitted."""

    _defines_names = False  # the names are the user's own C constants

    def c_support_code(self, **kwargs: Any) -> str:
        """Nothing but the debug helper (see ``EnumType``): the constants
        come from the user's headers."""
        return to_string_code(self)

    def c_extract(
        self, name: str, sub: dict[str, str], check_input: bool = True, **kwargs: Any
    ) -> str:
        """Reads the index ``py_<name>`` and sets ``<name>`` to the C constant
        it stands for; an index out of range raises ValueError."""
        what = c_string(f"{type(self).__name__} {self.cname}")
        cases = "".join(
            f"case {index}: {name} = ({self.ctype})({constant}); break;\n"
            for constant, index in self.items()
        )
        return (
            read_number(self, name, sub["fail"], check_input=False, index=True)
            + f"switch (value_{name}) {{\n{cases}default:\n"
            f'    PyErr_Format(PyExc_ValueError, "{what}: no constant with index %lld", '
            f"(long long)value_{name});\n"
            f"    {sub['fail']}\n"
            "}\n}\n"
        )

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """The version of the C code, with everything that shapes it."""
        return (1, super().c_code_cache_version())


def _rebuild_enum(
    cls: type[EnumType], ctype: str, cname: str, constants: dict[str, Any]
) -> EnumType:
    return cls(ctype=ctype, cname=cname, **constants)


def _rebuild_list(
    cls: type[EnumList], entries: tuple[Any, ...], ctype: str, cname: str
) -> EnumList:
    return cls(*entries, ctype=ctype, cname=cname)

"""Several C types as one: :class:`ParamsType` and its values, :class:`Params`.

An op's params are values that C code needs but that are not graph inputs:
flags, coefficients, modes. The op sets ``params_type`` and returns the values
from ``get_params(node)``; the C linker extracts them once, when the compiled
function is created, and passes their C variable to ``c_code`` as
``sub["params"]``. A ``ParamsType`` gathers named fields of any C types into
a C++ struct, so op code reads ``%(params)s->alpha``.

Because params are data, not code, two ops that differ only in their params
values generate the same source, and share one compiled module.

    params_type = ParamsType(alpha=float64, mode=EnumList("ADD", "SUB"))
    params = params_type.get_params(alpha=2.0, mode="SUB")   # a Params
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opweave._sha256 import sha256_hex
from opweave.link.c._flags import uniq_flags
from opweave.link.c._params_c_code import (
    ERROR_CONTEXT,
    check_field_name,
    extract_code,
    struct_members,
)

# Pickles made before _params_value.py existed name _rebuild_params here.
from opweave.link.c._params_value import Params, _rebuild_params, mismatch  # noqa: F401
from opweave.link.c.enum_type import EnumType
from opweave.link.c.hooks import as_code_list, call_hook
from opweave.link.c.type import CType

__all__ = ["Params", "ParamsType"]

_STRUCT_MARK = "/* ParamsType "  # starts the definition of a struct


def _sha256(text: str) -> str:
    return sha256_hex(text.encode())


class ParamsType(CType):
    """A C struct of named fields, each of a C type:
    ``ParamsType(alpha=float64, shape=TensorType("int64", (None,)), mode=generic)``.

    Field names must be C identifiers, not C or C++ keywords (AttributeError);
    at least one field is needed (ValueError) and each type must be a
    :class:`~opweave.link.c.type.CType` (TypeError). ``fields`` are sorted by
    name and ``types`` follow them. Constants of :class:`EnumType` fields are
    attributes of the ParamsType (``params_type.ADD``); their names and aliases
    must be unique across the fields (AttributeError).

    In C a variable is a pointer to the struct; op code reads
    ``%(params)s->alpha``. Values are :class:`Params`. A ParamsType cannot be
    the type of an op's output.
    """

    def __init__(self, **fields: CType) -> None:
        if not fields:
            raise ValueError("ParamsType needs at least one field")
        for name, field_type in fields.items():
            check_field_name(name)
            if not isinstance(field_type, CType):
                raise TypeError(
                    f"ParamsType: field {name!r} must be a CType instance, got "
                    f"{type(field_type).__name__} ({field_type!r})"
                )
        self.fields: tuple[str, ...] = tuple(sorted(fields))
        self.types: tuple[CType, ...] = tuple(fields[f] for f in self.fields)
        self.length = len(self.fields)
        self._enum_values: dict[str, Any] = {}
        self._enum_aliases: dict[str, Any] = {}
        self._collect_enums()
        self._struct: tuple[str, str] | None = None

    def _collect_enums(self) -> None:
        owners: dict[str, str] = {}  # constant name or alias -> field
        for field, field_type in zip(self.fields, self.types, strict=True):
            if not isinstance(field_type, EnumType):
                continue
            for name, value in field_type.items():
                if name in owners:
                    raise AttributeError(
                        f"ParamsType: enum constant {name} of field {field!r} is also a "
                        f"constant or alias of field {owners[name]!r}"
                    )
                owners[name] = field
                self._enum_values[name] = value
            for alias, name in field_type.aliases.items():
                if alias in owners:
                    raise AttributeError(
                        f"ParamsType: alias {alias!r} of field {field!r} is also a "
                        f"constant or alias of field {owners[alias]!r}"
                    )
                owners[alias] = field
                self._enum_aliases[alias] = field_type[name]

    # --- description --------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_enum_values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__} has no attribute or enum constant {name!r}")

    def __eq__(self, other: object) -> bool:
        return (
            type(self) is type(other)
            and self.fields == other.fields  # type: ignore[attr-defined]
            and self.types == other.types  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((type(self), self.fields, self.types))

    def __str__(self) -> str:
        return "ParamsType(" + ", ".join(f"{f}={t}" for f, t in self.items()) + ")"

    __repr__ = __str__

    def items(self) -> list[tuple[str, CType]]:
        """``(field, type)`` pairs, sorted by field."""
        return list(zip(self.fields, self.types, strict=True))

    def has_type(self, field_type: Any) -> bool:
        """True if some field has type ``field_type``."""
        return field_type in self.types

    def get_type(self, field: str) -> CType:
        """The type of ``field`` (KeyError if there is no such field)."""
        if field not in self.fields:
            raise KeyError(f"{self} has no field {field!r}")
        return self.types[self.fields.index(field)]

    def get_field(self, field_type: Any) -> str:
        """The first field (by name) of type ``field_type`` (KeyError if none)."""
        if field_type not in self.types:
            raise KeyError(f"{self} has no field of type {field_type}")
        return self.fields[self.types.index(field_type)]

    def get_enum(self, name: str) -> Any:
        """The value of the enum constant ``name`` of one of the enum fields
        (AttributeError if none has it)."""
        if name not in self._enum_values:
            raise AttributeError(f"{self} has no enum constant {name!r}")
        return self._enum_values[name]

    def enum_from_alias(self, alias: str) -> Any:
        """The value of the enum constant with alias ``alias``, or of the
        constant named ``alias`` (AttributeError if neither exists)."""
        if alias in self._enum_aliases:
            return self._enum_aliases[alias]
        if alias in self._enum_values:
            return self._enum_values[alias]
        raise AttributeError(f"{self} has no enum constant with alias or name {alias!r}")

    def extended(self, **fields: CType) -> ParamsType:
        """A new ParamsType with these fields and ours (TypeError if one is
        already ours)."""
        clashes = sorted(set(fields) & set(self.fields))
        if clashes:
            raise TypeError(f"{self} already has the fields {', '.join(clashes)}")
        return ParamsType(**dict(self.items()), **fields)

    # --- values ----------------------------------------------------------------

    def params_of(self, op: Any) -> Params:
        """The value of this type that ``op`` carries as its params (the
        default ``get_params`` of an op asks its ``params_type``): each field
        from the op's attribute of that name; AttributeError names the
        attributes the op lacks."""
        missing = [field for field in self.fields if not hasattr(op, field)]
        if missing:
            raise AttributeError(
                f"{type(op).__name__}: missing attributes ({', '.join(missing)}) for "
                f"ParamsType {self}"
            )
        return self.get_params(op)

    def get_params(self, *objects: Any, **values: Any) -> Params:
        """A :class:`Params` taking each field from the attribute of that name
        of the objects (a later object wins) or from ``values`` (which win
        over the objects). Each value goes through its type's ``filter``
        (allowing downcasts). A field found nowhere raises AttributeError;
        an unknown keyword raises TypeError."""
        unknown = sorted(set(values) - set(self.fields))
        if unknown:
            raise TypeError(f"{self} has no fields {', '.join(unknown)}")
        found: dict[str, Any] = {}
        for obj in objects:
            for field in self.fields:
                if hasattr(obj, field):
                    found[field] = getattr(obj, field)
        found.update(values)
        missing = [f for f in self.fields if f not in found]
        if missing:
            raise AttributeError(f"{self}: no value for the fields {', '.join(missing)}")
        return Params(self, **self._filter_fields(found, strict=False, allow_downcast=True))

    def _filter_fields(
        self, values: Mapping[str, Any], strict: bool, allow_downcast: bool | None
    ) -> dict[str, Any]:
        filtered = {}
        for field, field_type in self.items():
            try:
                filtered[field] = field_type.filter(
                    values[field], strict=strict, allow_downcast=allow_downcast
                )
            except (TypeError, ValueError) as error:
                raise type(error)(f"{self}: field {field!r}: {error}") from error
        return filtered

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """``data`` as a :class:`Params` of this type, each field filtered by
        its type; TypeError if it cannot be.

        ``strict``: ``data`` must be a Params of this type with exact field
        values. Otherwise a Params of another type, a mapping (with exactly
        our fields) or any object with our fields as attributes is accepted.
        ``data`` itself is returned when no field changed."""
        if isinstance(data, Params):
            if strict and data.params_type != self:
                raise TypeError(f"{self} (strict) got a Params of {data.params_type}")
            values: Mapping[str, Any] = data
        elif strict:
            raise TypeError(f"{self} (strict) expects a Params, got {type(data).__name__}")
        elif isinstance(data, Mapping):
            values = data
        else:
            values = {f: getattr(data, f) for f in self.fields if hasattr(data, f)}
        missing = [f for f in self.fields if f not in values]
        unknown = sorted(set(values) - set(self.fields))
        if missing or unknown:
            raise mismatch(f"{self} cannot hold {type(data).__name__} {data!r}", missing, unknown)
        filtered = self._filter_fields(values, strict, allow_downcast)
        if (
            isinstance(data, Params)
            and data.params_type == self
            and all(filtered[f] is data[f] for f in self.fields)
        ):
            return data
        return Params(self, **filtered)

    def values_eq(self, a: Any, b: Any) -> bool:
        """True if every field of ``a`` and ``b`` is equal by its type's ``values_eq``."""
        return all(t.values_eq(a[f], b[f]) for f, t in self.items())

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        """True if every field is equal by its type's ``values_eq_approx``."""
        return all(t.values_eq_approx(a[f], b[f]) for f, t in self.items())

    # --- C side: what the module needs ----------------------------------------------

    def _collect(self, hook: str, kwargs: dict[str, Any]) -> list[str]:
        found: list[str] = []
        for field_type in self.types:
            found.extend(
                str(item) for item in call_hook(field_type, hook, default=[], **kwargs) or []
            )
        if hook.endswith("compile_args"):  # an option keeps its argument (--param a=1)
            return uniq_flags(found)
        return list(dict.fromkeys(found))

    def c_headers(self, **kwargs: Any) -> list[str]:
        """The fields' headers, and ``<new>`` (for ``std::nothrow``)."""
        return [*self._collect("c_headers", kwargs), "<new>"]

    def c_header_dirs(self, **kwargs: Any) -> list[str]:
        """The fields' header directories."""
        return self._collect("c_header_dirs", kwargs)

    def c_libraries(self, **kwargs: Any) -> list[str]:
        """The fields' libraries."""
        return self._collect("c_libraries", kwargs)

    def c_lib_dirs(self, **kwargs: Any) -> list[str]:
        """The fields' library directories."""
        return self._collect("c_lib_dirs", kwargs)

    def c_compile_args(self, **kwargs: Any) -> list[str]:
        """The fields' compiler flags."""
        return self._collect("c_compile_args", kwargs)

    def c_no_compile_args(self, **kwargs: Any) -> list[str]:
        """The fields' unwanted compiler flags."""
        return self._collect("c_no_compile_args", kwargs)

    def c_init_code(self, **kwargs: Any) -> list[str]:
        """The fields' module init code."""
        found: list[str] = []
        for field_type in self.types:
            found.extend(
                as_code_list(
                    call_hook(field_type, "c_init_code", default=[], **kwargs),
                    f"{type(field_type).__name__}.c_init_code",
                )
            )
        return list(dict.fromkeys(found))

    def c_support_code(self, **kwargs: Any) -> list[str]:
        """The fields' support code (each text once, sorted), then the
        definition of the struct (guarded, so it is defined once per module).
        The structs of ParamsType fields keep their order after the rest, as
        each may use what comes before it."""
        found: dict[str, None] = {}
        for field_type in self.types:
            hook = call_hook(field_type, "c_support_code", default="", **kwargs)
            found.update(
                dict.fromkeys(as_code_list(hook, f"{type(field_type).__name__}.c_support_code"))
            )
        found.pop(ERROR_CONTEXT, None)
        structs = [text for text in found if text.startswith(_STRUCT_MARK)]
        others = sorted(text for text in found if not text.startswith(_STRUCT_MARK))
        return [*others, ERROR_CONTEXT, *structs, self._struct_code()[1]]

    @property
    def name(self) -> str:
        """The C name of the struct: ``OpweaveParams_<a>_<b>``, where ``a`` is
        (the start of) the SHA-256 of the field names and ``b`` that of the
        struct's members (the fields' C declarations and extraction code).
        Equal ParamsTypes get the same name in every process, and two structs
        with one name are the same struct."""
        return self._struct_code()[0]

    # --- C side: the struct -------------------------------------------------------

    def _struct_code(self) -> tuple[str, str]:
        """``(struct name, its definition)``, computed once."""
        if self._struct is None:
            members = struct_members(self.items())
            name = f"OpweaveParams_{_sha256(','.join(self.fields))[:16]}_{_sha256(members)[:32]}"
            guard = f"OPWEAVE_PARAMS_{name.upper()}"
            field_list = ", ".join(f"{f}: {t}" for f, t in self.items()).replace("*/", "* /")
            code = (
                f"{_STRUCT_MARK}{name} ({field_list}) */\n"
                f"#ifndef {guard}\n#define {guard}\n"
                f"struct {name} {{\n"
                f"{members}"
                f"{name}() {{ opweave_init(); }}\n"
                f"~{name}() {{ cleanup(); }}\n"
                f"{name}(const {name}&) = delete;\n"
                f"{name}& operator=(const {name}&) = delete;\n"
                "};\n#endif\n"
            )
            self._struct = (name, code)
        return self._struct

    # --- C side: a variable --------------------------------------------------------

    def c_declare(self, name: str, sub: dict[str, str], check_input: bool = True) -> str:
        """``<struct>* <name>;``"""
        return f"{self.name}* {name};\n"

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        """``<name> = NULL;``"""
        return f"{name} = NULL;\n"

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        """Deletes the struct."""
        return f"delete {name};\n{name} = NULL;\n"

    def c_extract(
        self, name: str, sub: dict[str, str], check_input: bool = True, **kwargs: Any
    ) -> str:
        """Allocates the struct and fills every field from the dict
        ``py_<name>`` (a :class:`Params`). None raises ValueError; another
        non-dict or a missing field raises TypeError; a field's own
        extraction error is raised again naming the field."""
        return extract_code(name, sub["fail"], self.name, self.fields)

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        """Raises NotImplementedError: a ParamsType cannot be an output."""
        raise NotImplementedError("ParamsType has no c_sync: params cannot be the output of an op")

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """The version of this C code and of every field type's."""
        versions = tuple(
            (field, tuple(call_hook(field_type, "c_code_cache_version", default=())))
            for field, field_type in self.items()
        )
        return (1, versions)

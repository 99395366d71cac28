"""Per-type C-code registries of the built-in ops (ViewOp, DeepCopyOp, Shape,
Shape_i).

A registry maps a type *class* to the C code the op uses for variables of
that type, plus the code's version. These helpers do the three things every
registry needs: storing an entry, finding the entry for a variable's type
(by exact class, or along the class's MRO), and folding the entries'
versions into the op's cache version.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["fill_code", "find_entry", "missing_code", "registry_version", "store_entry"]


def store_entry(registry: dict[type, tuple[Any, ...]], type_class: Any, entry: tuple) -> None:
    """Stores ``entry`` for ``type_class`` (replacing any earlier one).
    Raises TypeError if ``type_class`` is not a class: the registries are
    keyed by the type's class, not by a type instance such as ``dvector``."""
    if not isinstance(type_class, type):
        raise TypeError(
            f"C code is registered for a type class (e.g. TensorType), got "
            f"{type_class!r} of class {type(type_class).__name__}"
        )
    registry[type_class] = entry


def find_entry(
    registry: dict[type, tuple[Any, ...]], type_class: type, *, walk_mro: bool
) -> tuple[Any, ...] | None:
    """The entry for ``type_class``: the exact class only, or (``walk_mro``)
    the first class of its MRO that has one. None if there is none."""
    if not walk_mro:
        return registry.get(type_class)
    for candidate in type_class.__mro__:
        entry = registry.get(candidate)
        if entry is not None:
            return entry
    return None


def registry_version(
    registry: dict[type, tuple[Any, ...]], op_name: str, *, version_index: int = -1
) -> tuple[Any, ...]:
    """``((str(type_class), version), ...)`` sorted by ``str(type_class)``,
    where ``version`` is item ``version_index`` of each entry. If any entry
    is unversioned (an empty or false version), warns and returns ``()``:
    the op's C code is then unversioned as a whole."""
    versions = []
    for type_class, entry in sorted(registry.items(), key=lambda item: str(item[0])):
        version = entry[version_index]
        if not version:
            warnings.warn(
                f"{op_name} has C code for {type_class.__qualname__} registered without a "
                f"version; {op_name}'s C code is unversioned",
                UserWarning,
                stacklevel=3,
            )
            return ()
        versions.append((str(type_class), version))
    return tuple(versions)


def missing_code(op: Any, node: Any, register: str) -> NotImplementedError:
    """The error ``op.c_code`` raises when ``node``'s input type has no
    registered code; ``register`` names the function that would add some."""
    input_type = node.inputs[0].type
    return NotImplementedError(
        f"{type(op).__name__} has no C code for type {type(input_type).__qualname__} "
        f"({input_type}); register some with {register}"
    )


def fill_code(op: Any, node: Any, code: str, values: dict[str, str]) -> str:
    """``code % values``; a registered code that is not a valid format over
    ``values`` raises ValueError naming the op and the type."""
    try:
        return code % values
    except (KeyError, ValueError, TypeError) as error:
        raise ValueError(
            f"the C code registered for {type(op).__name__} on type "
            f"{type(node.inputs[0].type).__qualname__} is not a valid %-format string over "
            f"{', '.join(sorted(values))}: {error!r}"
        ) from error

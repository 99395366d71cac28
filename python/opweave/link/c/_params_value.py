"""The values of a :class:`~opweave.link.c.params_type.ParamsType`:
:class:`Params`, an immutable dict of its fields, equal and hashed by value."""

from __future__ import annotations

from typing import Any, NoReturn, Protocol

import numpy as np

__all__ = ["Params", "mismatch"]


def mismatch(what: str, missing: list[str], unknown: list[str]) -> TypeError:
    """The error for a value whose fields are not the ParamsType's."""
    problems = [f"missing {', '.join(missing)}"] if missing else []
    problems += [f"unknown {', '.join(unknown)}"] if unknown else []
    return TypeError(f"{what}: {'; '.join(problems)}")


def _value_key(value: Any) -> Any:
    """A hashable key of ``value``, equal for values that the types'
    ``values_eq`` may call equal: numbers and arrays by shape and value (0.0
    and -0.0 alike, every NaN alike, ``5`` like ``5.0``), other objects by
    their own hash, or only by their class when unhashable."""
    if isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
        array = np.asarray(value)
        if array.dtype.kind in "biufc":
            numbers = np.array(array, dtype=np.complex128, copy=True).reshape(-1)
            numbers[np.isnan(numbers)] = complex(np.nan, np.nan)
            parts = numbers.view(np.float64) + 0.0  # -0.0 + 0.0 is 0.0
            return ("number", array.shape, parts.tobytes())
        if array.dtype.kind in "SUV":
            return ("array", array.dtype.str, array.shape, array.tobytes())
        return ("array", array.dtype.str, array.shape)
    try:
        return ("object", hash(value))
    except TypeError:
        return ("unhashable", type(value).__module__, type(value).__qualname__)


class ParamsType(Protocol):
    """What a value needs of its :class:`~opweave.link.c.params_type.ParamsType`
    (which imports this module): the sorted field names and their types."""

    fields: tuple[str, ...]
    types: tuple[Any, ...]


class Params(dict):  # type: ignore[type-arg]
    """A value of a :class:`ParamsType`: an immutable dict of field name to
    value, whose fields are also attributes (``params.alpha``). Every field
    of the type must be given (TypeError otherwise).

    Two Params are equal when their ParamsTypes are and every field value is
    equal by its type's ``values_eq``; they hash by their values (arrays by
    their contents), computed once."""

    def __init__(self, params_type: ParamsType, /, **fields: Any) -> None:
        # What a ParamsType is to its values: its sorted field names and their
        # types (checked by shape, not class: params_type.py imports this module).
        names, types = getattr(params_type, "fields", None), getattr(params_type, "types", None)
        if not (isinstance(names, tuple) and isinstance(types, tuple)):
            raise TypeError(f"Params needs a ParamsType first, got {type(params_type).__name__}")
        missing = [f for f in params_type.fields if f not in fields]
        unknown = sorted(set(fields) - set(params_type.fields))
        if missing or unknown:
            raise mismatch(f"Params of {params_type}", missing, unknown)
        dict.__init__(self, ((f, fields[f]) for f in params_type.fields))
        self.__dict__.update(params_type=params_type, _hash=None)

    def _immutable(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("Params is immutable; build a new one")

    __setitem__ = __delitem__ = _immutable
    clear = pop = popitem = setdefault = update = _immutable  # type: ignore[assignment]
    __ior__ = _immutable  # type: ignore[assignment]

    def __setattr__(self, name: str, value: Any) -> None:
        self._immutable()

    def __delattr__(self, name: str) -> None:
        self._immutable()

    def __getattr__(self, name: str) -> Any:
        if name in self:
            return self[name]
        raise AttributeError(f"Params has no field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_params, (self.params_type, dict(self)))

    def __hash__(self) -> int:  # type: ignore[override]
        if self._hash is None:
            keys = tuple(_value_key(self[f]) for f in self.params_type.fields)
            self.__dict__["_hash"] = hash((type(self), self.params_type, keys))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Params) or self.params_type != other.params_type:
            return False
        return all(
            t.values_eq(self[f], other[f])
            for f, t in zip(self.params_type.fields, self.params_type.types, strict=True)
        )

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return "Params(" + ", ".join(f"{f}={v!r}" for f, v in self.items()) + ")"

    __str__ = __repr__


def _rebuild_params(params_type: ParamsType, values: dict[str, Any]) -> Params:
    return Params(params_type, **values)

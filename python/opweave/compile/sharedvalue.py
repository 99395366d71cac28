"""Shared variables: graph inputs whose value lives with the variable, so
that functions read it without it being passed, and update it
(``function(..., updates=[(s, new_value)])``).

A function given a graph that uses shared variables takes their current
values as extra inputs of its compiled module, and after a successful call
writes the updates back, all at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opweave.graph.basic import Variable
from opweave.graph.type import Type
from opweave.tensor.variable import TensorVariable

__all__ = ["SharedVariable", "TensorSharedVariable", "shared"]


class SharedVariable(Variable):
    """A variable holding a value of its type (``get_value``/``set_value``).
    ``strict``: ``set_value`` takes only exact values of the type;
    otherwise values are converted by its ``filter``."""

    def __init__(
        self,
        name: str | None,
        type: Type,
        value: Any,
        strict: bool = False,
        allow_downcast: bool | None = None,
    ) -> None:
        super().__init__(type, None, None, name)
        self.strict = strict
        self.allow_downcast = allow_downcast
        self._value = type.filter(value, strict=strict, allow_downcast=allow_downcast)

    def get_value(self, borrow: bool = False, return_internal_type: bool = False) -> Any:
        """The value (a copy unless ``borrow``)."""
        return self._value if borrow else _copy(self._value)

    def set_value(self, value: Any, borrow: bool = False) -> None:
        """Sets the value, converted by the type (copied unless ``borrow``)."""
        filtered = self.type.filter(value, strict=self.strict, allow_downcast=self.allow_downcast)
        self._value = filtered if borrow or filtered is not value else _copy(filtered)

    @property
    def container(self) -> SharedVariable:
        """PyTensor code reads ``container.value``; the variable holds it."""
        return self

    @property
    def value(self) -> Any:
        return self._value

    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)


class TensorSharedVariable(SharedVariable, TensorVariable):
    """A shared variable of a TensorType."""


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def shared(
    value: Any,
    name: str | None = None,
    strict: bool = False,
    allow_downcast: bool | None = None,
    borrow: bool = False,
    shape: Any = None,
    **kwargs: Any,
) -> SharedVariable:
    """A shared variable holding ``value``: a TensorType variable for an
    array or a Python/NumPy number (0-d), with the value's dtype and, unless
    ``shape`` gives static lengths, no static shape."""
    from opweave.tensor.type import TensorType

    if kwargs:
        raise TypeError(f"shared() got unexpected arguments: {', '.join(kwargs)}")
    array = np.asarray(value)
    if array.dtype.kind not in "biufc":
        raise TypeError(f"shared() supports numbers and arrays, got {type(value).__name__}")
    static = tuple(shape) if shape is not None else (None,) * array.ndim
    tensor_type = TensorType(array.dtype, shape=static)
    stored = array if borrow and isinstance(value, np.ndarray) else array.copy()
    return TensorSharedVariable(name, tensor_type, stored, strict, allow_downcast)

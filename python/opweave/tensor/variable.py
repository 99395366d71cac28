"""Tensor variables and constants: :class:`TensorVariable` and
:class:`TensorConstant`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from opweave.graph.basic import Constant, Variable

if TYPE_CHECKING:
    from opweave.tensor.type import TensorType

__all__ = ["TensorConstant", "TensorVariable"]


class TensorVariable(Variable):
    """A variable of a :class:`~opweave.tensor.type.TensorType`. Its dtype,
    number of dimensions and broadcastable pattern come from its type."""

    type: TensorType

    @property
    def dtype(self) -> str:
        """The dtype name, e.g. ``"float64"``."""
        return self.type.dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self.type.ndim

    @property
    def broadcastable(self) -> tuple[bool, ...]:
        """Per dimension, True when its static length is 1."""
        return self.type.broadcastable

    @property
    def shape(self) -> Variable:
        """The shape, as a graph variable: ``Shape(self)`` (an int64 vector)."""
        from opweave.tensor.shape import shape

        return shape(self)


class TensorConstant(TensorVariable, Constant):
    """A tensor with a fixed value. ``data`` is the filtered ndarray, made
    read-only: a copy when it is the caller's array (unless that array owns
    its memory and is already read-only), so the caller keeps a writeable
    array and cannot change the constant.

    Like every graph node it compares and hashes by identity; use
    :meth:`signature` to compare values."""

    def __init__(self, type: TensorType, data: Any, name: str | None = None) -> None:
        value = type.filter(data)
        if value is data and (value.flags.writeable or not value.flags.owndata):
            value = value.copy()
        value.flags.writeable = False
        # Constant.__init__ filters again: an exact read-only array passes as is.
        Constant.__init__(self, type, value, name)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # An unpickled array is writeable again.
        self.__dict__.update(state)
        self.data.flags.writeable = False

    @property
    def value(self) -> np.ndarray:
        """The constant's value (``data``)."""
        return self.data

    def signature(self) -> tuple[Any, ...]:
        """What identifies the value, hashable: ``(type, shape, data bytes)``.
        The shape is included because the type's static shape may leave
        lengths unknown."""
        return (self.type, self.data.shape, self.data.tobytes())

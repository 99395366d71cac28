"""The :class:`Type` base class: what values a variable may hold."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from opweave.graph.basic import Constant, Variable, is_variable
from opweave.graph.utils import MethodNotDefined

__all__ = ["Type"]


class Type:
    """The type of a graph variable.

    Subclasses implement :meth:`filter`. Types with a C representation also
    implement the ``c_*`` methods (see :class:`opweave.link.c.type.CType`);
    a plain ``Type`` subclass that defines them (the Theano style) works too.
    Calling a type makes a new variable of it: ``x = double("x")``.
    """

    variable_type: ClassVar[type[Variable]] = Variable
    constant_type: ClassVar[type[Constant]] = Constant

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """Returns ``data`` as a valid value of this type, converting it when
        ``strict`` is false. Raises TypeError (or ValueError) if it cannot."""
        raise MethodNotDefined(f"{type(self).__name__} does not define filter")

    def filter_variable(self, other: Any, allow_convert: bool = True) -> Variable:
        """Returns ``other`` as a variable of this type: a constant for a
        plain value, the variable itself if its type is this one."""
        if not is_variable(other):
            return self.make_constant(other)
        if other.type == self:
            return other
        raise TypeError(f"cannot use a variable of type {other.type} where {self} is expected")

    def is_valid_value(self, data: Any, strict: bool = True) -> bool:
        """True if ``filter(data, strict)`` accepts ``data``."""
        try:
            self.filter(data, strict=strict)
        except (TypeError, ValueError):
            return False
        return True

    def values_eq(self, a: Any, b: Any) -> bool:
        """True if ``a`` and ``b`` are equal values of this type."""
        return bool(a == b)

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        """True if ``a`` and ``b`` are equal up to rounding. Defaults to
        :meth:`values_eq`."""
        return self.values_eq(a, b)

    # --- relations between types ---------------------------------------------

    def clone(self, **kwargs: Any) -> Type:
        """A copy of this type with the attributes in ``kwargs`` replaced.
        Types whose attributes are constructor arguments (such as
        ``TensorType``) override it."""
        clone = copy.copy(self)
        for name, value in kwargs.items():
            if not hasattr(self, name):
                raise TypeError(f"{type(self).__name__}.clone: no attribute {name!r}")
            setattr(clone, name, value)
        return clone

    def in_same_class(self, otype: Any) -> bool:
        """True if ``otype`` is this type up to the static details that
        :meth:`is_super` ignores; here, equality."""
        return bool(self == otype)

    def is_super(self, otype: Any) -> bool:
        """True if every value of ``otype`` is a value of this type; here,
        equality."""
        return bool(self == otype)

    def convert_variable(self, var: Variable) -> Variable | None:
        """``var`` if it can be used where this type is expected without a
        computation (its type is this one, or more specific), else None."""
        return var if self.is_super(var.type) else None

    def make_variable(self, name: str | None = None) -> Variable:
        """A new variable of this type."""
        return self.variable_type(self, None, None, name)

    def make_constant(self, value: Any, name: str | None = None) -> Constant:
        """A constant of this type holding ``filter(value)``."""
        return self.constant_type(self, value, name=name)

    def __call__(self, name: str | None = None) -> Variable:
        """A new variable of this type, optionally named."""
        return self.make_variable(name)

"""``NamedTuple``: ``typing.NamedTuple``, without its cost at import.

``typing.NamedTuple`` checks each field's annotation when it makes a class,
and under ``from __future__ import annotations`` (every module here) that
means compiling each annotation's text: about 0.5 ms per class on Python
3.12, a fifth of ``import opweave.pytensor`` for the package's 14 classes on
that path. This one makes the same class (a ``collections.namedtuple`` of
the class's annotated fields in order, with their defaults, its docstring
and methods, and ``__slots__ = ()``) without evaluating the annotations.
Type checkers see ``typing.NamedTuple`` itself::

    from opweave._namedtuple import NamedTuple

    class Step(NamedTuple):
        run: Callable[..., Any]
        label: str = ""
"""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING, Any

__all__ = ["NamedTuple"]


class _NamedTupleMeta(type):
    """Makes each subclass of NamedTuple a namedtuple class of its fields."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        if not bases:  # NamedTuple itself
            return super().__new__(mcs, name, bases, namespace)
        fields = list(namespace.get("__annotations__", {}))
        defaulted = [field in namespace for field in fields]
        if defaulted != sorted(defaulted):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        defaults = [namespace[field] for field in fields if field in namespace]
        make = namedtuple  # not by its name: mypy would take this call for a class definition
        base = make(name, fields, defaults=defaults, module=namespace.get("__module__"))
        body = {k: v for k, v in namespace.items() if k not in fields}
        body["__slots__"] = ()
        return type(name, (base,), body)


if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:

    class NamedTuple(metaclass=_NamedTupleMeta):
        """The base of a named tuple class (see the module)."""

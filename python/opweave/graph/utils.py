"""Small helpers shared by the graph layer."""

from __future__ import annotations

from typing import Any

__all__ = ["EqualByProps", "MethodNotDefined", "not_defined_errors", "register_not_defined"]


class EqualByProps:
    """Equal when of one class with equal ``__props__`` values (compared
    with ``==``; ops, whose props may be arrays, have their own rule)."""

    __props__: tuple[str, ...] = ()

    def _props(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__props__)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._props() == other._props()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._props()))


class MethodNotDefined(NotImplementedError):
    """Raised by an interface method that a subclass did not implement.

    It derives from NotImplementedError, so ``except NotImplementedError``
    catches it as well."""


_not_defined: tuple[type[BaseException], ...] = (MethodNotDefined,)


def register_not_defined(exception: type[BaseException]) -> None:
    """Makes opweave treat ``exception`` as "this hook is not defined",
    as it treats :class:`MethodNotDefined`: a graph library whose ops raise
    their own exception for hooks they do not define (PyTensor's
    ``pytensor.graph.utils.MethodNotDefined``, which is not a
    NotImplementedError) registers it once, e.g.
    ``register_not_defined(pytensor.graph.utils.MethodNotDefined)``.

    Registering a class twice is harmless."""
    global _not_defined
    if not (isinstance(exception, type) and issubclass(exception, BaseException)):
        raise TypeError(f"register_not_defined takes an exception class, got {exception!r}")
    if exception not in _not_defined:
        _not_defined = (*_not_defined, exception)


def not_defined_errors(*also: type[BaseException]) -> tuple[type[BaseException], ...]:
    """The exception classes that mean "this hook is not defined":
    :class:`MethodNotDefined` and every class given to
    :func:`register_not_defined`, after the classes ``also`` (e.g.
    NotImplementedError). For an ``except`` clause."""
    return (*also, *_not_defined) if also else _not_defined

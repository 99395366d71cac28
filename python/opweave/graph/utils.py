"""Small helpers shared by the graph layer."""

from __future__ import annotations

__all__ = ["MethodNotDefined", "not_defined_errors", "register_not_defined"]


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

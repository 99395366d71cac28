"""Small helpers shared by the graph layer."""

from __future__ import annotations

__all__ = ["MethodNotDefined"]


class MethodNotDefined(NotImplementedError):
    """Raised by an interface method that a subclass did not implement.

    It derives from NotImplementedError, so ``except NotImplementedError``
    catches it as well."""

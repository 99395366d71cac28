"""Scalar types (:class:`ScalarType`, ``float64``, ``int8``, ...) and
:func:`upcast`, NumPy's dtype promotion."""

from __future__ import annotations

from opweave.scalar import basic as _basic
from opweave.scalar.basic import *  # noqa: F403  (the public names, by its __all__)

# ``bool`` is importable (opweave.scalar.bool) but left out of __all__, so
# that ``from opweave.scalar import *`` does not shadow the builtin.
from opweave.scalar.basic import bool as bool

__all__ = list(_basic.__all__)

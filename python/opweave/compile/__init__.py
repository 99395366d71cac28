"""Compiling graphs into callables: :func:`function` and the modes."""

from __future__ import annotations

from opweave.compile.function import Function, function
from opweave.compile.mode import Mode, get_mode

__all__ = ["Function", "Mode", "function", "get_mode"]

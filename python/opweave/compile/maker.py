"""PyTensor's module path ``pytensor.compile.maker``: :func:`function` is
:func:`opweave.function`."""

from __future__ import annotations

from opweave.compile.function import function

__all__ = ["function"]

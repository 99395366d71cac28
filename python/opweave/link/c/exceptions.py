"""The C linker's exceptions, where PyTensor has them
(``pytensor.link.c.exceptions``): :class:`CompileError` and
:class:`MissingGXX`, both :class:`~opweave.errors.OpweaveError`."""

from __future__ import annotations

from opweave.errors import CompileError, MissingGXX

__all__ = ["CompileError", "MissingGXX"]

"""Ops with C code: :class:`COp`."""

from __future__ import annotations

from opweave.graph.op import Op
from opweave.link.c.interface import CLinkerOp

__all__ = ["COp"]


class COp(Op, CLinkerOp):
    """An :class:`~opweave.graph.op.Op` with a C implementation (``c_code`` and
    the other hooks of :class:`~opweave.link.c.interface.CLinkerOp`)."""

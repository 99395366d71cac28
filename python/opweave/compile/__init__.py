"""Compiling graphs into callables: :func:`function` and the modes, and
(loaded on first use) the built-in ops :class:`ViewOp` and
:class:`DeepCopyOp`, :class:`DebugMode`, :class:`In`, :class:`Out` and the shared
variables (:func:`shared`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opweave.compile.function import Function, function
from opweave.compile.mode import Mode, get_default_mode, get_mode

if TYPE_CHECKING:
    from opweave.compile.debugmode import DebugMode
    from opweave.compile.io import In, Out
    from opweave.compile.sharedvalue import SharedVariable, shared

_OPS = (
    "DeepCopyOp",
    "ViewOp",
    "deep_copy_op",
    "register_deep_copy_op_c_code",
    "register_view_op_c_code",
    "view_op",
)

__all__ = [
    "DebugMode",
    "Function",
    "In",
    "Mode",
    "Out",
    "SharedVariable",
    "function",
    "get_default_mode",
    "get_mode",
    "shared",
    *_OPS,
]


def __getattr__(name: str) -> Any:
    # The built-in ops register the C code of the tensor and scalar types, so
    # they are imported only when asked for.
    if name == "DebugMode":
        from opweave.compile.debugmode import DebugMode

        return DebugMode
    if name in _OPS:
        from opweave.compile import ops

        return getattr(ops, name)
    if name in ("In", "Out"):
        from opweave.compile import io

        return getattr(io, name)
    if name in ("SharedVariable", "shared"):
        from opweave.compile import sharedvalue

        return getattr(sharedvalue, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

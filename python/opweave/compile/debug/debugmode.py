"""DebugMode under PyTensor's path; see :mod:`opweave.compile.debugmode`."""

from __future__ import annotations

from opweave.compile.debugmode import (
    KINDS,
    BadDestroyMap,
    BadRefcount,
    BadThunkOutput,
    BadViewMap,
    DebugMode,
    DebugModeError,
    InvalidValueError,
    debug_function,
)

__all__ = [
    "KINDS",
    "BadDestroyMap",
    "BadRefcount",
    "BadThunkOutput",
    "BadViewMap",
    "DebugMode",
    "DebugModeError",
    "InvalidValueError",
    "debug_function",
]

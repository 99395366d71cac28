"""Modes by name: which linker turns a graph into a callable.

- ``mode="FAST_RUN"`` (the default, ``config.mode``): the whole graph is one
  compiled C module (:class:`opweave.link.c.basic.CLinker`); a graph with
  nodes that have no C code runs those in Python, as ``c|py`` does, as
  PyTensor's FAST_RUN does.
- ``Mode(linker="c")`` or ``mode="C"``: all C, as in PyTensor: a node with
  no C code is an error that names it and the mode that would run it.
- ``Mode(linker="c|py")`` or ``mode="CVM"``: each run of consecutive nodes
  with C code is one compiled module (a single node's module is shared by
  every graph applying the same op to the same types), the others run
  ``perform``; one loop in C runs the steps (``_core.StepRunner``,
  :mod:`opweave.link.c.opwise`).
- ``Mode(linker="py")`` or ``mode="py"``: every node runs its Python
  ``perform``.
- ``mode="DebugMode"`` (or ``"DEBUG_MODE"``, or a
  :class:`~opweave.compile.debugmode.DebugMode`): every node runs both, and
  DebugMode checks what each does.
"""

from __future__ import annotations

from opweave.compile._mode import Mode, linker_mode_names, named_linker, new_linker
from opweave.configparser import MODE_NAMES

__all__ = ["Mode", "get_default_mode", "get_mode", "known_mode_names"]

_DEBUG = tuple(name for name, linker in MODE_NAMES.items() if linker == "debug")
# The C linker that runs the nodes without C code in Python (PyTensor's FAST_RUN).
_FALLBACK = ("FAST_RUN",)


def known_mode_names() -> list[str]:
    """The names a mode may be given by (``"C"``, ``"FAST_RUN"``, ...)."""
    return [*linker_mode_names(), *_DEBUG]


def get_default_mode() -> Mode:
    """The mode of :func:`opweave.function` when none is given: the one
    ``config.mode`` names (by default FAST_RUN: the C linker, which runs
    the nodes that have no C code in Python)."""
    from opweave.configparser import config

    return get_mode(config.mode)


def get_mode(mode: str | Mode | None) -> Mode:
    """The :class:`Mode` that ``mode`` names (None: :func:`get_default_mode`)."""
    if mode is None:
        return get_default_mode()
    if isinstance(mode, Mode):
        return mode
    if isinstance(mode, str):
        if mode in _DEBUG:
            from opweave.compile.debugmode import DebugMode

            return DebugMode()
        if mode in _FALLBACK:
            return Mode(new_linker("c", python_fallback=True))
        linker = named_linker(mode)
        if linker is not None:
            return Mode(linker)
        known = ", ".join(repr(name) for name in known_mode_names())
        raise ValueError(f"unknown mode {mode!r}; expected a Mode or one of {known}")
    raise TypeError(f"mode must be a Mode, a string or None, got {type(mode).__name__}")

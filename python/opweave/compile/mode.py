"""Modes: which linker turns a graph into a callable.

- ``mode="FAST_RUN"`` (the default, ``config.mode``): the whole graph is one
  compiled C module (:class:`opweave.link.c.basic.CLinker`); a graph with
  nodes that have no C code runs those in Python, as ``c|py`` does, as
  PyTensor's FAST_RUN does.
- ``Mode(linker="c")`` or ``mode="C"``: all C, as in PyTensor: a node with
  no C code is an error that names it and the mode that would run it.
- ``Mode(linker="c|py")`` or ``mode="CVM"``: each run of consecutive nodes
  with C code is one compiled module (a single node's module is shared by
  every graph applying the same op to the same types), the others run
  ``perform``; a generated Python function calls the steps
  (:mod:`opweave.link.c.opwise`, :mod:`opweave.link.runner`).
- ``Mode(linker="py")`` or ``mode="py"``: every node runs its Python
  ``perform``.
- ``mode="DebugMode"`` (or ``"DEBUG_MODE"``, or a
  :class:`~opweave.compile.debugmode.DebugMode`): every node runs both, and
  DebugMode checks what each does.
"""

from __future__ import annotations

from typing import Any

from opweave.configparser import MODE_NAMES

__all__ = ["Mode", "get_default_mode", "get_mode", "known_mode_names"]

_LINKERS = ("c", "c|py", "py")
_NAMED = {name: linker for name, linker in MODE_NAMES.items() if linker != "debug"}
_DEBUG = tuple(name for name, linker in MODE_NAMES.items() if linker == "debug")
# The C linker that runs the nodes without C code in Python (PyTensor's FAST_RUN).
_FALLBACK = ("FAST_RUN",)


class Mode:
    """How :func:`opweave.function` runs a graph. ``linker`` is a linker
    object, kept with its settings (a ``CLinker(schedule=...)``, an
    ``OpWiseCLinker()``, a ``PerformLinker()``, any
    :class:`~opweave.link.thunk.Linker`), or a name: ``"c"`` (one compiled
    module per graph), ``"c|py"`` (compiled modules for the runs of nodes
    with C code, ``perform`` for the others), ``"py"`` (``perform`` only),
    or one of PyTensor's names (``"cvm"``, ...). ``optimizer`` says whether
    :func:`opweave.function` folds constants: ``None`` or ``"None"`` turns
    folding off (as PyTensor's ``optimizer=None`` turns off its rewrites);
    any other value, such as the default ``"default"`` or PyTensor's
    ``"fast_run"``, keeps it. Outputs are protected by DeepCopyOp either
    way."""

    def __init__(self, linker: Any = "c", optimizer: Any = "default") -> None:
        self.linker = _linker_object(linker)
        self.optimizer = optimizer

    @property
    def linker_name(self) -> str:
        """``"c"``, ``"c|py"`` or ``"py"``: what the linker links like."""
        return str(self.linker.kind)

    def including(self, *tags: str) -> Mode:
        """This mode (PyTensor's rewrite tags select rewrites; opweave's
        rewrites, constant folding and infer_shape, are on or off as a whole
        with ``optimizer``)."""
        return self

    def excluding(self, *tags: str) -> Mode:
        """This mode (see :meth:`including`)."""
        return self

    @property
    def folds_constants(self) -> bool:
        """Whether functions of this mode fold all-constant nodes."""
        return self.optimizer is not None and self.optimizer != "None"

    def _identity(self) -> tuple[Any, ...]:
        linker = self.linker
        schedule = getattr(linker, "schedule", None)
        fallback = getattr(linker, "python_fallback", False)
        return (type(linker), schedule, fallback, self.folds_constants)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mode) and other._identity() == self._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        name = "FAST_RUN" if getattr(self.linker, "python_fallback", False) else self.linker_name
        if self.folds_constants:
            return f"Mode(linker={name!r})"
        return f"Mode(linker={name!r}, optimizer=None)"


def _linker_object(linker: Any) -> Any:
    """``linker`` itself when it is a linker object, else the linker its
    name (``"c"``, ``"c|py"``, ``"py"`` or a PyTensor name) stands for."""
    from opweave.link.thunk import Linker

    if isinstance(linker, Linker):
        return linker
    if not isinstance(linker, str):
        raise TypeError(f"linker must be a name or a Linker, got {type(linker).__name__}")
    name = linker if linker in _LINKERS else _NAMED.get(linker, linker)
    if name not in _LINKERS:
        raise ValueError(f"unknown linker {linker!r}; expected one of {', '.join(_LINKERS)}")
    return _new_linker(name)


def _new_linker(name: str, python_fallback: bool = False) -> Any:
    from opweave.link.basic import PerformLinker
    from opweave.link.c.basic import CLinker
    from opweave.link.c.opwise import OpWiseCLinker

    if name == "c":
        return CLinker(python_fallback=python_fallback)
    return OpWiseCLinker() if name == "c|py" else PerformLinker()


def known_mode_names() -> list[str]:
    """The names a mode may be given by (``"C"``, ``"FAST_RUN"``, ...)."""
    return [*_NAMED, *_DEBUG]


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
            return Mode(_new_linker("c", python_fallback=True))
        if mode in _NAMED:
            return Mode(_NAMED[mode])
        known = ", ".join(repr(name) for name in [*_NAMED, *_DEBUG])
        raise ValueError(f"unknown mode {mode!r}; expected a Mode or one of {known}")
    raise TypeError(f"mode must be a Mode, a string or None, got {type(mode).__name__}")

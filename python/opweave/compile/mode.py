"""Modes: which linker turns a graph into a callable.

- ``Mode(linker="c")`` or ``mode="C"`` (the default): the whole graph is one
  compiled C module (:class:`opweave.link.c.basic.CLinker`).
- ``Mode(linker="c|py")`` or ``mode="CVM"``: each run of consecutive nodes
  with C code is one compiled module (a single node's module is shared by
  every graph applying the same op to the same types), the others run
  ``perform``; a generated Python function calls the steps
  (:mod:`opweave.link.c.opwise`, :mod:`opweave.compile.runner`).
- ``Mode(linker="py")`` or ``mode="py"``: every node runs its Python
  ``perform``.
- ``mode="DebugMode"`` (or ``"DEBUG_MODE"``, or a
  :class:`~opweave.compile.debugmode.DebugMode`): every node runs both, and
  DebugMode checks what each does.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Mode", "get_default_mode", "get_mode", "known_mode_names"]

_LINKERS = ("c", "c|py", "py")
_NAMED = {
    "C": "c",
    "c": "c",
    "FAST_RUN": "c",
    "py": "py",
    "PY": "py",
    "FAST_COMPILE": "py",
    "c|py": "c|py",
    "CVM": "c|py",
    "cvm": "c|py",
    "C_VM": "c|py",
    "vm": "c|py",
}
_DEBUG = ("DebugMode", "DEBUG_MODE")


class Mode:
    """How :func:`opweave.function` runs a graph. ``linker`` is ``"c"`` (one
    compiled module per graph), ``"c|py"`` (compiled modules for the runs of
    nodes with C code, ``perform`` for the others) or ``"py"`` (``perform`` only).
    ``optimizer`` says whether :func:`opweave.function` folds constants:
    ``None`` or ``"None"`` turns folding off (as PyTensor's ``optimizer=None``
    turns off its rewrites); any other value, such as the default
    ``"default"`` or PyTensor's ``"fast_run"``, keeps it. Outputs are
    protected by DeepCopyOp either way."""

    # The default mode (get_default_mode) runs nodes without C code in
    # Python; a mode asked for by name, or built, refuses them in C.
    is_default: bool = False

    def __init__(self, linker: Any = "c", optimizer: Any = "default") -> None:
        linker = _linker_name(linker)
        if linker not in _LINKERS:
            raise ValueError(f"unknown linker {linker!r}; expected one of {', '.join(_LINKERS)}")
        self.linker = linker
        self.optimizer = optimizer

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

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Mode)
            and other.linker == self.linker
            and other.folds_constants == self.folds_constants
        )

    def __hash__(self) -> int:
        return hash((self.linker, self.folds_constants))

    def __repr__(self) -> str:
        if self.folds_constants:
            return f"Mode(linker={self.linker!r})"
        return f"Mode(linker={self.linker!r}, optimizer=None)"


def _linker_name(linker: Any) -> Any:
    """A linker given as an object (``CLinker()``, ``OpWiseCLinker()``) or a
    PyTensor name (``"cvm"``), as one of the names in ``_LINKERS``."""
    if not isinstance(linker, str):
        from opweave.link.basic import PerformLinker
        from opweave.link.c.basic import CLinker
        from opweave.link.c.opwise import OpWiseCLinker

        if isinstance(linker, CLinker):
            return "c"
        if isinstance(linker, OpWiseCLinker):
            return "c|py"
        if isinstance(linker, PerformLinker):
            return "py"
        kind = type(linker).__name__
        raise TypeError(
            f"linker must be a name, a CLinker, an OpWiseCLinker or a PerformLinker, got {kind}"
        )
    if linker in _LINKERS:
        return linker
    return _NAMED.get(linker, linker)


def known_mode_names() -> list[str]:
    """The names a mode may be given by (``"C"``, ``"FAST_RUN"``, ...)."""
    return [*_NAMED, *_DEBUG]


def get_default_mode() -> Mode:
    """The mode of :func:`opweave.function` when none is given:
    ``config.mode`` (by default FAST_RUN, the C linker), which runs the
    nodes that have no C code in Python."""
    from opweave.configparser import config

    mode = get_mode(config.mode)
    if mode.linker == "c":
        mode = Mode(mode.linker, mode.optimizer)
        mode.is_default = True
    return mode


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
        if mode in _NAMED:
            return Mode(_NAMED[mode])
        known = ", ".join(repr(name) for name in [*_NAMED, *_DEBUG])
        raise ValueError(f"unknown mode {mode!r}; expected a Mode or one of {known}")
    raise TypeError(f"mode must be a Mode, a string or None, got {type(mode).__name__}")

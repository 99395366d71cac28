"""``Mode``: a linker and an optimizer, and the linkers' names.

What names a mode (``"FAST_RUN"``, ``"DebugMode"``, ...) is
:mod:`opweave.compile.mode`'s, which re-exports :class:`Mode`: DebugMode
subclasses ``Mode``, and ``get_mode`` makes a DebugMode by its name, so the
class sits below both.
"""

from __future__ import annotations

from typing import Any

from opweave.configparser import MODE_NAMES

__all__ = ["Mode", "linker_mode_names", "named_linker", "new_linker"]

_LINKERS = ("c", "c|py", "py")
# Mode names -> linker names (DebugMode's excepted).
_NAMED = {name: linker for name, linker in MODE_NAMES.items() if linker != "debug"}


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
    return new_linker(name)


def new_linker(name: str, python_fallback: bool = False) -> Any:
    from opweave.link.basic import PerformLinker
    from opweave.link.c.basic import CLinker
    from opweave.link.c.opwise import OpWiseCLinker

    if name == "c":
        return CLinker(python_fallback=python_fallback)
    return OpWiseCLinker() if name == "c|py" else PerformLinker()


def named_linker(mode_name: str) -> str | None:
    """The linker name (``"c"``, ``"c|py"``, ``"py"``) a mode name other
    than DebugMode's stands for, or None."""
    return _NAMED.get(mode_name)


def linker_mode_names() -> list[str]:
    """The mode names that stand for a linker (all but DebugMode's)."""
    return list(_NAMED)


# Pickles and reprs name it where users import it from.
Mode.__module__ = "opweave.compile.mode"

"""How a Function was compiled: one typed record per function.

Every :class:`opweave._core.Function` that opweave makes holds a
:class:`Compiled` in its attribute ``compiled``: the modules it runs (one for
the whole graph, or the parts of a node-by-node function), each node's cache
outcome, the compile profile and the recipe pickling replays. The record is
immutable and written only by :func:`record_compiled`; the Function's
attributes ``source``, ``library``, ``cache_outcome``, ``compile_seconds``,
``compile_units``, ``whole_because``, ``compiled_parts``, ``node_outcomes``,
``compile_profile`` and ``recipe`` are read-only views of it
(``cpp/bindings/runtime/function.cpp``), so a wrapper that shows another function's
module copies one record, not a list of names.
"""

from __future__ import annotations

from typing import Any

from opweave._namedtuple import NamedTuple

__all__ = ["Compiled", "ModulePart", "module_part", "record_compiled"]


class ModulePart(NamedTuple):
    """One compiled module a function runs, as it was found or built."""

    outcome: str  # "hit", "built" or "built_by_other"
    seconds: dict[str, float]  # wall seconds per phase (hooks, assembly, lookup, ...)
    units: tuple[tuple[str, float], ...]  # when built from units: each one's outcome, seconds
    whole_because: str  # why a graph planned in units was compiled as one ("": it was not)
    source: str | None  # the module's source file
    library: str | None  # its shared library

    # The names the profile and older code read (a part is what a Function
    # with one module shows).
    @property
    def cache_outcome(self) -> str:
        return self.outcome

    @property
    def compile_seconds(self) -> dict[str, float]:
        return self.seconds

    @property
    def compile_units(self) -> tuple[tuple[str, float], ...]:
        return self.units


class Compiled(NamedTuple):
    """How a Function was compiled (see the module's docstring).

    ``parts``: the modules it runs, in order; ``whole``: its first part runs
    the whole graph; ``outcomes``: per node, its module's cache outcome
    (``None`` where the node's ``perform`` runs), or ``None`` when the
    function is not run node by node; ``profile``: where the time of making
    it went (:func:`opweave.compile.function.compile_profile`); ``recipe``:
    what pickling replays (made by :func:`opweave.function`)."""

    parts: tuple[ModulePart, ...] = ()
    whole: bool = False
    outcomes: tuple[str | None, ...] | None = None
    profile: dict[str, Any] | None = None
    recipe: Any = None

    def _whole_part(self, name: str) -> ModulePart:
        if not self.whole:
            raise AttributeError(
                f"{name}: no single module runs this function (see compiled_parts)"
            )
        return self.parts[0]

    @property
    def source(self) -> str | None:
        return self._whole_part("source").source

    @property
    def library(self) -> str | None:
        return self._whole_part("library").library

    @property
    def cache_outcome(self) -> str:
        return self._whole_part("cache_outcome").outcome

    @property
    def compile_seconds(self) -> dict[str, float]:
        return self._whole_part("compile_seconds").seconds

    @property
    def compile_units(self) -> tuple[tuple[str, float], ...]:
        return self._whole_part("compile_units").units

    @property
    def whole_because(self) -> str:
        return self._whole_part("whole_because").whole_because

    @property
    def compiled_parts(self) -> list[ModulePart]:
        return list(self.parts)

    @property
    def node_outcomes(self) -> list[str | None]:
        if self.outcomes is None:
            raise AttributeError("node_outcomes: this function is not run node by node")
        return list(self.outcomes)

    @property
    def compile_profile(self) -> dict[str, Any]:
        if self.profile is None:
            raise AttributeError("compile_profile: made outside opweave.function")
        return self.profile


_NOTHING = Compiled()


def record_compiled(fn: Any, **changes: Any) -> Any:
    """Writes ``fn``'s record: its current one (or an empty one) with
    ``changes`` (fields of :class:`Compiled`); returns ``fn``. The one
    place a record is written."""
    fn.compiled = getattr(fn, "compiled", _NOTHING)._replace(**changes)
    return fn


def module_part(compiled: Any) -> ModulePart:
    """The part of a compiled module (a ``CompiledGraph`` of the C linkers)."""
    return ModulePart(
        compiled.outcome,
        compiled.seconds or {},
        compiled.units,
        compiled.whole_because,
        compiled.source,
        compiled.library,
    )

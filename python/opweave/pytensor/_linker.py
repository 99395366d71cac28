# mypy: disable-error-code="import-not-found"
# (PyTensor is optional: opweave[pytensor]; without it, its modules are Any.)
"""The PyTensor linkers ``"opweave"`` and ``"opweave_c|py"``: PyTensor's own
rewritten :class:`~pytensor.graph.fg.FunctionGraph`, handed as it is to
opweave's whole-graph linker (:class:`~opweave.link.c.basic.CLinker`) or
to its per-node one (:class:`~opweave.link.c.opwise.OpWiseCLinker`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytensor.link.basic import Container, Linker

from opweave import _core
from opweave.link.basic import PerformLinker
from opweave.link.c.basic import CLinker
from opweave.link.c.opwise import OpWiseCLinker
from opweave.link.thunk import Linker as OpweaveLinkerBase
from opweave.pytensor._vm import opweave_vm

__all__ = ["OpweaveLinker"]


class OpweaveLinker(Linker):
    """A PyTensor linker that opweave compiles, caches and calls.

    ``kind="c"`` (the linker ``"opweave"``) compiles the whole graph into one
    module; a graph with nodes that have no C code is linked node by node,
    as ``kind="c|py"`` (``"opweave_c|py"``) always does: each run of nodes
    with C code is compiled, and reuses node code compiled before, the
    others run their ``perform`` (or their own ``make_thunk``).
    ``kind="debug"`` runs opweave's DebugMode checks on every node
    (``debug_mode``, an :class:`opweave.compile.debugmode.DebugMode`; by
    default all its checks, reference counts included). There is no
    fallback to PyTensor's linkers."""

    # PyTensor's tests ask the default linker whether it runs C thunks.
    c_thunks = True

    def __init__(
        self,
        kind: str = "c",
        allow_gc: bool | None = None,
        scheduler: Any = None,
        debug_mode: Any = None,
    ) -> None:
        if kind not in ("c", "c|py", "py", "debug"):
            raise ValueError(
                f"OpweaveLinker kind must be 'c', 'c|py', 'py' or 'debug', not {kind!r}"
            )
        super().__init__(allow_gc=allow_gc, scheduler=scheduler)
        self.kind = kind
        self.debug_mode = debug_mode
        self.fgraph: Any = None
        self.no_recycling: list[Any] = []
        self.profile: Any = None

    def accept(self, fgraph: Any, no_recycling: Any = None, profile: Any = None) -> OpweaveLinker:
        """Binds the linker to PyTensor's ``fgraph`` (a new linker when
        this one is bound to another graph already); returns it."""
        if self.fgraph is not None and self.fgraph is not fgraph:
            fresh = type(self)(self.kind, self._allow_gc, self._scheduler, self.debug_mode)
            return fresh.accept(fgraph, no_recycling, profile)
        self.fgraph = fgraph
        self.no_recycling = [] if no_recycling is None else list(no_recycling)
        self.profile = profile
        return self

    def opweave_linker(self) -> OpweaveLinkerBase:
        """The opweave linker bound to the graph: its nodes run in PyTensor's
        own order (``fgraph.toposort()``, which honours the destroy handler's
        orderings), or the linker's ``scheduler``'s."""
        fgraph = self.fgraph
        if fgraph is None:
            raise ValueError("OpweaveLinker.accept(fgraph) must be called first")
        schedule = self._scheduler or (lambda graph: graph.toposort())
        if self.kind == "c":
            linker: OpweaveLinkerBase = CLinker(schedule=schedule, python_fallback=True)
        elif self.kind == "debug":
            from opweave.compile.debugmode import DebugLinker, DebugMode

            linker = DebugLinker(self.debug_mode or DebugMode(), schedule=schedule)
        elif self.kind == "py":
            linker = PerformLinker(allow_gc=self.allow_gc, schedule=schedule)
        else:
            linker = OpWiseCLinker(allow_gc=self.allow_gc, schedule=schedule)
        return linker.accept(fgraph, self.no_recycling)

    def make_thunk(
        self,
        input_storage: Sequence[list[Any]] | None = None,
        output_storage: Sequence[list[Any]] | None = None,
        storage_map: dict[Any, list[Any]] | None = None,
        **kwargs: Any,
    ) -> tuple[_core.CellCall, list[Container], list[Container]]:
        """``(vm, input_containers, output_containers)`` as PyTensor's
        ``FunctionMaker`` wants them: ``vm()`` runs the compiled graph on the
        input cells and returns the outputs (also left in their cells)."""
        linker = self.opweave_linker()
        thunk, inputs, outputs = linker.make_thunk(input_storage, output_storage, storage_map)
        fgraph = self.fgraph
        in_containers = [
            Container(v, c.storage) for v, c in zip(fgraph.inputs, inputs, strict=True)
        ]
        out_containers = [
            Container(v, c.storage, readonly=True)
            for v, c in zip(fgraph.outputs, outputs, strict=True)
        ]
        cells = [c.storage for c in in_containers]
        return opweave_vm(thunk, linker.allow_gc, fgraph, cells), in_containers, out_containers

    def clone(self, allow_gc: bool | None = None) -> Any:
        """The linker PyTensor's own back ends give a Scan whose per-op
        ``mode`` names this linker's mode (``Mode.clone(link_kwargs=...)`` in
        ``Scan.link_mode``, which requires a ``VMLinker`` for a gradient's
        preallocated taps): PyTensor's ``cvm``. Under opweave's linkers a
        Scan's inner function is linked by opweave instead
        (``opweave.pytensor._inner_on_opweave``), never through this."""
        from pytensor.link.vm import VMLinker

        return VMLinker(use_cloop=True, allow_gc=self._allow_gc if allow_gc is None else allow_gc)

    @property
    def allow_gc(self) -> bool:
        """Whether intermediates are freed during a call (PyTensor's
        ``config.allow_gc`` unless given)."""
        from pytensor import config

        return config.allow_gc if self._allow_gc is None else self._allow_gc

    def __repr__(self) -> str:
        return f"OpweaveLinker(kind={self.kind!r})"

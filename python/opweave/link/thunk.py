"""What a linker's ``make_thunk()`` returns, as in PyTensor:
``(thunk, input_containers, output_containers)``.

A :class:`Container` is a storage cell (``data``, kept in the one-element
list ``storage``); ``thunk()`` reads the input containers, runs the graph
once and fills the output containers. Every linker (``CLinker``,
``OpWiseCLinker``, ``VMLinker``, ``PerformLinker``, ``DualLinker``) builds
its thunk here from a callable of the graph's input values.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from opweave.graph.basic import Apply, Variable
from opweave.graph.destroy import Schedule, no_recycling_of, ordered_nodes
from opweave.graph.fg import FunctionGraph

__all__ = ["Container", "Linker", "Thunk", "thunk_of"]

Runner = Callable[..., Sequence[Any]]


class Container:
    """One value of ``variable``'s type. Setting ``data`` converts the value
    with the type's ``filter`` (None stays None)."""

    def __init__(
        self, variable: Variable, storage: list[Any] | None = None, name: str | None = None
    ) -> None:
        self.type = variable.type
        self.storage = storage if storage is not None else [None]
        self.name = name if name is not None else variable.name

    @property
    def data(self) -> Any:
        """The value held."""
        return self.storage[0]

    @data.setter
    def data(self, value: Any) -> None:
        self.storage[0] = None if value is None else self.type.filter(value)

    value = data

    def __getitem__(self, index: int) -> Any:
        return self.storage[index]

    def __repr__(self) -> str:
        return f"<{self.name or self.type}: {self.storage[0]!r}>"


class Thunk:
    """Runs a linked graph once: inputs from ``inputs``, outputs to
    ``outputs`` (lists of :class:`Container`). Returns None."""

    def __init__(
        self,
        run: Callable[..., Sequence[Any]],
        inputs: list[Container],
        outputs: list[Container],
        description: str,
    ) -> None:
        self.run = run
        self.inputs = inputs
        self.outputs = outputs
        self.description = description
        self.lazy = False

    def __call__(self) -> None:
        results = self.run(*[c.storage[0] for c in self.inputs])
        for container, value in zip(self.outputs, results, strict=True):
            container.storage[0] = value

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.description})"

    __repr__ = __str__


class _CThunk(Thunk):
    """The thunk of a graph compiled into one module (PyTensor's name)."""


def thunk_of(
    run: Callable[..., Sequence[Any]],
    fgraph: FunctionGraph,
    input_storage: Sequence[list[Any]] | None,
    output_storage: Sequence[list[Any]] | None,
    description: str,
    compiled: bool = False,
) -> tuple[Thunk, list[Container], list[Container]]:
    """``(thunk, input_containers, output_containers)`` around ``run``,
    which maps the graph's input values to its output values. Given
    ``input_storage``/``output_storage`` cells are used as the containers'
    storage."""
    inputs = _containers(fgraph.inputs, input_storage, "input")
    outputs = _containers(fgraph.outputs, output_storage, "output")
    kind = _CThunk if compiled else Thunk
    return kind(run, inputs, outputs, description), inputs, outputs


def _containers(
    variables: Sequence[Variable], storage: Sequence[list[Any]] | None, what: str
) -> list[Container]:
    if storage is None:
        return [Container(v) for v in variables]
    if len(storage) != len(variables):
        raise ValueError(f"{len(storage)} {what} storage cells for {len(variables)} {what}s")
    return [Container(v, cell) for v, cell in zip(variables, storage, strict=True)]


class Linker:
    """What every linker shares: ``accept(fgraph, no_recycling)`` binds it to
    a graph (a copy of the linker when it is bound to another one already),
    and ``make_thunk()`` returns ``(thunk, input_containers,
    output_containers)`` around what :meth:`runner` makes of the graph.

    The nodes run in :meth:`order`: the linker's ``schedule(fgraph)`` when
    it was given one, else a topological order that honours the destroy
    orderings (:func:`~opweave.graph.destroy.ordered_nodes`). The variables
    in ``no_recycling`` (set by :meth:`accept`) are emptied at every run."""

    fgraph: FunctionGraph | None = None
    schedule: Schedule | None = None
    no_recycling: list[Variable] = []  # noqa: RUF012  # replaced by accept()
    _order: list[Apply] | None = None  # order(), once per bound graph

    def accept(self, fgraph: FunctionGraph, no_recycling: Any = None, profile: Any = None) -> Any:
        """Binds the linker to ``fgraph``; returns the bound linker.
        ``no_recycling`` (variables, or True for all) adds to what the
        linker never keeps between calls: the outputs and every variable
        they view (:func:`~opweave.graph.destroy.no_recycling_of`)."""
        if self.fgraph is not None and self.fgraph is not fgraph:
            clone = copy.copy(self)
            clone.fgraph = None
            return clone.accept(fgraph, no_recycling, profile)
        self.fgraph = fgraph
        self.no_recycling = no_recycling_of(fgraph, no_recycling)
        self._order = None
        return self

    def order(self) -> list[Apply]:
        """The bound graph's nodes in the order they run (worked out once
        per bound graph)."""
        if self._order is None:
            self._order = ordered_nodes(self.bound_graph(), self.schedule)
        return list(self._order)

    def bound_graph(self) -> FunctionGraph:
        """The graph given to :meth:`accept`."""
        if self.fgraph is None:
            raise ValueError(f"{type(self).__name__}.accept(fgraph) must be called first")
        return self.fgraph

    def runner(self, fgraph: FunctionGraph) -> tuple[Runner, str, bool]:
        """``(run, description, compiled)``: ``run`` maps the graph's input
        values to its outputs; ``compiled`` is true for one compiled module."""
        raise NotImplementedError

    def make_thunk(
        self,
        input_storage: Sequence[list[Any]] | None = None,
        output_storage: Sequence[list[Any]] | None = None,
        storage_map: Any = None,
        **kwargs: Any,
    ) -> tuple[Thunk, list[Container], list[Container]]:
        """``(thunk, input_containers, output_containers)``; given storage
        cells become the containers' storage."""
        fgraph = self.bound_graph()
        run, description, compiled = self.runner(fgraph)
        return thunk_of(run, fgraph, input_storage, output_storage, description, compiled)

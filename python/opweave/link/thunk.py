"""The linker contract, as in PyTensor: ``accept(fgraph)``, then
``make_thunk()``, which returns ``(thunk, input_containers,
output_containers)``.

A :class:`Container` is a storage cell (``data``, kept in the one-element
list ``storage``); ``thunk()`` reads the input containers, runs the graph
once and fills the output containers. Every linker (``CLinker``,
``OpWiseCLinker``, ``VMLinker``, ``PerformLinker``, ``DualLinker``, and
DebugMode's) makes the graph's Function in ``make_function``, and its thunk
here runs that Function: the one path :func:`opweave.function` takes too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from opweave.graph.basic import Apply, Variable
from opweave.graph.destroy import (
    InconsistencyError,
    Schedule,
    destroyed_outputs,
    no_recycling_of,
    ordered_nodes,
)
from opweave.graph.fg import FunctionGraph
from opweave.link.callable import InputBinding

__all__ = ["Container", "Linker", "Thunk", "bind_graph", "set_output_copy", "thunk_of"]

# How a linker copies a graph output that a later node destroys: DeepCopyOp,
# which opweave.compile.ops (above the linkers) sets when it is imported.
_output_copy: list[Callable[[Variable], Variable]] = []


def set_output_copy(make: Callable[[Variable], Variable]) -> None:
    """Sets how linkers copy a graph output that a later node destroys:
    ``make(variable)`` returns a copy of ``variable`` made by a node."""
    _output_copy[:] = [make]


def _outputs_copied(fgraph: FunctionGraph) -> FunctionGraph:
    """``fgraph``, or a graph of the same nodes whose outputs that a later
    node destroys are copies made before it runs
    (:func:`~opweave.graph.destroy.destroyed_outputs`)."""
    read = destroyed_outputs(fgraph.apply_nodes, fgraph.outputs)
    if not read:
        return fgraph
    if not _output_copy:
        raise InconsistencyError(
            f"graph output {read[0]} ({fgraph.outputs[read[0]]}) is destroyed by a later "
            "node; a linker copies it with opweave.compile.ops.DeepCopyOp: import "
            "opweave.compile first"
        )
    make = _output_copy[0]
    outputs = [make(v) if k in read else v for k, v in enumerate(fgraph.outputs)]
    return FunctionGraph(list(fgraph.inputs), outputs)


def bind_graph(
    fgraph: FunctionGraph, no_recycling: Any = None
) -> tuple[FunctionGraph, list[Variable]]:
    """``fgraph`` as a linker runs it, and what it never keeps between calls:
    the graph with copies of its outputs that a later node destroys, and
    ``no_recycling`` (variables, or True for all) completed with the
    outputs and every variable they view
    (:func:`~opweave.graph.destroy.no_recycling_of`). Linkers and the compile
    service bind every graph so."""
    bound = _outputs_copied(fgraph)
    return bound, no_recycling_of(bound, no_recycling)


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
    ``outputs`` (lists of :class:`Container`). Returns None.

    It carries what PyTensor's ``Function`` reads from its virtual machine:
    ``nodes`` (in the order they run), ``thunks`` (one callable per node:
    the linked graph's Function, which runs them all), ``storage_map``
    (variable -> one-element cell; the inputs' and outputs' cells are the
    containers'), ``position_of_error`` (the index in ``nodes`` of the node
    that raised during the last call, else -1), ``allow_gc`` and
    ``need_update_inputs``. ``function`` is the linked graph's
    :class:`opweave._core.Function` (input values in, a list of output
    values out): what :func:`opweave.function` returns, so both run the
    same code."""

    def __init__(
        self,
        function: Any,
        inputs: list[Container],
        outputs: list[Container],
        nodes: list[Apply],
        storage_map: dict[Variable, list[Any]],
        allow_gc: bool,
    ) -> None:
        self.function = function
        self.inputs = inputs
        self.outputs = outputs
        self.nodes = nodes
        self.thunks = [function] * len(nodes)
        self.storage_map = storage_map
        self.allow_gc = allow_gc
        self.need_update_inputs = True  # updates are the caller's to write back
        self.position_of_error = -1
        self.lazy = False
        self.unpacks = False  # the Function returns its one output itself
        library = getattr(function, "library", None)
        self.description = f"module {library}" if library else type(function).__name__

    def __call__(self) -> None:
        self.position_of_error = -1
        try:
            results = self.function(*[c.storage[0] for c in self.inputs])
        except Exception as error:
            failed = getattr(error, "failed_node", None)
            self.position_of_error = failed if isinstance(failed, int) else -1
            raise
        if self.unpacks:
            results = [results]
        for container, value in zip(self.outputs, results, strict=True):
            container.storage[0] = value

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.description})"

    __repr__ = __str__


class _CThunk(Thunk):
    """The thunk of a graph compiled into one module (PyTensor's name)."""


def thunk_of(
    function: Any,
    fgraph: FunctionGraph,
    nodes: Sequence[Apply],
    input_storage: Sequence[list[Any]] | None,
    output_storage: Sequence[list[Any]] | None,
    storage_map: dict[Variable, list[Any]] | None = None,
    allow_gc: bool = False,
) -> tuple[Thunk, list[Container], list[Container]]:
    """``(thunk, input_containers, output_containers)`` around ``function``,
    which maps the graph's input values to its output values. Given
    ``input_storage``/``output_storage`` cells are used as the containers'
    storage; the cells of a given ``storage_map`` are used where it has
    the variable (and the map is completed)."""
    cells = storage_map if storage_map is not None else {}
    if input_storage is None:
        input_storage = [cells.get(v) or [None] for v in fgraph.inputs]
    if output_storage is None:
        output_storage = [cells.get(v) or [None] for v in fgraph.outputs]
    inputs = _containers(fgraph.inputs, input_storage, "input")
    outputs = _containers(fgraph.outputs, output_storage, "output")
    for container, variable in [
        *zip(inputs, fgraph.inputs, strict=True),
        *zip(outputs, fgraph.outputs, strict=True),
    ]:
        cells[variable] = container.storage
    for node in nodes:
        for variable in [*node.inputs, *node.outputs]:
            cells.setdefault(variable, [getattr(variable, "data", None)])
    kind = _CThunk if hasattr(function, "library") else Thunk
    thunk = kind(function, inputs, outputs, list(nodes), cells, allow_gc)
    return thunk, inputs, outputs


def _containers(
    variables: Sequence[Variable], storage: Sequence[list[Any]] | None, what: str
) -> list[Container]:
    if storage is None:
        return [Container(v) for v in variables]
    if len(storage) != len(variables):
        raise ValueError(f"{len(storage)} {what} storage cells for {len(variables)} {what}s")
    return [Container(v, cell) for v, cell in zip(variables, storage, strict=True)]


class Linker:
    """What every linker shares, on PyTensor's contract: ``accept(fgraph,
    no_recycling=..., profile=...)`` binds it to a graph (a copy of the
    linker when it is bound to another one already), and
    ``make_thunk(input_storage=..., output_storage=..., storage_map=...)``
    returns ``(thunk, input_containers, output_containers)``. A linker
    makes the graph's :class:`opweave._core.Function` in
    :meth:`make_function`; the thunk runs that Function, and
    :func:`opweave.function` returns it.

    The nodes run in :meth:`order`: the linker's ``schedule(fgraph)`` when
    it was given one, else a topological order that honours the destroy
    orderings (:func:`~opweave.graph.destroy.ordered_nodes`). The variables
    in ``no_recycling`` (set by :meth:`accept`) are emptied at every run."""

    # What opweave.function prepares a graph for (constant folding, copies
    # of outputs): "c", "c|py" or "py".
    kind = ""
    # Whether intermediate results are freed during a call (PyTensor's
    # allow_gc); the whole-graph C linker keeps its storage.
    allow_gc = False
    fgraph: FunctionGraph | None = None
    schedule: Schedule | None = None
    no_recycling: list[Variable] = []  # noqa: RUF012  # replaced by accept()
    _accepted: FunctionGraph | None = None  # the graph given to accept()
    _order: list[Apply] | None = None  # order(), once per bound graph

    def accept(self, fgraph: FunctionGraph, no_recycling: Any = None, profile: Any = None) -> Any:
        """Binds the linker to ``fgraph``; returns the bound linker.
        ``no_recycling`` (variables, or True for all) adds to what the
        linker never keeps between calls: the outputs and every variable
        they view (:func:`~opweave.graph.destroy.no_recycling_of`). An
        output that a later node destroys is linked as a copy made before
        that node runs: :meth:`bound_graph` is then a graph of the same
        nodes, and the output containers hold the copies."""
        if self.fgraph is not None and self._accepted is not fgraph:
            return self.for_graph(fgraph).accept(fgraph, no_recycling, profile)
        self._accepted = fgraph
        self.fgraph, self.no_recycling = bind_graph(fgraph, no_recycling)
        self._order = None
        return self

    def for_graph(self, fgraph: FunctionGraph) -> Linker:
        """An unbound copy of this linker, with its settings, to link
        ``fgraph`` (a linker may choose another: the default mode's C linker
        links a graph with nodes that have no C code node by node)."""
        clone = copy.copy(self)
        clone.fgraph = clone._accepted = None
        clone._order = None
        return clone

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

    def make_function(self, binding: InputBinding, single: bool) -> Any:
        """The bound graph as an :class:`opweave._core.Function` taking the
        input values as ``binding`` binds them and returning the output
        values (the only one when ``single``)."""
        raise NotImplementedError

    def make_thunk(
        self,
        input_storage: Sequence[list[Any]] | None = None,
        output_storage: Sequence[list[Any]] | None = None,
        storage_map: dict[Variable, list[Any]] | None = None,
        binding: InputBinding | None = None,
        unpack_single: bool = False,
        **kwargs: Any,
    ) -> tuple[Thunk, list[Container], list[Container]]:
        """``(thunk, input_containers, output_containers)``; given storage
        cells become the containers' storage. opweave's own arguments shape
        the thunk's Function (``thunk.function``): ``binding`` names and
        converts its inputs (default: positional, named after the linker),
        and with ``unpack_single`` it returns its one output itself."""
        fgraph = self.bound_graph()
        if binding is None:
            binding = InputBinding(fgraph.inputs, f"{type(self).__name__} thunk")
        function = self.make_function(binding, unpack_single)
        thunk, inputs, outputs = thunk_of(
            function,
            fgraph,
            self.order(),
            input_storage,
            output_storage,
            storage_map,
            self.allow_gc,
        )
        thunk.unpacks = unpack_single
        return thunk, inputs, outputs

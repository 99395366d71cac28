"""The perform linker: every node runs its op's Python ``perform``.

``PerformLinker`` is what ``mode="py"`` uses, and DebugMode's Python thunks
come from :func:`perform_thunk`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from opweave.graph.basic import Apply
from opweave.graph.fg import FunctionGraph
from opweave.graph.op import Op
from opweave.graph.utils import MethodNotDefined
from opweave.link.thunk import Linker, Runner

__all__ = [
    "NodeThunk",
    "PerformLinker",
    "Step",
    "has_perform",
    "node_steps",
    "perform_params",
    "perform_thunk",
]

NodeThunk = Callable[..., list[Any]]
"""Runs one node: ``thunk(input_values, outputs=None)`` returns the output
values. ``outputs`` optionally offers a storage object (or None) per output,
as a preallocated output."""


class Step(NamedTuple):
    """One step of a function run node by node: one node, or a compiled
    region of several (``mode="c|py"``)."""

    run: Callable[..., list[Any]]  # run(*input values) -> output values
    inputs: list[int]  # ids of the variables it reads
    outputs: list[int]  # ids of the variables it makes
    label: str  # "node 3 (Op)", or "nodes 0-5 (C)"
    outcomes: list[Any]  # per node: the module's cache outcome, None for perform
    checks_inputs: bool  # True when compiled code checks (and converts) its inputs
    packed: bool = False  # True: run takes one sequence of values (run(values))
    node: int | None = None  # a one-node Python step: the node's number (error.failed_node)


def node_steps(nodes: Sequence[Apply], thunks: Sequence[NodeThunk]) -> list[Step]:
    """One step per node, running its thunk (which does not check inputs)."""
    return [
        Step(
            thunk,
            [id(v) for v in node.inputs],
            [id(v) for v in node.outputs],
            f"node {index} ({node.op})",
            [getattr(thunk, "outcome", None)],
            checks_inputs=False,
            packed=True,
            node=index,
        )
        for index, (node, thunk) in enumerate(zip(nodes, thunks, strict=True))
    ]


def has_perform(op: Any) -> bool:
    """True if ``op`` has a Python implementation."""
    perform = getattr(type(op), "perform", None)
    return perform is not None and perform is not Op.perform


def perform_params(node: Apply) -> tuple[Any, ...]:
    """The extra arguments of ``node.op.perform``: ``(params,)`` for an op
    with a ``params_type`` (its ``get_params(node)``, filtered by that type)
    whose ``perform`` takes a fourth argument, as PyTensor passes them;
    ``()`` otherwise (a ``perform(node, inputs, outputs)`` reads its op's
    attributes itself)."""
    op: Any = node.op  # an op with a params_type has get_params (ops are duck-typed)
    params_type = getattr(op, "params_type", None)
    if params_type is None or not _takes_params(type(op).perform):
        return ()
    return (params_type.filter(op.get_params(node)),)


@functools.cache
def _takes_params(perform: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(perform).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 5  # self, node, inputs, outputs, params


def perform_thunk(node: Apply) -> NodeThunk:
    """Runs ``node.op.perform`` and checks that every output was set. The
    output cells start as the offered storage (or None), as PyTensor's
    storage cells do between calls."""
    op, n_out = node.op, len(node.outputs)
    params = perform_params(node)

    def run(values: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
        if outputs is None:
            cells: list[list[Any]] = [[None] for _ in range(n_out)]
        else:
            cells = [[value] for value in outputs]
        op.perform(node, list(values), cells, *params)
        for position, cell in enumerate(cells):
            if cell[0] is None:
                raise ValueError(f"{op}.perform did not set output {position}")
        return [cell[0] for cell in cells]

    return run


class PerformLinker(Linker):
    """Makes one Python thunk per node of a graph, each running ``perform``."""

    def __init__(self, schedule: Any = None) -> None:
        self.fgraph: FunctionGraph | None = None
        self.schedule = schedule

    def runner(self, fgraph: FunctionGraph) -> tuple[Runner, str, bool]:
        """Every node's ``perform``, in :meth:`order`."""
        from opweave.compile.function import graph_function

        run = graph_function(fgraph, "py", "PerformLinker thunk", self.order(), self.no_recycling)
        return run, "perform", False

    def node_thunk(self, node: Apply, index: int) -> NodeThunk:
        """The thunk of ``node``; MethodNotDefined if its op has no perform."""
        if not has_perform(node.op):
            raise MethodNotDefined(
                f"node {index} ({node.op}) has no Python implementation: "
                f"{type(node.op).__name__} defines no perform; use mode='C'"
            )
        return perform_thunk(node)

    def thunks(self) -> list[NodeThunk]:
        """One thunk per node of the bound graph, in :meth:`order`."""
        return [self.node_thunk(node, index) for index, node in enumerate(self.order())]

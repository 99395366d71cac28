"""The perform linker: every node runs its op's Python ``perform``.

``PerformLinker`` is what ``mode="py"`` uses, and DebugMode's Python thunks
come from :func:`perform_thunk`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from opweave.graph.basic import Apply
from opweave.graph.fg import FunctionGraph
from opweave.graph.op import Op
from opweave.graph.utils import MethodNotDefined

__all__ = ["NodeThunk", "PerformLinker", "Step", "has_perform", "node_steps", "perform_thunk"]

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
        )
        for index, (node, thunk) in enumerate(zip(nodes, thunks, strict=True))
    ]


def has_perform(op: Any) -> bool:
    """True if ``op`` has a Python implementation."""
    perform = getattr(type(op), "perform", None)
    return perform is not None and perform is not Op.perform


def perform_thunk(node: Apply) -> NodeThunk:
    """Runs ``node.op.perform`` and checks that every output was set. The
    output cells start as the offered storage (or None), as PyTensor's
    storage cells do between calls."""
    op, n_out = node.op, len(node.outputs)

    def run(values: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
        if outputs is None:
            cells: list[list[Any]] = [[None] for _ in range(n_out)]
        else:
            cells = [[value] for value in outputs]
        op.perform(node, list(values), cells)
        for position, cell in enumerate(cells):
            if cell[0] is None:
                raise ValueError(f"{op}.perform did not set output {position}")
        return [cell[0] for cell in cells]

    return run


class PerformLinker:
    """Makes one Python thunk per node of a graph, each running ``perform``."""

    def __init__(self) -> None:
        self.fgraph: FunctionGraph | None = None

    def accept(self, fgraph: FunctionGraph) -> PerformLinker:
        """Binds the linker to ``fgraph``; returns the linker."""
        self.fgraph = fgraph
        return self

    def node_thunk(self, node: Apply, index: int) -> NodeThunk:
        """The thunk of ``node``; MethodNotDefined if its op has no perform."""
        if not has_perform(node.op):
            raise MethodNotDefined(
                f"node {index} ({node.op}) has no Python implementation: "
                f"{type(node.op).__name__} defines no perform; use mode='C'"
            )
        return perform_thunk(node)

    def thunks(self) -> list[NodeThunk]:
        """One thunk per node of the bound graph, in topological order."""
        if self.fgraph is None:
            raise ValueError("PerformLinker.accept(fgraph) must be called first")
        nodes = self.fgraph.toposort()
        return [self.node_thunk(node, index) for index, node in enumerate(nodes)]

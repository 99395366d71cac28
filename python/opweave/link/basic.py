"""The perform linker: every node runs its op's Python ``perform``.

``PerformLinker`` is what ``mode="py"`` uses, and DebugMode's Python thunks
come from :func:`perform_thunk`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opweave.graph.basic import Apply
from opweave.graph.fg import FunctionGraph
from opweave.graph.op import Op
from opweave.graph.utils import MethodNotDefined

__all__ = ["NodeThunk", "PerformLinker", "has_perform", "perform_thunk"]

NodeThunk = Callable[..., list[Any]]
"""Runs one node: ``thunk(input_values, outputs=None)`` returns the output
values. ``outputs`` optionally offers a storage object (or None) per output,
as a preallocated output."""


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
        offered = [None] * n_out if outputs is None else outputs
        cells: list[list[Any]] = [[value] for value in offered]
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

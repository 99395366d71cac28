"""The perform linker: every node runs its op's Python ``perform``
(:mod:`opweave.graph.perform`, whose helpers it re-exports).

``PerformLinker`` is what ``mode="py"`` uses, and DebugMode's Python thunks
come from :func:`perform_thunk`.
"""

from __future__ import annotations

from typing import Any

from opweave import _core
from opweave.graph.basic import Apply
from opweave.graph.perform import NodeThunk, has_perform, perform_params, perform_thunk
from opweave.graph.utils import MethodNotDefined
from opweave.link.callable import InputBinding
from opweave.link.runner import NodeRunner, node_steps
from opweave.link.thunk import Linker

__all__ = [
    "NodeThunk",
    "PerformLinker",
    "has_perform",
    "perform_params",
    "perform_thunk",
    "python_thunk",
]


def python_thunk(node: Apply, index: int) -> NodeThunk:
    """The ``perform`` thunk of ``node``; MethodNotDefined, naming the node
    (``index``), if its op has no perform."""
    if not has_perform(node.op):
        raise MethodNotDefined(
            f"node {index} ({node.op}) has no Python implementation: "
            f"{type(node.op).__name__} defines no perform; use mode='C'"
        )
    return perform_thunk(node)


class PerformLinker(Linker):
    """Makes one Python thunk per node of a graph, each running ``perform``
    (``mode="py"``)."""

    kind = "py"

    def __init__(self, allow_gc: bool | None = None, schedule: Any = None) -> None:
        self.fgraph = None
        self.schedule = schedule
        self.allow_gc = True if allow_gc is None else allow_gc

    def make_function(self, binding: InputBinding, single: bool) -> Any:
        """Every node's ``perform``, in :meth:`order`, in a generated loop
        whose values are fresh at every call."""
        nodes = self.order()
        steps = node_steps(nodes, [self.node_thunk(n, k) for k, n in enumerate(nodes)])
        runner = NodeRunner(self.bound_graph(), binding, single, steps, self.allow_gc)
        return _core.Function(impl=runner.run, unpack_single=single)

    def node_thunk(self, node: Apply, index: int) -> NodeThunk:
        """The thunk of ``node`` (:func:`python_thunk`)."""
        return python_thunk(node, index)

    def thunks(self) -> list[NodeThunk]:
        """One thunk per node of the bound graph, in :meth:`order`."""
        return [self.node_thunk(node, index) for index, node in enumerate(self.order())]

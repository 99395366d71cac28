"""The per-node linker (``Mode(linker="c|py")``): C where nodes have C code,
Python ``perform`` for the others, run by one loop in C.

A graph whose node codes were all compiled before runs the modules that
export them and compiles nothing; a graph whose nodes all have C code is one
module (as in C mode); otherwise it is compiled by regions
(:mod:`._regions`, the rule in :mod:`._layout`). Every module comes from the
compile service (:mod:`.service`).

For a single node (:meth:`OpWiseCLinker.c_thunk`), the node is compiled as a
graph of its own whose inputs are fresh variables of the node's variable
inputs; constants stay constants. So that module depends only on the op, the
types and any scalar constants, and every graph that applies the same op to
the same types shares it through the module cache.
"""

from __future__ import annotations

from typing import Any

from opweave.graph.basic import Apply
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import NodeThunk, has_perform, perform_thunk
from opweave.link.c._layout import linked_function
from opweave.link.c._regions import any_thunk, region_steps
from opweave.link.c._steps import can_run_in_c
from opweave.link.c.service import GraphBuild, node_thunk
from opweave.link.callable import InputBinding
from opweave.link.thunk import Linker

__all__ = [
    "NodeThunk",
    "OpWiseCLinker",
    "can_run_in_c",
    "has_perform",
    "perform_thunk",
    "region_steps",
]


class OpWiseCLinker(Linker):
    """Links the nodes of a graph one run at a time (``mode="c|py"``): each
    run of consecutive nodes with C code is a compiled module, the others
    run ``perform``. With ``allow_gc`` (the default) the loop releases each
    value it passes between steps right after its last reader."""

    kind = "c|py"

    def __init__(self, allow_gc: bool | None = None, schedule: Any = None) -> None:
        self.fgraph: FunctionGraph | None = None
        self.schedule = schedule
        self.allow_gc = True if allow_gc is None else allow_gc

    def make_function(self, binding: InputBinding, single: bool) -> Any:
        """The graph node by node, in C where nodes have C code (see
        :mod:`._layout`)."""
        build = GraphBuild(self.bound_graph(), self.order(), None, self.no_recycling)
        return linked_function(build, binding, single, True, allow_gc=self.allow_gc)

    def c_thunk(self, node: Apply) -> NodeThunk | None:
        """A thunk running ``node``'s own compiled module, or None if the
        node has no usable C code (:func:`opweave.link.c.service.node_thunk`)."""
        return node_thunk(node)

    def node_thunk(self, node: Apply, index: int) -> NodeThunk:
        """C if the node has it, else ``perform``; an error naming the node
        if it has neither."""
        return any_thunk(node, index)

"""Running a graph node by node from Python: the loop of ``mode="py"``
(every node runs ``perform``) and ``mode="c|py"`` (nodes with C code run
their own compiled module)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opweave.graph.basic import Constant
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import NodeThunk
from opweave.link.callable import add_note

__all__ = ["NodeRunner"]


class NodeRunner:
    """Calls one thunk per node, in topological order, passing values
    between them in a dict keyed by variable."""

    def __init__(
        self, fgraph: FunctionGraph, inputs: Any, single: bool, thunks: Sequence[NodeThunk]
    ) -> None:
        self.inputs = inputs
        self.single = single
        self.input_ids = [id(v) for v in fgraph.inputs]
        self.output_ids = [id(v) for v in fgraph.outputs]
        self.constants = {id(v): v.data for v in fgraph.variables if isinstance(v, Constant)}
        self.steps = [
            (thunk, [id(v) for v in node.inputs], [id(v) for v in node.outputs], index, node)
            for index, (node, thunk) in enumerate(zip(fgraph.toposort(), thunks, strict=True))
        ]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        values = self.inputs.filter(self.inputs.bind(args, kwargs))
        storage = dict(self.constants)
        storage.update(zip(self.input_ids, values, strict=True))
        for thunk, inputs, outputs, index, node in self.steps:
            try:
                results = thunk([storage[i] for i in inputs])
            except Exception as error:
                add_note(error, f"raised by node {index} ({node.op})")
                raise
            storage.update(zip(outputs, results, strict=True))
        results = [storage[i] for i in self.output_ids]
        return results[0] if self.single else results

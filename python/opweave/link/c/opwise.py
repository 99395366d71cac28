"""The per-node linker (``Mode(linker="c|py")``): one compiled module per
node that has C code, Python ``perform`` for the others, and a Python loop
between them.

Each node is compiled as a graph of its own whose inputs are fresh variables
of the node's variable inputs; constants stay constants (a tensor constant
is passed in when the function is created, a scalar one is a literal). So
the module depends only on the op, the types and any scalar constants, and
every graph that applies the same op to the same types shares it through
the module cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opweave.graph.basic import Apply, Constant, Variable
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import NodeThunk, has_perform, perform_thunk
from opweave.link.c.hooks import get_hook
from opweave.link.c.spec import MissingCCode
from opweave.link.callable import InputBinding, compiled_function

__all__ = ["NodeThunk", "OpWiseCLinker", "has_perform", "perform_thunk"]


def _is_float16(variable: Variable) -> bool:
    return getattr(variable.type, "dtype", None) == "float16"


class OpWiseCLinker:
    """Compiles the nodes of a graph one by one."""

    def c_thunk(self, node: Apply) -> NodeThunk | None:
        """A thunk running ``node``'s own compiled module, or None if the
        node has no C code (or has float16 data and an op without
        ``_f16_ok``)."""
        if get_hook(node.op, "c_code") is None:
            return None
        touches_f16 = any(_is_float16(v) for v in [*node.inputs, *node.outputs])
        if touches_f16 and not getattr(node.op, "_f16_ok", False):
            return None
        from opweave.link.c.basic import CLinker

        fgraph, positions = _single_node_graph(node)
        try:
            compiled = CLinker().accept(fgraph).compile()
        except MissingCCode:  # an op or type of the node has no C code
            return None
        binding = InputBinding(fgraph.inputs, f"the C code of {node.op}")
        function = compiled_function(compiled, binding, single=False)

        def run(values: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
            inputs = [values[p] for p in positions]
            if outputs is None:
                return function(*inputs)  # inexact values go through the fallback
            return function.call_with_outputs(inputs, outputs)

        run.function = function  # type: ignore[attr-defined]  # keeps it alive
        run.outcome = compiled.outcome  # type: ignore[attr-defined]
        return run

    def node_thunk(self, node: Apply, index: int) -> NodeThunk:
        """C if the node has it, else ``perform``; an error naming the node
        if it has neither."""
        thunk = self.c_thunk(node)
        if thunk is not None:
            return thunk
        if has_perform(node.op):
            return perform_thunk(node)
        raise MissingCCode(
            f"node {index} ({node.op}) can run neither in C (no usable C code) nor in "
            f"Python ({type(node.op).__name__} defines no perform)"
        )


def _single_node_graph(node: Apply) -> tuple[FunctionGraph, list[int]]:
    """``node`` alone, on fresh input variables (one per distinct variable
    input; constants stay constants, so ``c_code`` sees their data), and
    for each fresh input the position of the node input it stands for."""
    fresh: dict[int, Variable] = {}
    positions: list[int] = []
    for position, variable in enumerate(node.inputs):
        if id(variable) not in fresh and not isinstance(variable, Constant):
            fresh[id(variable)] = variable.type()
            positions.append(position)
    inputs = [fresh.get(id(v), v) for v in node.inputs]
    outputs = [v.clone() for v in node.outputs]
    clone = Apply(node.op, inputs, outputs)
    return FunctionGraph(list(fresh.values()), list(clone.outputs)), positions

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

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from opweave import _core
from opweave.graph.basic import Apply, Constant, Variable
from opweave.graph.fg import FunctionGraph
from opweave.graph.op import Op
from opweave.link.c.hooks import get_hook
from opweave.link.c.spec import MissingCCode

__all__ = ["NodeThunk", "OpWiseCLinker", "has_perform", "perform_thunk"]

NodeThunk = Callable[[Sequence[Any]], list[Any]]
"""Runs one node: input values in, output values out."""


def has_perform(op: Any) -> bool:
    """True if ``op`` has a Python implementation."""
    perform = getattr(type(op), "perform", None)
    return perform is not None and perform is not Op.perform


def perform_thunk(node: Apply) -> NodeThunk:
    """Runs ``node.op.perform`` and checks that every output was set."""
    op, n_out = node.op, len(node.outputs)

    def run(values: Sequence[Any]) -> list[Any]:
        cells: list[list[Any]] = [[None] for _ in range(n_out)]
        op.perform(node, list(values), cells)
        for position, cell in enumerate(cells):
            if cell[0] is None:
                raise ValueError(f"{op}.perform did not set output {position}")
        return [cell[0] for cell in cells]

    return run


def _is_float16(variable: Variable) -> bool:
    return getattr(variable.type, "dtype", None) == "float16"


class _NodeInputs:
    """Converts the values a node receives when its module refuses them
    (e.g. a Python float from ``perform`` where C wants an exact type)."""

    def __init__(self, variables: list[Variable]) -> None:
        self.variables = variables
        self.function: Any = lambda: None

    def __call__(self, args: tuple, kwargs: Any, error: Any, failed_block: int) -> Any:
        if error is not None and failed_block > len(self.variables):
            raise error
        values = [v.type.filter(x, strict=False) for v, x in zip(self.variables, args, strict=True)]
        function = self.function()
        if function is None:
            raise ReferenceError("the opweave function was deleted")
        return function.call_exact(*values)


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
        fallback = _NodeInputs(fgraph.inputs)
        function = _core.Function(
            module=compiled.module,
            orphans=compiled.orphans,
            unpack_single=False,
            fallback=fallback,
        )
        fallback.function = weakref.ref(function)
        call = function  # inexact values go through the fallback's filter

        def run(values: Sequence[Any]) -> list[Any]:
            return call(*[values[p] for p in positions])

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

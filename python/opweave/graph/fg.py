"""A minimal function graph: fixed inputs, outputs and the nodes between."""

from __future__ import annotations

from collections.abc import Sequence

from opweave.graph.basic import (
    Apply,
    Variable,
    graph_inputs,
    io_toposort,
    is_constant,
    is_variable,
    vars_between,
)

__all__ = ["FunctionGraph", "MissingInputError"]


class MissingInputError(ValueError):
    """An output depends on a variable that is neither an input nor a constant."""


class FunctionGraph:
    """The subgraph from ``inputs`` to ``outputs``: its nodes in topological
    order, its variables and, for each variable, the nodes that use it.

    Without ``inputs``, they are the variables the outputs need that no node
    computes, but constants. ``clone`` is accepted for PyTensor's signature:
    the graph is used as it is, never copied."""

    def __init__(
        self,
        inputs: Sequence[Variable] | None = None,
        outputs: Sequence[Variable] | None = None,
        clone: bool = False,
    ) -> None:
        if outputs is None:
            raise TypeError("FunctionGraph needs outputs")
        self.outputs = list(outputs)
        for position, variable in enumerate(self.outputs):
            if not is_variable(variable):
                raise TypeError(f"output {position} is not a Variable: {variable!r}")
        if inputs is None:  # every ownerless variable the outputs need, but constants
            inputs = [v for v in graph_inputs(self.outputs) if not is_constant(v)]
        self.inputs = list(inputs)
        # An input may be a Constant (then its value comes from the caller,
        # as for any input) and may be given twice (both positions read it).
        seen: set[int] = set()
        for position, variable in enumerate(self.inputs):
            if not is_variable(variable):
                raise TypeError(f"input {position} is not a Variable: {variable!r}")
            seen.add(id(variable))
        self.apply_nodes: list[Apply] = io_toposort(self.inputs, self.outputs)
        self._order: list[Apply] | None = None  # toposort(), computed once
        self.variables: list[Variable] = vars_between(self.inputs, self.outputs)
        self.clients: dict[int, list[tuple[Apply, int]]] = {id(v): [] for v in self.variables}
        for node in self.apply_nodes:
            for position, variable in enumerate(node.inputs):
                self.clients.setdefault(id(variable), []).append((node, position))
        self._check_inputs(seen)

    def _check_inputs(self, inputs: set[int]) -> None:
        for variable in self.variables:
            if variable.owner is None and id(variable) not in inputs:
                if is_constant(variable):
                    continue
                users = [str(node) for node, _ in self.clients.get(id(variable), [])]
                used_by = f", used by {', '.join(users)}" if users else ""
                raise MissingInputError(
                    f"the graph needs {variable} (type {variable.type}){used_by}, "
                    "but it is not among the inputs"
                )

    def toposort(self) -> list[Apply]:
        """The nodes, each after the nodes that compute its inputs and after
        every other reader of what it destroys (:mod:`opweave.graph.destroy`;
        InconsistencyError when that order does not exist)."""
        if self._order is None:
            from opweave.graph.destroy import order_nodes

            self._order = order_nodes(self.apply_nodes)
        return list(self._order)

    def __str__(self) -> str:
        return f"FunctionGraph({', '.join(str(o) for o in self.outputs)})"

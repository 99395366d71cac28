"""The graph layer: variables, apply nodes, ops, types and graph walks."""

from __future__ import annotations

from opweave.graph.basic import Apply, Constant, Variable
from opweave.graph.fg import FunctionGraph
from opweave.graph.op import Op
from opweave.graph.type import Type

__all__ = ["Apply", "Constant", "FunctionGraph", "Op", "Type", "Variable"]

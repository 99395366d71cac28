"""Compiled graphs for the tests of opweave._core.StepRunner, and the rows
of its step table (the ``graphs`` fixture is in tests/python/_core/conftest.py)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from opweave.graph.fg import FunctionGraph
from opweave.link.c.basic import CLinker, CompiledGraph


class Graphs(NamedTuple):
    times: CompiledGraph  # z = x * y, for a dvector x and a dscalar y
    times_three: CompiledGraph  # z = x * 3.0, the 3.0 an orphan


def compile_graph(inputs: list[Any], outputs: list[Any]) -> CompiledGraph:
    return CLinker().accept(FunctionGraph(inputs, outputs)).compile()


def compiled(
    graph: CompiledGraph, inputs: list[int], outputs: list[int], offer: list[bool] | None = None
) -> tuple[Any, ...]:
    offered = offer if offer is not None else [False] * len(outputs)
    return (0, graph.module.abi, graph.module, graph.orphans, inputs, outputs, offered)


def python(callable: Any, inputs: list[int], outputs: list[int]) -> tuple[Any, ...]:
    return (1, callable, inputs, outputs)


def scalar(value: float) -> np.ndarray:
    return np.array(value)


X = np.array([1.0, 2.0, 3.0])

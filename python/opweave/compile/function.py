"""``opweave.function``: from a graph to a callable.

In C mode the callable is an :class:`opweave._core.Function` running the
graph's compiled module through vectorcall (made by
:mod:`opweave.link.callable`, the one path from a compiled module to a
callable); the other modes wrap a Python loop over the nodes in the same type.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from opweave import _core
from opweave.compile.mode import Mode, get_mode
from opweave.compile.rewrite import prepare
from opweave.graph.basic import Variable
from opweave.graph.fg import FunctionGraph
from opweave.link.callable import InputBinding, compiled_function

__all__ = ["Function", "function"]

Function = _core.Function


def function(
    inputs: Sequence[Variable],
    outputs: Variable | Sequence[Variable],
    mode: str | Mode | None = None,
    name: str | None = None,
    trust_input: bool = False,
    allow_input_downcast: bool | None = None,
    updates: Any = None,
    givens: Any = None,
    on_unused_input: str | None = None,
) -> Any:
    """Compiles the graph from ``inputs`` to ``outputs`` into a callable.

    A single output variable gives a function returning a value; a list of
    outputs gives a function returning a list. In C mode (the default) the
    whole graph is one compiled module, built once and cached on disk.
    ``trust_input=True`` turns off the conversion of inexact inputs.
    """
    if updates or givens:
        raise NotImplementedError("opweave.function does not support updates or givens yet")
    if isinstance(inputs, Variable) or not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a list of variables")
    single = isinstance(outputs, Variable)
    output_list = [outputs] if single else list(outputs)  # type: ignore[arg-type]
    chosen = get_mode(mode)
    fgraph = FunctionGraph(list(inputs), output_list)
    # DebugMode runs nodes like the per-node linker, and folds like it.
    linker = "c|py" if chosen.linker == "debug" else chosen.linker
    prepared = prepare(fgraph, linker, chosen.folds_constants)
    if any(a is not b for a, b in zip(prepared.outputs, output_list, strict=True)):
        fgraph = FunctionGraph(list(inputs), prepared.outputs)
    bound = InputBinding(
        fgraph.inputs, f"function {name!r}" if name else "function", allow_input_downcast
    )
    if chosen.linker == "debug":
        from opweave.compile.debugmode import debug_function

        fn = debug_function(fgraph, bound, single, chosen)  # type: ignore[arg-type]
    elif chosen.linker != "c":
        fn = _node_function(fgraph, bound, single, chosen.linker)
    elif prepared.copy_in_python:
        inner = _compiled_function(fgraph, bound, single=False)
        inner.trust_input = trust_input
        fn = _copying_function(inner, single, prepared.copy_in_python)
    else:
        fn = _compiled_function(fgraph, bound, single)
    fn.trust_input = trust_input
    fn.name = name
    fn.fgraph = fgraph
    fn.inputs = fgraph.inputs
    fn.outputs = output_list
    fn.mode = chosen
    return fn


def _copying_function(inner: Any, single: bool, positions: list[int]) -> Any:
    """``inner`` (which returns a list) with the outputs at ``positions``
    deep-copied: the C-mode stand-in for DeepCopyOp on types that registered
    no C code for it."""

    def run(*args: Any, **kwargs: Any) -> Any:
        results = inner(*args, **kwargs)
        for position in positions:
            results[position] = copy.deepcopy(results[position])
        return results[0] if single else results

    fn = _core.Function(impl=run, unpack_single=single)
    fn.source, fn.library, fn.cache_outcome = inner.source, inner.library, inner.cache_outcome
    return fn


def _node_function(fgraph: FunctionGraph, bound: InputBinding, single: bool, linker: str) -> Any:
    """The Python loop over the nodes: ``perform`` everywhere (``"py"``), or
    each node's own module where it has C code (``"c|py"``)."""
    from opweave.compile.runner import NodeRunner
    from opweave.link.basic import PerformLinker
    from opweave.link.c.opwise import OpWiseCLinker

    nodes = fgraph.toposort()
    node_linker = PerformLinker() if linker == "py" else OpWiseCLinker()
    thunks = [node_linker.node_thunk(node, index) for index, node in enumerate(nodes)]
    fn = _core.Function(impl=NodeRunner(fgraph, bound, single, thunks), unpack_single=single)
    # Per node: "hit", "built" or "built_by_other" for a compiled module,
    # None for a node that runs perform.
    fn.node_outcomes = [getattr(thunk, "outcome", None) for thunk in thunks]
    return fn


def _compiled_function(fgraph: FunctionGraph, bound: InputBinding, single: bool) -> Any:
    from opweave.link.c.basic import CLinker

    return compiled_function(CLinker().accept(fgraph).compile(), bound, single)

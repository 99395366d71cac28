"""``opweave.function``: from a graph to a callable.

In C mode the callable is an :class:`opweave._core.Function` running the
graph's compiled module through vectorcall. Inputs that are already exact
values of their types go straight to C, where the types' ``c_extract`` code
checks them. When that check fails, :class:`_Fallback` converts the inputs
with ``Type.filter`` (or raises a TypeError naming the input) and calls again.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Sequence
from typing import Any

from opweave import _core
from opweave.compile.mode import Mode, get_mode
from opweave.compile.rewrite import prepare
from opweave.graph.basic import Variable
from opweave.graph.fg import FunctionGraph
from opweave.graph.utils import MethodNotDefined
from opweave.link.c.opwise import has_perform

__all__ = ["Function", "function"]

Function = _core.Function


class _Inputs:
    """Binding call arguments to the graph's inputs and converting them."""

    def __init__(
        self, fgraph: FunctionGraph, name: str | None, allow_downcast: bool | None
    ) -> None:
        self.variables = fgraph.inputs
        self.label = f"function {name!r}" if name else "function"
        self.allow_downcast = allow_downcast
        self.positions = {v.name: i for i, v in enumerate(self.variables) if v.name}

    def describe(self, position: int) -> str:
        variable = self.variables[position]
        named = f" ({variable.name!r})" if variable.name else ""
        return f"input {position}{named} of type {variable.type}"

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any] | None) -> list[Any]:
        expected = len(self.variables)
        names = ", ".join(v.name or f"<input {i}>" for i, v in enumerate(self.variables))
        if len(args) > expected:
            raise TypeError(f"{self.label} takes {expected} inputs ({names}), got {len(args)}")
        values: list[Any] = list(args) + [_MISSING] * (expected - len(args))
        for key, value in (kwargs or {}).items():
            position = self.positions.get(key)
            if position is None:
                raise TypeError(f"{self.label} has no input named {key!r}; its inputs: {names}")
            if values[position] is not _MISSING:
                raise TypeError(f"{self.label} got input {key!r} twice")
            values[position] = value
        missing = [self.describe(i) for i, v in enumerate(values) if v is _MISSING]
        if missing:
            raise TypeError(
                f"{self.label} is missing {', '.join(missing)} "
                f"(it takes {expected} inputs: {names})"
            )
        return values

    def filter(self, values: Sequence[Any]) -> list[Any]:
        converted = []
        for position, (variable, value) in enumerate(zip(self.variables, values, strict=True)):
            try:
                converted.append(
                    variable.type.filter(value, strict=False, allow_downcast=self.allow_downcast)
                )
            except (TypeError, ValueError) as error:
                raise TypeError(
                    f"bad argument for {self.describe(position)} of {self.label}: {error}"
                ) from error
        return converted


_MISSING = object()


class _Fallback:
    """What a compiled Function does with a call its C code did not accept."""

    def __init__(self, inputs: _Inputs, block_names: dict[int, str]) -> None:
        self.inputs = inputs
        self.block_names = block_names
        # A weak reference: the Function owns this fallback, and a cycle would
        # delay freeing the compiled struct until the garbage collector runs.
        self.function: Any = lambda: None

    def __call__(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        error: BaseException | None,
        failed_block: int,
    ) -> Any:
        n_inputs = len(self.inputs.variables)
        if error is not None and failed_block > n_inputs:
            where = self.block_names.get(failed_block)
            if where and hasattr(error, "add_note"):
                error.add_note(f"raised by the C code of {where}")
            raise error
        values = self.inputs.filter(self.inputs.bind(args, kwargs))
        function = self.function()
        if function is None:
            raise ReferenceError("the opweave function was deleted")
        try:
            return function.call_exact(*values)
        except Exception as retry_error:
            if error is not None and hasattr(retry_error, "add_note"):
                retry_error.add_note("(the inputs had been converted with Type.filter)")
            raise


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
    prepared = prepare(fgraph, chosen.linker, chosen.folds_constants)
    if any(a is not b for a, b in zip(prepared.outputs, output_list, strict=True)):
        fgraph = FunctionGraph(list(inputs), prepared.outputs)
    bound = _Inputs(fgraph, name, allow_input_downcast)
    if chosen.linker != "c":
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


def _node_function(fgraph: FunctionGraph, bound: _Inputs, single: bool, linker: str) -> Any:
    """The Python loop over the nodes: ``perform`` everywhere (``"py"``), or
    each node's own module where it has C code (``"c|py"``)."""
    from opweave.compile.runner import NodeRunner
    from opweave.link.c.opwise import OpWiseCLinker, perform_thunk

    nodes = fgraph.toposort()
    if linker == "py":
        for index, node in enumerate(nodes):
            if not has_perform(node.op):
                raise MethodNotDefined(
                    f"node {index} ({node.op}) has no Python implementation: "
                    f"{type(node.op).__name__} defines no perform; use mode='C'"
                )
        thunks = [perform_thunk(node) for node in nodes]
    else:
        linker_ = OpWiseCLinker()
        thunks = [linker_.node_thunk(node, index) for index, node in enumerate(nodes)]
    fn = _core.Function(impl=NodeRunner(fgraph, bound, single, thunks), unpack_single=single)
    # Per node: "hit", "built" or "built_by_other" for a compiled module,
    # None for a node that runs perform.
    fn.node_outcomes = [getattr(thunk, "outcome", None) for thunk in thunks]
    return fn


def _compiled_function(fgraph: FunctionGraph, bound: _Inputs, single: bool) -> Any:
    from opweave.link.c.basic import CLinker

    compiled = CLinker().accept(fgraph).compile()
    fallback = _Fallback(bound, compiled.block_names)
    fn = _core.Function(
        module=compiled.module, orphans=compiled.orphans, unpack_single=single, fallback=fallback
    )
    fallback.function = weakref.ref(fn)
    fn.source = compiled.source
    fn.library = compiled.library
    fn.cache_outcome = compiled.outcome
    return fn

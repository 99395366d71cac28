"""``opweave.function``: from a graph to a callable.

In C mode the callable is an :class:`opweave._core.Function` running the
graph's compiled module through vectorcall (made by
:mod:`opweave.link.callable`, the one path from a compiled module to a
callable); ``c|py`` wraps one loop in C over its steps (``_core.StepRunner``),
``py`` and DebugMode a Python loop over the nodes, in the same type. How it
was compiled is one record, ``fn.compiled`` (:mod:`opweave.link.compiled`).
"""

from __future__ import annotations

import copy
import copyreg
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opweave import _core
from opweave._logs import get_logger
from opweave.compile._stateful import (
    FunctionMaker,
    FunctionRecipe,
    stateful_function,
    wrapping_function,
)
from opweave.compile.mode import Mode, get_mode
from opweave.compile.rewrite import Prepared, prepare
from opweave.graph.basic import Variable
from opweave.graph.destroy import infer_reuse_pattern
from opweave.graph.fg import FunctionGraph
from opweave.link.callable import InputBinding
from opweave.link.compiled import Compiled, record_compiled
from opweave.link.thunk import Linker

__all__ = ["Function", "compile_profile", "describe_profile", "function"]

_log = get_logger(__name__)

if TYPE_CHECKING:
    from opweave.compile._debug_node import NodeCheck

    class Function(_core.Function):
        """What :func:`function` returns: an :class:`opweave._core.Function`
        and the attributes opweave stores on it, declared here once."""

        # How it was compiled, written once (opweave.link.compiled), and
        # the read-only views of it that cpp/bindings/runtime/function.cpp shows.
        compiled: Compiled
        source: str
        library: str
        cache_outcome: str  # "hit", "built" or "built_by_other"
        compile_seconds: dict[str, float]
        compile_units: tuple[tuple[str, float], ...]
        whole_because: str  # why a graph planned in units was compiled as one
        compiled_parts: list[Any]  # the modules it uses (ModulePart)
        node_outcomes: list[str | None]  # per node, None where perform runs
        compile_profile: dict[str, Any]
        recipe: FunctionRecipe
        # "c|py": the loop in C (opweave.link.c._step_table).
        runner: _core.StepRunner
        # opweave.function (here, _stateful and debugmode).
        name: str | None
        fgraph: FunctionGraph
        inputs: list[Variable]
        outputs: list[Variable]
        mode: Mode
        maker: FunctionMaker  # PyTensor's f.maker: fgraph, mode, inputs, outputs
        inner: Function  # with shared variables: the function of inputs and shared values
        node_checks: list[NodeCheck]  # DebugMode

else:
    Function = _core.Function


def function(
    inputs: Sequence[Variable],
    outputs: Any,
    mode: str | Mode | None = None,
    name: str | None = None,
    trust_input: bool = False,
    allow_input_downcast: bool | None = None,
    updates: Any = None,
    givens: Any = None,
    on_unused_input: str | None = None,
    **kwargs: Any,
) -> Function:
    """Compiles the graph from ``inputs`` to ``outputs`` into a callable.

    A single output (a variable or an :class:`~opweave.compile.io.Out`)
    gives a function returning a value; a list of outputs gives a function
    returning a list. In C mode (the default) the whole graph is one
    compiled module, built once and cached on disk; with the default mode,
    a graph with nodes that have no C code runs them in Python (``c|py``).
    ``trust_input=True`` turns off the conversion of inexact inputs.

    Shared variables the graph reads are inputs of the module, passed
    their current values; ``updates`` (pairs, or a dict, of a shared
    variable and its new value) are written back after a successful call.
    ``givens`` replaces variables of the graph by others.
    ``on_unused_input``: ``"raise"`` (default: ``config.on_unused_input``),
    ``"warn"`` or ``"ignore"`` an input no output or update uses. A
    function pickles; unpickling compiles it again (a cache hit when its
    module is in the cache).
    """
    start = time.perf_counter()
    # Here, not at the top: importing opweave stays cheap (shared variables
    # bring in the tensor types).
    from opweave.compile._function_args import function_args

    if kwargs:
        raise TypeError(f"function() got unexpected arguments: {', '.join(kwargs)}")
    args = function_args(inputs, outputs, updates, givens, on_unused_input)
    chosen = get_mode(mode)
    linker, copied, chosen = _linked_graph(args, chosen)
    fgraph = linker.bound_graph()
    graph_seconds = time.perf_counter() - start
    label = f"function {name!r}" if name else "function"
    single = args.single and not args.shared
    in_python = copied.copy_in_python or copied.copy_inputs_in_python
    binding = InputBinding(fgraph.inputs, label, allow_input_downcast)
    fn = linker.make_function(binding, single and not in_python)  # no Thunk, no cells
    if in_python:
        fn = _copying_function(fn, single, copied, fgraph)
    if args.shared:
        fn.trust_input = trust_input
        explicit = InputBinding(args.inputs, label, allow_input_downcast)
        fn = stateful_function(fn, explicit, args)
    profile = compile_profile(fn, graph_seconds, time.perf_counter() - start)
    if profile["compiled"]:  # a hit stays quiet
        _log.info("%s ready in %s", label, describe_profile(profile))
    recipe = _describe(
        fn, fgraph, chosen, args, (inputs, mode, name, trust_input, allow_input_downcast)
    )
    return record_compiled(fn, profile=profile, recipe=recipe)


def _linked_graph(args: Any, chosen: Mode) -> tuple[Linker, Prepared, Mode]:
    """The linker of ``chosen`` bound to the graph of ``args``, prepared
    for it (folded, protected); what was prepared, whose positions of
    outputs and inputs are still to copy in Python (see
    :mod:`opweave.compile.rewrite`); and the mode the function
    runs in (the default mode's C linker gives way to ``c|py`` for a graph
    with nodes that have no C code)."""
    fgraph = FunctionGraph(
        [*args.inputs, *args.shared], [*args.outputs, *(e for _, e in args.updates)]
    )
    linker = chosen.linker.for_graph(fgraph)
    if type(linker) is not type(chosen.linker):
        chosen = Mode(linker.for_graph(fgraph), chosen.optimizer)
    prepared = prepare(fgraph, linker.kind, chosen.folds_constants, args.mutable)
    if any(a is not b for a, b in zip(prepared.outputs, fgraph.outputs, strict=True)):
        fgraph = FunctionGraph(list(fgraph.inputs), prepared.outputs)
    # What the linkers empty at every call: the results returned are the caller's.
    no_recycling = infer_reuse_pattern(fgraph, fgraph.outputs)
    return linker.accept(fgraph, no_recycling=no_recycling), prepared, chosen


def _describe(
    fn: Any, fgraph: FunctionGraph, chosen: Mode, args: Any, call: tuple
) -> FunctionRecipe:
    """Sets what a Function shows of how it was made (PyTensor's
    attributes); returns the recipe that pickling replays."""
    inputs, mode, name, trust_input, allow_input_downcast = call
    fn.trust_input = trust_input
    fn.name = name
    fn.fgraph = fgraph
    fn.inputs = args.inputs
    fn.outputs = args.outputs
    fn.mode = chosen
    fn.maker = FunctionMaker(fgraph, chosen, args.inputs, args.outputs)
    return FunctionRecipe(
        list(inputs),  # In(mutable=True) kept
        args.outputs[0] if args.single else args.outputs,
        chosen if mode is not None else None,
        name,
        trust_input,
        allow_input_downcast,
        args.updates,
    )


_PHASES = ("graph", "hooks", "assembly", "lookup", "compile", "load", "dependencies")


def compile_profile(fn: Any, graph_seconds: float, total: float) -> dict[str, Any]:
    """Where the time of making ``fn`` went, in wall seconds: ``graph``
    (building and rewriting the graph), ``hooks`` (asking ops and types for
    code), ``assembly`` (laying out modules, their jobs and keys), ``lookup``
    (finding entries in the cache, lock waits, verification), ``compile``
    (compiler runs), ``load`` (imports), ``dependencies`` (making the
    dependency list of what the hooks read, for the memo and the graph
    index) and ``other`` (the rest, so that the phases add up to
    ``total``); ``modules``: per compiled module, its cache outcome, its
    own compile seconds and, when it was built from compile
    units, how many of them were compiled and how many found in the cache,
    and ``whole_because``: why a graph planned in units was compiled as one
    ("" when it was not); ``compiled`` and ``reused``: how many modules were
    built here and found."""
    compiled: Compiled | None = getattr(fn, "compiled", None)
    parts = compiled.parts if compiled is not None else ()
    profile: dict[str, Any] = {"graph": graph_seconds}
    for phase in _PHASES[1:]:
        profile[phase] = sum(part.seconds.get(phase, 0.0) for part in parts)
    profile["other"] = max(total - sum(profile[p] for p in _PHASES), 0.0)
    profile["total"] = total
    profile["modules"] = [
        {
            "outcome": part.outcome,
            "compile": part.seconds.get("compile", 0.0),
            "units_compiled": sum(1 for o, _ in part.units if o != "hit"),
            "units_reused": sum(1 for o, _ in part.units if o == "hit"),
            "whole_because": part.whole_because,
        }
        for part in parts
    ]
    profile["compiled"] = sum(1 for m in profile["modules"] if m["outcome"] != "hit")
    profile["reused"] = sum(1 for m in profile["modules"] if m["outcome"] == "hit")
    return profile


def describe_profile(profile: dict[str, Any]) -> str:
    """``0.412 s (graph 0.001, hooks 0.004, ...; 1 module compiled, 0 reused)``."""
    phases = ", ".join(f"{p} {profile[p]:.3f}" for p in (*_PHASES, "other"))
    return (
        f"{profile['total']:.3f} s ({phases}; {profile['compiled']} modules compiled, "
        f"{profile['reused']} reused)"
    )


def _copying_function(inner: Any, single: bool, prepared: Prepared, fgraph: Any) -> Any:
    """``inner`` (which returns a list) with the inputs at
    ``prepared.copy_inputs_in_python`` (given by position, or by the names
    of ``fgraph``'s inputs) deep-copied before the call and the outputs at
    ``prepared.copy_in_python`` after it: the C-mode stand-in for DeepCopyOp
    on types that registered no C code for it."""
    inputs, outputs = prepared.copy_inputs_in_python, prepared.copy_in_python
    names = [v.name for v in fgraph.inputs]

    def run(*args: Any, **kwargs: Any) -> Any:
        if inputs:
            args, kwargs = _copied_arguments(args, kwargs, inputs, names)
        results = inner(*args, **kwargs)
        for position in outputs:
            results[position] = copy.deepcopy(results[position])
        return results[0] if single else results

    return wrapping_function(run, inner, single)


def _copied_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], positions: list[int], names: list[Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` and ``kwargs`` with the inputs at ``positions`` deep-copied."""
    given, named = list(args), dict(kwargs)
    for position in positions:
        if position < len(given):
            given[position] = copy.deepcopy(given[position])
        elif names[position] in named:
            named[names[position]] = copy.deepcopy(named[names[position]])
    return tuple(given), named


# Pickling: a Function made by function() pickles to its recipe, and
# unpickling calls function() again (a cache hit when its module is there),
# the shared variables pickled as they were, values included.
def _rebuild(recipe: FunctionRecipe) -> Any:
    return function(
        recipe.inputs,
        recipe.outputs,
        mode=recipe.mode,
        name=recipe.name,
        trust_input=recipe.trust_input,
        allow_input_downcast=recipe.allow_input_downcast,
        updates=recipe.updates,
        on_unused_input="ignore",
    )


def _reduce(fn: Any) -> tuple[Any, ...]:
    compiled: Compiled | None = getattr(fn, "compiled", None)
    recipe = compiled.recipe if compiled is not None else None
    if recipe is None:
        raise TypeError(
            "cannot pickle this opweave Function: only functions made by opweave.function pickle"
        )
    return (_rebuild, (recipe,))


copyreg.pickle(_core.Function, _reduce)

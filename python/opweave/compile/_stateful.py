"""Functions with shared variables, and pickled functions.

A function whose graph reads shared variables is its compiled Function
(whose inputs are the explicit inputs, then the shared variables) wrapped
in a Function that binds the caller's arguments, appends the shared
values, and after a successful call writes the updates back.

Every function made by :func:`opweave.function` keeps its
:class:`FunctionRecipe`, which is what it pickles to: unpickling calls
:func:`opweave.function` again (a cache hit when its module is there), with
the shared variables pickled as they were, values included.
"""

from __future__ import annotations

import copyreg
from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.link.callable import InputBinding

__all__ = ["FunctionMaker", "FunctionRecipe", "stateful_function"]


class FunctionRecipe(NamedTuple):
    """What :func:`opweave.function` was given, givens applied."""

    inputs: list[Any]
    outputs: Any  # one variable, or a list
    mode: Any  # None: the default mode
    name: str | None
    trust_input: bool
    allow_input_downcast: bool | None
    updates: list[tuple[Any, Any]]


class FunctionMaker:
    """What PyTensor code reads from ``f.maker``: the function's graph
    (``fgraph``, after rewrites), its ``mode``, ``inputs`` and ``outputs``."""

    def __init__(self, fgraph: Any, mode: Any, inputs: list[Any], outputs: list[Any]) -> None:
        self.fgraph = fgraph
        self.mode = mode
        self.inputs = inputs
        self.outputs = outputs


def stateful_function(inner: Any, binding: InputBinding, args: Any) -> Any:
    """``inner`` (a Function of the inputs then the shared values, returning
    the outputs then the updates' values) as a Function of the inputs."""
    shared = list(args.shared)
    updated = [variable for variable, _ in args.updates]
    n_outputs = len(args.outputs)
    single = args.single

    def run(*values: Any, **named: Any) -> Any:
        bound = (
            binding.bind(values, named)
            if named or len(values) != len(binding.variables)
            else values
        )
        results = inner(*bound, *[s.get_value(borrow=True) for s in shared])
        for variable, value in zip(updated, results[n_outputs:], strict=True):
            variable.set_value(value, borrow=True)
        return results[0] if single else list(results[:n_outputs])

    from opweave.compile.function import wrapping_function

    fn = wrapping_function(run, inner, unpack_single=False)
    fn.inner = inner
    return fn


def _rebuild(recipe: FunctionRecipe) -> Any:
    from opweave.compile.function import function

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
    recipe = getattr(fn, "recipe", None)
    if recipe is None:
        raise TypeError(
            "cannot pickle this opweave Function: only functions made by opweave.function pickle"
        )
    return (_rebuild, (recipe,))


copyreg.pickle(_core.Function, _reduce)

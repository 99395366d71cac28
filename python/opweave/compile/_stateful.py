"""Functions that wrap a compiled Function, and what a Function keeps of
how it was made.

A function whose graph reads shared variables is its compiled Function
(whose inputs are the explicit inputs, then the shared variables) wrapped
in a Function that binds the caller's arguments, appends the shared
values, and after a successful call writes the updates back.

Every function made by :func:`opweave.function` keeps its
:class:`FunctionRecipe`, which is what it pickles to (see
:mod:`opweave.compile.function`, which owns ``function`` and so the
pickling that calls it again). This module imports nothing of
``function``'s: the dependency runs one way.
"""

from __future__ import annotations

from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.link.callable import InputBinding
from opweave.link.compiled import record_compiled

__all__ = ["FunctionMaker", "FunctionRecipe", "stateful_function", "wrapping_function"]


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

    fn = wrapping_function(run, inner, unpack_single=False)
    fn.inner = inner
    return fn


def wrapping_function(run: Any, inner: Any, unpack_single: bool) -> Any:
    """A Function running ``run``, a Python wrapper around the Function
    ``inner``, that shows how ``inner`` was compiled: its record
    (:class:`~opweave.link.compiled.Compiled`), the same object."""
    fn = _core.Function(impl=run, unpack_single=unpack_single)
    compiled = getattr(inner, "compiled", None)
    return fn if compiled is None else record_compiled(fn, **compiled._asdict())

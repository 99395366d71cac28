"""The arguments of :func:`opweave.function` beyond inputs and outputs:
``Out`` outputs, ``givens`` (substitutions), ``updates`` of shared
variables, and the check of unused inputs (``on_unused_input``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from opweave._namedtuple import NamedTuple
from opweave.compile.io import In, input_variable, output_variable
from opweave.compile.sharedvalue import SharedVariable
from opweave.configparser import config
from opweave.errors import OpweaveError
from opweave.graph.basic import Variable, ancestors, is_variable
from opweave.graph.replace import clone_replace

__all__ = ["FunctionArgs", "UnusedInputError", "function_args"]


class UnusedInputError(OpweaveError, ValueError):
    """An input of a function is used by none of its outputs or updates
    (``on_unused_input="raise"``, the default)."""


class FunctionArgs(NamedTuple):
    inputs: list[Variable]  # as given
    outputs: list[Variable]  # Out unwrapped, givens applied
    single: bool  # one output variable (not a list) was given
    shared: list[SharedVariable]  # read by the graph; passed after the inputs
    updates: list[tuple[SharedVariable, Variable]]  # givens applied
    mutable: frozenset[int] = frozenset()  # ids of the inputs given as In(mutable=True)


def function_args(
    inputs: Sequence[Variable],
    outputs: Any,
    updates: Any,
    givens: Any,
    on_unused_input: str | None,
) -> FunctionArgs:
    """Checks and normalises what :func:`opweave.function` was given."""
    if is_variable(inputs) or not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a list of variables")
    mutable = frozenset(id(i.variable) for i in inputs if isinstance(i, In) and i.mutable)
    inputs = [input_variable(i) for i in inputs]
    for position, variable in enumerate(inputs):
        if isinstance(variable, SharedVariable):
            raise TypeError(
                f"input {position} ({variable}) is a shared variable: the function reads "
                "its value itself; leave it out of the inputs"
            )
    single = not isinstance(outputs, (list, tuple))
    given = [outputs] if single else list(outputs)
    variables = [output_variable(o) for o in given]
    for position, variable in enumerate(variables):
        if not is_variable(variable):
            raise TypeError(f"output {position} is not a variable: {variable!r}")
    pairs = _update_pairs(updates)
    if givens:
        replaced = clone_replace([*variables, *(e for _, e in pairs)], givens)
        variables = replaced[: len(variables)]
        pairs = [(s, e) for (s, _), e in zip(pairs, replaced[len(variables) :], strict=True)]
    reached = list(ancestors([*variables, *(e for _, e in pairs)], inputs))
    _check_unused(inputs, reached, on_unused_input or config.on_unused_input)
    # (No input is a shared variable: checked above.)
    shared = [v for v in reached if isinstance(v, SharedVariable)]
    for variable, _ in pairs:
        if not any(variable is s for s in shared):
            shared.append(variable)
    return FunctionArgs(list(inputs), variables, single, shared, pairs, mutable)


def _update_pairs(updates: Any) -> list[tuple[SharedVariable, Variable]]:
    if not updates:
        return []
    items = list(updates.items()) if isinstance(updates, dict) else list(updates)
    pairs: list[tuple[SharedVariable, Variable]] = []
    for item in items:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise TypeError(f"updates must be (shared variable, new value) pairs, got {item!r}")
        variable, expression = item
        if not isinstance(variable, SharedVariable):
            raise TypeError(f"only shared variables can be updated, not {variable!r}")
        if any(variable is v for v, _ in pairs):
            raise ValueError(f"{variable} is updated twice")
        if not is_variable(expression):
            expression = variable.type.make_constant(expression)
        converted = variable.type.convert_variable(expression)
        if converted is None:
            raise TypeError(
                f"the update of {variable} (type {variable.type}) has type "
                f"{expression.type}; it must be the same"
            )
        pairs.append((variable, converted))
    return pairs


def _check_unused(inputs: Sequence[Variable], reached: list[Variable], policy: str) -> None:
    """``reached``: every variable the outputs and updates depend on."""
    if policy not in ("raise", "warn", "ignore"):
        raise ValueError(f"on_unused_input must be 'raise', 'warn' or 'ignore', got {policy!r}")
    if policy == "ignore":
        return
    used = {id(v) for v in reached}
    for position, variable in enumerate(inputs):
        if id(variable) not in used:
            message = (
                f"input {position} ({variable}) is not used by any output or update; "
                "remove it, or pass on_unused_input='warn' or 'ignore'"
            )
            if policy == "raise":
                raise UnusedInputError(message)
            warnings.warn(message, stacklevel=4)

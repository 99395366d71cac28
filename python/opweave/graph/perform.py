"""Running a node's ``perform``: the thunk every Python path uses
(``Op.make_thunk``, the perform and per-node linkers, DebugMode, constant
folding), with PyTensor's ``params`` argument where the op takes it."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from opweave.graph.basic import Apply
from opweave.graph.op import Op

__all__ = ["NodeThunk", "has_perform", "perform_params", "perform_thunk"]

NodeThunk = Callable[..., list[Any]]
"""Runs one node: ``thunk(input_values, outputs=None)`` returns the output
values. ``outputs`` optionally offers a storage object (or None) per output,
as a preallocated output."""


def has_perform(op: Any) -> bool:
    """True if ``op`` has a Python implementation."""
    perform = getattr(type(op), "perform", None)
    return perform is not None and perform is not Op.perform


def perform_params(node: Apply) -> tuple[Any, ...]:
    """The extra arguments of ``node.op.perform``: ``(params,)`` for an op
    with a ``params_type`` (its ``get_params(node)``, filtered by that type)
    whose ``perform`` takes a fourth argument, as PyTensor passes them;
    ``()`` otherwise (a ``perform(node, inputs, outputs)`` reads its op's
    attributes itself)."""
    op: Any = node.op  # an op with a params_type has get_params (ops are duck-typed)
    params_type = getattr(op, "params_type", None)
    if params_type is None or not _takes_params(type(op).perform):
        return ()
    return (params_type.filter(op.get_params(node)),)


@functools.cache
def _takes_params(perform: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(perform).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 5  # self, node, inputs, outputs, params


def perform_thunk(node: Apply) -> NodeThunk:
    """Runs ``node.op.perform`` and checks that every output was set. The
    output cells start as the offered storage (or None), as PyTensor's
    storage cells do between calls."""
    op, n_out = node.op, len(node.outputs)
    params = perform_params(node)

    def run(values: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
        if outputs is None:
            cells: list[list[Any]] = [[None] for _ in range(n_out)]
        else:
            cells = [[value] for value in outputs]
        op.perform(node, list(values), cells, *params)
        for position, cell in enumerate(cells):
            if cell[0] is None:
                raise ValueError(f"{op}.perform did not set output {position}")
        return [cell[0] for cell in cells]

    return run

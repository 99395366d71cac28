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

__all__ = [
    "NodeThunk",
    "has_perform",
    "own_thunk",
    "own_thunk_impl",
    "perform_params",
    "perform_thunk",
    "register_own_thunk",
]

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


# What an own-thunk rule returns for an op it leaves to perform.
PERFORM = object()
# Rules naming the ops that run through their own make_thunk (see
# register_own_thunk); each returns the impl to ask for, or PERFORM.
_own_thunk_rules: list[Callable[[Any], Any]] = []
# What gives, for an op, the op whose make_thunk runs its nodes (see
# register_own_thunk's ``prepare``).
_thunk_op_rules: list[Callable[[Any], Any]] = []


def register_own_thunk(
    rule: Callable[[Any], Any], prepare: Callable[[Any], Any] | None = None
) -> None:
    """Adds a rule that picks the ops whose Python implementation is their
    own ``make_thunk`` rather than ``perform``: ``rule(op)`` returns the
    ``impl`` to pass to ``op.make_thunk`` (``"c"``, ``"py"`` or None), or
    :data:`PERFORM` for an op it leaves to ``perform``. PyTensor's
    ``IfElse`` (no ``perform``) and its ops with an inner function (whose
    ``make_thunk`` links it) are registered by :mod:`opweave.pytensor`.
    ``prepare(op)``, if given, returns the op whose ``make_thunk`` is
    called (an equal copy whose inner function opweave linked), or ``op``."""
    _own_thunk_rules.append(rule)
    if prepare is not None:
        _thunk_op_rules.append(prepare)


def own_thunk_impl(op: Any) -> Any:
    """The ``impl`` with which ``op`` runs through its own ``make_thunk``,
    or :data:`PERFORM` when it runs ``perform``."""
    for rule in _own_thunk_rules:
        impl = rule(op)
        if impl is not PERFORM:
            return impl
    return PERFORM


def own_thunk(node: Apply, impl: Any) -> NodeThunk:
    """Runs ``node`` through the thunk of its op's ``make_thunk(node,
    storage_map, compute_map, no_recycling, impl)``, made once, on cells
    of its own: the inputs are set and marked computed before each call (a
    lazy thunk, such as IfElse's, finds them all), the outputs emptied."""
    inputs = list(dict.fromkeys(node.inputs))
    storage = {v: [None] for v in [*inputs, *node.outputs]}
    computed = {v: [v not in node.outputs] for v in storage}
    op = node.op
    for prepare in _thunk_op_rules:
        op = prepare(op)
    thunk = op.make_thunk(node, storage, computed, [], impl=impl)
    in_cells = [storage[v] for v in node.inputs]
    out_cells = [storage[v] for v in node.outputs]
    out_done = [computed[v] for v in node.outputs]

    def run(values: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
        for cell, value in zip(in_cells, values, strict=True):
            cell[0] = value
        for cell, done in zip(out_cells, out_done, strict=True):
            cell[0], done[0] = None, False
        try:
            wanted = thunk()
            if wanted:
                raise ValueError(f"{node.op}'s thunk asked again for inputs {wanted}")
            results = [cell[0] for cell in out_cells]
        finally:
            for cell in [*in_cells, *out_cells]:
                cell[0] = None
        for position, value in enumerate(results):
            if value is None:
                raise ValueError(f"{node.op}'s thunk did not set output {position}")
        return results

    return run

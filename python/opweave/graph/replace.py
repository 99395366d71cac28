"""Replacing variables in a graph: :func:`clone_replace`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opweave.graph.basic import Variable, graph_inputs, io_toposort, is_variable, make_apply

__all__ = ["clone_replace"]


def clone_replace(
    outputs: Sequence[Variable], replace: dict[Variable, Variable] | Sequence[Any]
) -> list[Variable]:
    """``outputs`` computed with each key of ``replace`` replaced by its
    value: the nodes that depend on a replaced variable are copied (same
    op, new inputs, fresh outputs of the same types); the rest of the graph
    is shared. Each replacement must have the replaced variable's type.
    Any library's variables will do (the graph protocol: ``type``,
    ``owner``, ``clone()``)."""
    pairs = list(replace.items()) if isinstance(replace, dict) else list(replace)
    mapping: dict[int, Variable] = {}
    for old, new in pairs:
        if not is_variable(old) or not is_variable(new):
            raise TypeError(f"replacements map variables to variables, got {old!r} -> {new!r}")
        if new.type != old.type:
            converted = old.type.convert_variable(new)
            if converted is None:
                raise TypeError(
                    f"cannot replace {old} (type {old.type}) by {new} (type {new.type})"
                )
            new = converted
        mapping[id(old)] = new
    for node in io_toposort(graph_inputs(outputs), list(outputs)):
        inputs = [mapping.get(id(v), v) for v in node.inputs]
        if all(a is b for a, b in zip(inputs, node.inputs, strict=True)):
            continue
        if any(id(v) in mapping for v in node.outputs):
            continue  # a replaced output: the replacement stands for it
        copy = make_apply(node.op, inputs, [v.clone() for v in node.outputs], like=node)
        for old, new in zip(node.outputs, copy.outputs, strict=True):
            mapping[id(old)] = new
    return [mapping.get(id(o), o) for o in outputs]

"""The ``infer_shape`` rewrite: ``Shape`` and ``Shape_i`` of an op's output
are replaced by what the op's ``infer_shape(fgraph, node, input_shapes)``
says, so the shape is computed without running the op.

``input_shapes`` holds, per input of the node, a tuple with one entry per
dimension: an ``int`` where the type knows the length statically, else the
``Shape_i`` variable of that dimension. ``infer_shape`` returns such tuples
for the outputs (entries may also be int64 0-d variables the op computes
from these). A ``Shape_i`` is replaced by its entry; a ``Shape`` by a
constant when every entry is an ``int``, or by the ``Shape`` of an input
whose dimensions are exactly the entries. An op without ``infer_shape``, or
whose ``infer_shape`` raises NotImplementedError, is left alone; the
rewrite then goes on through the inputs it names (a chain of ops that each
keep their input's shape resolves to the first input).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opweave.graph.basic import Apply, Variable, io_toposort, is_variable
from opweave.graph.fg import FunctionGraph
from opweave.graph.replace import clone_replace

__all__ = ["infer_shapes"]

# How many producers a shape is followed through.
_MAX_DEPTH = 64


def infer_shapes(fgraph: FunctionGraph, outputs: Sequence[Variable]) -> list[Variable]:
    """``outputs`` with every ``Shape``/``Shape_i`` of an op's output that
    ``infer_shape`` answers replaced (see the module's text)."""
    from opweave.tensor.shape import Shape, Shape_i

    replacements: dict[Variable, Variable] = {}
    for node in io_toposort(fgraph.inputs, outputs):
        if isinstance(node.op, Shape_i):
            found = _dimension(fgraph, node.inputs[0], node.op.i, 0)
        elif isinstance(node.op, Shape):
            found = _whole_shape(fgraph, node.inputs[0])
        else:
            continue
        if found is not None and found is not node.outputs[0]:
            replacements[node.outputs[0]] = found
    if not replacements:
        return list(outputs)
    return clone_replace(list(outputs), replacements)


def _inferred(fgraph: FunctionGraph, variable: Variable) -> tuple[Any, ...] | None:
    """The shape ``infer_shape`` gives for ``variable``, or None."""
    node = variable.owner
    infer = getattr(node.op, "infer_shape", None) if node is not None else None
    if node is None or infer is None:
        return None
    try:
        shapes = infer(fgraph, node, [_input_shape(v) for v in node.inputs])
    except NotImplementedError:  # MethodNotDefined too
        return None
    except Exception as error:
        error.add_note(f"raised by infer_shape of {node.op} (for its node {node})")
        raise
    shape = tuple(shapes[node.outputs.index(variable)])
    if len(shape) != getattr(variable.type, "ndim", len(shape)):
        raise ValueError(
            f"{node.op}.infer_shape gave {len(shape)} dimensions for an output of type "
            f"{variable.type}"
        )
    return shape


def _input_shape(variable: Variable) -> tuple[Any, ...]:
    from opweave.tensor.shape import Shape_i

    static = getattr(variable.type, "shape", None)
    if static is None:
        raise NotImplementedError(f"{variable.type} has no dimensions")
    return tuple(
        int(length) if length is not None else Shape_i(k)(variable)
        for k, length in enumerate(static)
    )


def _dimension(fgraph: FunctionGraph, variable: Variable, k: int, depth: int) -> Variable | None:
    """A variable for dimension ``k`` of ``variable`` that does not run its
    producer, or None."""
    shape = _inferred(fgraph, variable) if depth < _MAX_DEPTH else None
    if shape is None:
        return None
    entry = shape[k]
    if isinstance(entry, (int, np.integer)):
        return _int64_constant(entry)
    if not is_variable(entry):
        raise TypeError(
            f"infer_shape gave {entry!r} for a dimension; expected an int or a variable"
        )
    deeper = _shape_i_source(entry)
    if deeper is not None:  # the dimension of an input: follow it further back
        return _dimension(fgraph, deeper[0], deeper[1], depth + 1) or entry
    return entry


def _whole_shape(fgraph: FunctionGraph, variable: Variable) -> Variable | None:
    from opweave.tensor.shape import shape as shape_op

    source, depth = variable, 0
    while depth < _MAX_DEPTH:
        shape = _inferred(fgraph, source)
        if shape is None:
            break
        if all(isinstance(entry, (int, np.integer)) for entry in shape):
            return _int64_constant(list(shape))
        same = _same_source(shape)
        if same is None:
            break
        source, depth = same, depth + 1
    return shape_op(source) if source is not variable else None


def _shape_i_source(variable: Variable) -> tuple[Variable, int] | None:
    from opweave.tensor.shape import Shape_i

    node: Apply | None = variable.owner
    if node is not None and isinstance(node.op, Shape_i):
        return node.inputs[0], node.op.i
    return None


def _same_source(shape: tuple[Any, ...]) -> Variable | None:
    """The variable whose dimensions ``shape`` lists in order, if any."""
    sources = [_shape_i_source(e) if is_variable(e) else None for e in shape]
    if not sources or any(s is None for s in sources):
        return None
    first = sources[0][0]  # type: ignore[index]
    if all(s[0] is first and s[1] == k for k, s in enumerate(sources)):  # type: ignore[index]
        if getattr(first.type, "ndim", None) == len(shape):
            return first
    return None


def _int64_constant(value: Any) -> Variable:
    from opweave.tensor.basic import constant

    return constant(np.asarray(value, dtype="int64"))

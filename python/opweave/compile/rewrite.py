"""What :func:`opweave.function` does to a graph before linking it:

- **constant folding**: a node whose inputs are all constants is computed
  once, at compile time, and replaced by constants (unless its op's
  ``do_constant_folding`` says no). ``perform`` computes it when the op's
  ``python_constant_folding(node)`` is true or in ``mode="py"``; otherwise
  the node's own compiled module does (as in ``mode="c|py"``).
- **output protection**: an output that is (or is a view of) an input, a
  constant or an earlier output is wrapped in
  :class:`~opweave.compile.ops.DeepCopyOp`, so no output shares memory with
  an input, a constant or another output. In C mode so is a view of an
  intermediate result, whose storage the module reuses at the next call.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NamedTuple, cast

from opweave.graph.basic import Apply, Constant, Variable, io_toposort
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import NodeThunk, has_perform, perform_thunk
from opweave.link.c.opwise import OpWiseCLinker

__all__ = ["Prepared", "fold_constants", "prepare", "protect_outputs", "view_root"]


class Prepared(NamedTuple):
    """The outputs to link, and the positions that must still be copied in
    Python (C mode, for types with no registered DeepCopyOp C code)."""

    outputs: list[Variable]
    copy_in_python: list[int]


def _folding_thunk(node: Apply, linker: str) -> NodeThunk | None:
    op = node.op
    if linker != "py" and not (has_perform(op) and op.python_constant_folding(node)):
        thunk = OpWiseCLinker().c_thunk(node)
        if thunk is not None:
            return thunk
    return perform_thunk(node) if has_perform(op) else None


def fold_constants(
    fgraph: FunctionGraph, outputs: Sequence[Variable], linker: str
) -> list[Variable]:
    """``outputs`` with every foldable node replaced by constants (nodes
    downstream of a folded one are re-created on the new inputs)."""
    replaced: dict[int, Variable] = {}
    for node in io_toposort(fgraph.inputs, outputs):
        inputs = [replaced.get(id(v), v) for v in node.inputs]
        changed = any(a is not b for a, b in zip(inputs, node.inputs, strict=True))
        foldable = all(isinstance(v, Constant) for v in inputs)
        if foldable and node.op.do_constant_folding(fgraph, node):
            current = _rebuilt(node, inputs) if changed else node
            thunk = _folding_thunk(current, linker)
            if thunk is not None:
                try:
                    values = thunk([cast(Constant, v).data for v in inputs])
                except Exception as error:
                    error.add_note(f"raised while folding the constant node {node}")
                    raise
                for variable, value in zip(node.outputs, values, strict=True):
                    replaced[id(variable)] = variable.type.make_constant(value)
                continue
        if changed:
            for old, new in zip(node.outputs, _rebuilt(node, inputs).outputs, strict=True):
                replaced[id(old)] = new
    return [replaced.get(id(v), v) for v in outputs]


def _rebuilt(node: Apply, inputs: list[Variable]) -> Apply:
    return Apply(node.op, inputs, [v.clone() for v in node.outputs])


def protect_outputs(
    inputs: Sequence[Variable], outputs: Sequence[Variable], linker: str
) -> Prepared:
    """Wraps aliasing outputs in DeepCopyOp (see the module docstring)."""
    from opweave.compile.ops import DeepCopyOp, deep_copy_op

    sources = {id(v) for v in inputs}
    protected: list[Variable] = []
    in_python: list[int] = []
    seen: set[int] = set()  # the roots of the outputs so far
    for position, variable in enumerate(outputs):
        root = view_root(variable)
        aliased = (
            id(root) in sources
            or isinstance(root, Constant)
            or id(root) in seen
            # In C mode intermediate results keep their storage between
            # calls: a view of one would change under the caller's feet.
            or (root is not variable and linker == "c")
        )
        seen.add(id(root))
        if not aliased:
            protected.append(variable)
        elif linker == "c" and DeepCopyOp.c_code_entry(variable.type) is None:
            protected.append(variable)
            in_python.append(position)
        else:
            protected.append(deep_copy_op(variable))
    return Prepared(protected, in_python)


def view_root(variable: Variable) -> Variable:
    """The variable whose memory ``variable`` shares, following the ops'
    ``view_map`` (and ``destroy_map``: an in-place result is its input)."""
    while variable.owner is not None:
        op = variable.owner.op
        sources = (getattr(op, "view_map", None) or {}).get(variable.index) or (
            getattr(op, "destroy_map", None) or {}
        ).get(variable.index)
        if not sources:
            break
        variable = variable.owner.inputs[sources[0]]
    return variable


def prepare(fgraph: FunctionGraph, linker: str, fold: bool = True) -> Prepared:
    """Replaces shapes by what ops' ``infer_shape`` says and folds constants
    (when ``fold``: the rewrites are on), then protects the outputs."""
    outputs = list(fgraph.outputs)
    if fold:
        if "opweave.tensor.shape" in sys.modules:  # else no Shape op was ever made
            from opweave.compile._shape_rewrite import infer_shapes

            outputs = infer_shapes(fgraph, outputs)
        outputs = fold_constants(fgraph, outputs, linker)
    return protect_outputs(fgraph.inputs, outputs, linker)

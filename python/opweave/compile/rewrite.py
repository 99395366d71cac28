"""What :func:`opweave.function` does to a graph before linking it:

- **constant folding**: a node whose inputs are all constants is computed
  once, at compile time, and replaced by constants (unless its op's
  ``do_constant_folding`` says no). ``perform`` computes it when the op's
  ``python_constant_folding(node)`` is true or in ``mode="py"``; otherwise
  the node's own compiled module does (as in ``mode="c|py"``).
- **input protection**: a node that would destroy (``destroy_map``) a
  function input, a shared value or a constant, directly or through views,
  works on a :class:`~opweave.compile.ops.DeepCopyOp` of it, unless the
  input was given as ``In(variable, mutable=True)`` (PyTensor's
  ``Supervisor``). In C mode, an input whose type has no DeepCopyOp C code
  is copied in Python before each call instead. Two destroyers of one variable raise
  :class:`~opweave.graph.destroy.InconsistencyError` first.
- **outputs are readers**: an output that a later node destroys (it is,
  or views, what an in-place node overwrites) is wrapped in
  :class:`~opweave.compile.ops.DeepCopyOp`, which the destroy orderings run
  before the destroyer (:func:`~opweave.graph.destroy.destroyed_outputs`).
  This makes no more copies than copying the destroyer's input would: the
  outputs that share the destroyed memory are copied, all but one, by the
  next rule anyway. No copy is added when no destroyer reaches an output.
- **output protection**: an output that is (or is a view of) an input, a
  constant or an earlier output is wrapped in
  :class:`~opweave.compile.ops.DeepCopyOp`, so no output shares memory with
  an input, a constant or another output (PyTensor's ``insert_deepcopy``).
  An output that views an intermediate result needs no copy: the linkers
  never keep the storage of outputs and of what they view between calls
  (:func:`~opweave.graph.destroy.no_recycling_of`).
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Collection, Sequence
from typing import cast

from opweave._namedtuple import NamedTuple
from opweave.graph.basic import Apply, Constant, Variable, io_toposort, is_constant, make_apply
from opweave.graph.destroy import alias_root, destroy_orderings, destroyed_outputs
from opweave.graph.destroy import view_root as destroyed_root
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import NodeThunk, has_perform, perform_thunk
from opweave.link.c.service import node_thunk

__all__ = [
    "Prepared",
    "fold_constants",
    "prepare",
    "protect_destroyed_inputs",
    "protect_outputs",
    "protect_read_outputs",
    "view_root",
]

view_root = alias_root  # the variable whose memory a variable shares


class Prepared(NamedTuple):
    """The outputs to link, the positions of the outputs that must still
    be copied in Python after a call, and of the inputs that must be copied
    in Python before it (C mode, for types with no registered DeepCopyOp C
    code)."""

    outputs: list[Variable]
    copy_in_python: list[int]
    copy_inputs_in_python: list[int] = []  # noqa: RUF012  # a NamedTuple's default


def _folding_thunk(node: Apply, linker: str) -> NodeThunk | None:
    op = node.op
    in_python = getattr(op, "python_constant_folding", None)  # another library's op may lack it
    if linker != "py" and not (has_perform(op) and in_python is not None and in_python(node)):
        thunk = node_thunk(node)
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
        foldable = all(is_constant(v) for v in inputs)
        may_fold = getattr(node.op, "do_constant_folding", None)  # as above
        if foldable and (may_fold is None or may_fold(fgraph, node)):
            if _destroyed(node):  # it works on copies of the constants it destroys
                inputs, changed = _copied_destroyed(node, inputs), True
            current = _rebuilt(node, inputs) if changed else node
            thunk = _folding_thunk(current, linker)
            if thunk is not None:
                destroyed = _destroyed(node)
                try:
                    values = thunk(
                        [
                            copy.deepcopy(v.data) if k in destroyed else v.data
                            for k, v in enumerate(cast(list[Constant], inputs))
                        ]
                    )
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


def _destroyed(node: Apply) -> list[int]:
    """The positions of the inputs ``node`` destroys."""
    destroy_map = getattr(node.op, "destroy_map", None) or {}
    return sorted({i for inputs in destroy_map.values() for i in inputs})


def _copied_destroyed(node: Apply, inputs: list[Variable]) -> list[Variable]:
    """``inputs`` (constants), each one ``node`` destroys replaced by a new
    constant holding a copy of its value."""
    destroyed = _destroyed(node)
    return [
        v.type.make_constant(copy.deepcopy(cast(Constant, v).data)) if k in destroyed else v
        for k, v in enumerate(inputs)
    ]


def protect_destroyed_inputs(
    inputs: Sequence[Variable],
    outputs: Sequence[Variable],
    mutable: Collection[int] = (),
    nodes: Sequence[Apply] | None = None,
    copied_in_python: set[int] | None = None,
) -> list[Variable]:
    """``outputs``, rebuilt so that no node destroys an input (but those
    whose id is in ``mutable``), a constant or a view of one: such a node
    destroys a DeepCopyOp of that variable instead. ``nodes``: the nodes
    between ``inputs`` and ``outputs``, when known. With
    ``copied_in_python`` (C mode), an input whose type has no DeepCopyOp C
    code is left as it is and its position added there: the caller copies
    its value before each call."""
    from opweave.compile.ops import DeepCopyOp, deep_copy_op

    nodes = io_toposort(inputs, outputs) if nodes is None else nodes
    destroy_orderings(nodes)  # two destroyers of one variable: an error, copies or not
    if not any(_destroyed(node) for node in nodes):
        return list(outputs)
    position_of = {id(v): k for k, v in enumerate(inputs) if id(v) not in mutable}
    replaced: dict[int, Variable] = {}
    for node in nodes:
        new = [replaced.get(id(v), v) for v in node.inputs]
        for position in _destroyed(node):
            root = destroyed_root(new[position])
            in_python = copied_in_python is not None and id(root) in position_of
            if in_python and DeepCopyOp.c_code_entry(root.type) is None:
                cast(set[int], copied_in_python).add(position_of[id(root)])
            elif id(root) in position_of or is_constant(root):
                new[position] = deep_copy_op(new[position])
        if any(a is not b for a, b in zip(new, node.inputs, strict=True)):
            for old, made in zip(node.outputs, _rebuilt(node, new).outputs, strict=True):
                replaced[id(old)] = made
    return [replaced.get(id(v), v) for v in outputs]


def _rebuilt(node: Apply, inputs: list[Variable]) -> Apply:
    return make_apply(node.op, inputs, [v.clone() for v in node.outputs], like=node)


def protect_read_outputs(
    inputs: Sequence[Variable], outputs: Sequence[Variable], nodes: Sequence[Apply] | None = None
) -> list[Variable]:
    """``outputs``, each one a later node destroys wrapped in DeepCopyOp
    (see the module docstring). ``nodes``: the nodes between ``inputs`` and
    ``outputs``, when known."""
    from opweave.compile.ops import deep_copy_op

    nodes = io_toposort(inputs, outputs) if nodes is None else nodes
    read = set(destroyed_outputs(nodes, outputs))
    return [deep_copy_op(v) if k in read else v for k, v in enumerate(outputs)]


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
        aliased = id(root) in sources or is_constant(root) or id(root) in seen
        seen.add(id(root))
        if not aliased:
            protected.append(variable)
        elif linker == "c" and DeepCopyOp.c_code_entry(variable.type) is None:
            protected.append(variable)
            in_python.append(position)
        else:
            protected.append(deep_copy_op(variable))
    return Prepared(protected, in_python)


def prepare(
    fgraph: FunctionGraph, linker: str, fold: bool = True, mutable: Collection[int] = ()
) -> Prepared:
    """Replaces shapes by what ops' ``infer_shape`` says and folds constants
    (when ``fold``: the rewrites are on), then protects the inputs (but
    those whose id is in ``mutable``), the outputs later nodes destroy, and
    the outputs that alias."""
    outputs = list(fgraph.outputs)
    if fold:
        if "opweave.tensor.shape" in sys.modules:  # else no Shape op was ever made
            from opweave.compile._shape_rewrite import infer_shapes

            outputs = infer_shapes(fgraph, outputs)
        outputs = fold_constants(fgraph, outputs, linker)
    unchanged = all(a is b for a, b in zip(outputs, fgraph.outputs, strict=True))
    nodes = fgraph.apply_nodes if unchanged else None
    inputs_in_python: set[int] | None = set() if linker == "c" else None
    protected = protect_destroyed_inputs(fgraph.inputs, outputs, mutable, nodes, inputs_in_python)
    if any(a is not b for a, b in zip(protected, outputs, strict=True)):
        nodes = None  # copies were inserted
    outputs = protect_read_outputs(fgraph.inputs, protected, nodes)
    prepared = protect_outputs(fgraph.inputs, outputs, linker)
    return prepared._replace(copy_inputs_in_python=sorted(inputs_in_python or ()))

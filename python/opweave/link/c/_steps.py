"""The Python steps of the ``c|py`` loop (:mod:`.opwise`): a node run by its
``perform`` or its op's own thunk, its outputs converted once compiled code
has found one inexact; and which nodes may run in C."""

from __future__ import annotations

from typing import Any

from opweave.graph.basic import Apply, Variable
from opweave.graph.perform import PERFORM, own_thunk, own_thunk_impl
from opweave.link.basic import NodeThunk, has_perform, perform_params, perform_thunk
from opweave.link.c._node_code import MissingCCode
from opweave.link.c._step_table import TableStep
from opweave.link.c.hooks import get_hook
from opweave.link.c.kernels import KERNEL_CLASSES, code_op

__all__ = ["can_run_in_c", "neither_way", "python_step"]


def _is_float16(variable: Variable) -> bool:
    return getattr(variable.type, "dtype", None) == "float16"


def can_run_in_c(node: Apply) -> bool:
    """Whether ``node`` has C code it may use (float16 data needs ``_f16_ok``)."""
    op = code_op(node) if type(node.op) in KERNEL_CLASSES else node.op  # no call on a hit
    if get_hook(op, "c_code") is None:
        return False
    touches_f16 = any(_is_float16(v) for v in [*node.inputs, *node.outputs])
    return not touches_f16 or bool(getattr(op, "_f16_ok", False))


def neither_way(node: Apply, index: int) -> MissingCCode:
    """The error of node ``index``, which has no usable C code and no perform."""
    return MissingCCode(
        f"node {index} ({node.op}) can run neither in C (no usable C code) nor in "
        f"Python ({type(node.op).__name__} defines no perform)"
    )


def python_step(node: Apply, index: int) -> TableStep:
    """A step running ``node``'s perform, or its op's own ``make_thunk``
    when that is its Python implementation. Its outputs go through their
    types' ``filter`` once compiled code has found one inexact (a perform
    may return a list where the next node's C code wants an array): the
    step's ``convert`` is set then (see _step_table._OnError)."""
    impl = own_thunk_impl(node.op)
    if impl is not PERFORM:
        return _thunk_step(node, index, own_thunk(node, impl))
    if not has_perform(node.op):
        raise neither_way(node, index)
    if len(node.outputs) != 1:
        return _thunk_step(node, index, perform_thunk(node))
    # The common case, one output, without the loops.
    op, params = node.op, perform_params(node)
    only = node.outputs[0].type.filter
    convert = [False]

    def run(values: list[Any]) -> list[Any]:
        cell: list[Any] = [None]
        op.perform(node, values, [cell], *params)
        result = cell[0]
        if result is None:
            raise ValueError(f"{op}.perform did not set output 0")
        return [only(result, strict=False) if convert[0] else result]

    return _step(node, index, run, convert)


def _thunk_step(node: Apply, index: int, thunk: NodeThunk) -> TableStep:
    """A step running ``thunk``, its results filtered once ``convert`` is set."""
    filters = [v.type.filter for v in node.outputs]
    convert = [False]

    def run(values: list[Any]) -> list[Any]:
        results = thunk(values)
        if convert[0]:
            return [f(r, strict=False) for f, r in zip(filters, results, strict=True)]
        return results

    return _step(node, index, run, convert)


def _step(node: Apply, index: int, run: Any, convert: list[bool]) -> TableStep:
    run.convert = convert  # read by _step_table._OnError
    label = f"node {index} ({node.op})"
    return TableStep(None, run, (), list(node.inputs), list(node.outputs), label, [None], index)

"""A node's params: the value its op's ``get_params`` gives, as the module
takes it (filtered by the op's ``params_type``), and when two nodes' params
can share one constant."""

from __future__ import annotations

from typing import Any

from opweave.graph.basic import Apply
from opweave.graph.utils import not_defined_errors
from opweave.link.c.hooks import get_hook
from opweave.link.c.interface import CLinkerOp
from opweave.link.c.kernels import code_op

__all__ = ["get_params", "params_value", "same_params"]


_NO_PARAMS = object()


def get_params(node: Apply, what: str) -> Any:
    """The params value of ``node``, or ``_NO_PARAMS`` if its op has none
    (no ``get_params``, or one that raises a "not defined" exception,
    ``MethodNotDefined`` or a registered one, or returns None).

    An op whose ``get_params`` returns a value must say what C type that
    value has (``params_type``); otherwise the linker could not pass it."""
    op = code_op(node)
    hook = get_hook(op, "get_params")
    if hook is None:
        return _NO_PARAMS
    params_type = getattr(op, "params_type", None)
    if params_type is None and getattr(type(op), "get_params", None) is CLinkerOp.get_params:
        return _NO_PARAMS
    try:
        value = hook(node)
    except not_defined_errors() as error:
        if params_type is None:
            return _NO_PARAMS
        raise TypeError(
            f"{what}: {type(op).__name__} has a params_type ({params_type}) but no "
            f"params for it: {error}"
        ) from error
    if value is None:
        return _NO_PARAMS
    if params_type is None:
        raise TypeError(
            f"{what}: {type(op).__name__}.get_params returned a value but the op has no "
            "params_type; set params_type to the C type of that value (e.g. a ParamsType)"
        )
    return value


def params_value(node: Apply, what: str) -> Any:
    """The params value of ``node`` as its module takes it (filtered by its
    op's ``params_type``: an enum alias becomes its value), or None."""
    value = get_params(node, what)
    if value is _NO_PARAMS:
        return None
    op: Any = code_op(node)  # get_params found its params_type (ops are duck-typed)
    return op.params_type.filter(value)


def same_params(params_type: Any, a: Any, b: Any) -> bool:
    """Whether two params values can share one constant; values that cannot
    be compared (e.g. arrays in a Generic field) are taken as different."""
    if a is b:
        return True
    try:
        return bool(params_type.values_eq(a, b))
    except (TypeError, ValueError):
        return False

"""C code for ops of classes that have none: a registry that opweave's C
linkers consult, and nothing else.

An integration (``opweave.pytensor``) registers, for an op class, a
*provider*: ``provider(node)`` returns the object whose C hooks (``c_code``,
``c_support_code``, ``c_code_cache_version``, ...) opweave uses for the
node, or None to decline (the node then runs its op's ``perform``, as
before). The op keeps its class, ``perform`` and gradient: the graph is not
changed and the op's class is not patched, so other back ends see nothing.

A registration is for one class exactly (not its subclasses): a subclass
may have C code of its own. Every place that asks a node for C code asks
:func:`code_op`, so the whole-graph module, per-node linking, node exports
and keys all see the same code.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from opweave import _logs
from opweave.link.c._context import CONTEXT

__all__ = [
    "KERNEL_CLASSES",
    "code_op",
    "register_kernel",
    "registered_kernels",
    "unregister_kernel",
]

_log = _logs.get_logger(__name__)

Provider = Callable[[Any], Any]


# The registered classes, live and read-only: paths taken on every cache hit
# test ``type(node.op) in KERNEL_CLASSES`` (no Python call) before code_op.
KERNEL_CLASSES = MappingProxyType(CONTEXT.kernel_providers)


def register_kernel(op_class: type, provider: Provider) -> None:
    """Gives ``op_class`` C code: ``provider(node)`` returns, for a node of
    that exact class, an object with C hooks, or None to decline (the node
    runs ``perform``). It is asked again for every use of the node's code
    (it may depend on the node's types and on configuration, never on
    values); equal answers are used as one object."""
    if not isinstance(op_class, type):
        raise TypeError(f"register_kernel needs an op class, got {op_class!r}")
    if not callable(provider):
        raise TypeError(f"a kernel provider must be callable, got {provider!r}")
    CONTEXT.kernel_providers[op_class] = provider


def unregister_kernel(op_class: type) -> None:
    """Removes ``op_class``'s registration (nothing if it has none)."""
    CONTEXT.kernel_providers.pop(op_class, None)


def registered_kernels() -> dict[type, Provider]:
    """The registered op classes and their providers (a copy)."""
    return dict(CONTEXT.kernel_providers)


def code_op(node: Any) -> Any:
    """The object whose C hooks are ``node``'s C code: what a registered
    provider gives for it, else its op."""
    op = node.op
    provider = CONTEXT.kernel_providers.get(type(op))
    if provider is None:
        return op
    found = provider(node)
    if found is None:
        _log_declined(node)
        return op
    try:  # one object for equal answers: code is gathered by object identity
        return CONTEXT.kernel_answers.setdefault(found, found)
    except TypeError:  # unhashable: as it is
        return found


def _log_declined(node: Any) -> None:
    """One line per op and input types a provider declines: INFO where the
    node then runs ``perform``, DEBUG where the op's own C code runs. It
    runs on cache hits too: nothing is done when the line would not show."""
    own_c = callable(getattr(node.op, "c_code", None))
    level = _logs.DEBUG if own_c else _logs.INFO
    if not _log.isEnabledFor(level):
        return
    key: Any = (node.op, tuple(v.type for v in node.inputs))
    try:
        if key in CONTEXT.kernels_declined:
            return
        CONTEXT.kernels_declined.add(key)
    except TypeError:  # unhashable: logged each time
        pass
    _log.log(
        level,
        "opweave's registered C code for %s does not cover these inputs; %s runs",
        node.op,
        "its own C code" if own_c else "its perform",
    )

"""Calling op and type hooks whatever their signature.

Op and type authors write hooks in several styles: with or without a
``c_compiler`` keyword, with or without ``check_input``, as methods, or as
plain functions set on an instance (``mul.c_code = c_code``). These helpers
pass each hook only the keywords it accepts, and give the defaults of
:mod:`opweave.link.c.interface` to objects that do not define a hook.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from opweave.configparser import config
from opweave.graph.utils import not_defined_errors
from opweave.link.c._context import CONTEXT

__all__ = [
    "as_code_list",
    "call_hook",
    "call_optional_hook",
    "checks_input",
    "declares_version",
    "get_hook",
    "has_hook",
]


def _accepted(function: Callable[..., Any]) -> tuple[bool, frozenset[str]]:
    key = getattr(function, "__func__", function)
    found = CONTEXT.hook_signatures.get(key)
    if found is None:
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            found = (True, frozenset())
        else:
            var_keyword = any(p.kind is p.VAR_KEYWORD for p in parameters)
            names = frozenset(
                p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            )
            found = (var_keyword, names)
        CONTEXT.hook_signatures[key] = found
    return found


def has_hook(obj: Any, name: str) -> bool:
    """True if ``obj`` has a callable attribute ``name``."""
    return callable(getattr(obj, name, None))


def get_hook(obj: Any, name: str) -> Callable[..., Any] | None:
    """The hook ``name`` of ``obj``, or None."""
    hook = getattr(obj, name, None)
    return hook if callable(hook) else None


def call_hook(obj: Any, name: str, *args: Any, default: Any = None, **optional: Any) -> Any:
    """Calls ``obj.<name>(*args, **accepted)``, where ``accepted`` holds the
    ``optional`` keywords the hook's signature takes. Returns ``default`` if
    ``obj`` has no such hook."""
    hook = get_hook(obj, name)
    return default if hook is None else _call(hook, args, optional)


def _call(hook: Callable[..., Any], args: tuple[Any, ...], optional: dict[str, Any]) -> Any:
    """``hook(*args, **accepted)``: the ``optional`` keywords it takes."""
    if optional:
        var_keyword, names = _accepted(hook)
        if not var_keyword:
            optional = {k: v for k, v in optional.items() if k in names}
    return hook(*args, **optional)


def call_optional_hook(
    obj: Any, name: str, *args: Any, default: Any = None, **optional: Any
) -> Any:
    """:func:`call_hook` for a hook that may be left undefined: a hook that
    raises a "not defined" exception (``MethodNotDefined``, or a class given
    to :func:`~opweave.graph.utils.register_not_defined`, as other graph
    libraries' base classes raise for hooks an op does not define) counts
    as absent, and ``default`` is returned."""
    hook = get_hook(obj, name)
    if hook is None:
        return default
    try:
        return _call(hook, args, optional)
    except not_defined_errors():
        return default


def declares_version(obj: Any, hook: str = "c_code_cache_version") -> bool:
    """Whether ``obj``'s class defines its own ``hook`` (a code version:
    ``c_code_cache_version`` or ``c_code_cache_version_apply``), rather than
    inheriting the base interface's (opweave's, or another graph library's
    ``link.c.interface``, whose default may warn when called)."""
    method = getattr(type(obj), hook, None)
    return method is not None and not getattr(method, "__module__", "").endswith("link.c.interface")


def as_code_list(value: Any, what: str) -> list[str]:
    """A hook's code result (None, a string or a list of strings) as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, (list, tuple)):
        for item in value:
            if not isinstance(item, str):
                raise TypeError(f"{what} must return strings, got {type(item).__name__}")
        return [item for item in value if item]
    raise TypeError(f"{what} must return a string or a list of strings, got {type(value).__name__}")


def checks_input(op: Any) -> bool:
    """Whether the C code of ``op``'s inputs and outputs checks their values:
    its ``check_input`` attribute, else ``config.check_input``."""
    value = getattr(op, "check_input", None)
    return config.check_input if value is None else bool(value)

"""Digests of the globals and class attributes that generated code may have
read.

While ops write their code, the code that runs reads globals and
attributes by name (``helper.FACTOR``, ``FACTOR`` imported from ``helper``,
``self.factor`` of a class). The names are those of the code objects that
ran (``co_names``); each namespace of a dependency list (a module's globals,
a class's attributes) is digested over those of its names it has. A value
is named by what it is, never by where it is in memory:

- numbers, strings, bytes and None by value; tuples and frozensets by their
  items; NumPy scalars and small arrays by their data; enum members by name;
- functions, classes and modules by module and qualified name (one assigned
  in another's place is another value; a function edited on disk is seen
  through its file);
- anything else by its class alone: a mutable container (a cache filled as
  ops run) is the same value however it is filled.

So an assignment (``helper.FACTOR = 3.0``, before a graph is compiled or
between two compiles) changes the digest, and the graph is asked for its
code again, but state that ops keep for themselves does not.
"""

from __future__ import annotations

import enum
import hashlib
import types
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["namespace_digest", "value_text"]

_MAX_ITEMS = 256
_MAX_DEPTH = 4
_ARRAY_BYTES = 4096
_NAMED = (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)
_MISSING = object()


def value_text(value: Any, depth: int = 0) -> str:
    """The text of ``value`` (see the top)."""
    kind = type(value)
    if value is None or kind in (bool, int, float, complex, str, bytes):
        return f"{kind.__name__}:{value!r}"
    if kind in (tuple, frozenset) and depth < _MAX_DEPTH and len(value) <= _MAX_ITEMS:
        items = [value_text(item, depth + 1) for item in value]
        return f"{kind.__name__}({','.join(sorted(items) if kind is frozenset else items)})"
    if isinstance(value, _NAMED):
        module = getattr(value, "__module__", None) or ""
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "")
        return f"{kind.__name__}:{module}.{name}"
    if isinstance(value, types.MethodType):
        return f"method:{value_text(value.__func__, depth + 1)}"
    if isinstance(value, np.generic):
        return f"np:{value.dtype.str}:{value.tobytes().hex()}"
    if isinstance(value, np.ndarray) and not value.dtype.hasobject:
        if value.nbytes <= _ARRAY_BYTES:
            data = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
            return f"array:{value.dtype.str}:{value.shape}:{data}"
    if isinstance(value, enum.Enum):
        return f"enum:{kind.__module__}.{kind.__qualname__}.{value.name}"
    return f"object:{kind.__module__}.{kind.__qualname__}"


def namespace_digest(namespace: Mapping[str, Any], names: Iterable[str]) -> str:
    """A digest of the values ``names`` have in ``namespace`` (a name it does
    not have counts as missing)."""
    digest = hashlib.sha256()
    for name in names:
        value = namespace.get(name, _MISSING)
        text = "<missing>" if value is _MISSING else value_text(value)
        digest.update(f"{name}={text}\n".encode())
    return digest.hexdigest()[:32]

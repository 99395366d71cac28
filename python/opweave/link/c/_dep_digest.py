"""Digests of the globals and class attributes that generated code may have
read.

While ops write their code, the code that runs reads globals and
attributes by name (``helper.FACTOR``, ``FACTOR`` imported from ``helper``,
``self.factor`` of a class). The names are those of the code objects that
ran (``co_names``); each namespace of a dependency list (a module's globals,
a class's attributes) is digested over those of its names it has. A value
is named by what it is, never by where it is in memory:

- numbers, strings, bytes and None by value; tuples and frozensets by their
  items (up to 256, four levels deep); NumPy scalars and small arrays by their
  data; enum members by name;
- functions, classes and modules by module and qualified name (one assigned
  in another's place is another value; a function edited on disk is seen
  through its file);
- anything else by its class alone: a mutable container (a cache filled as
  ops run) is the same value however it is filled.

So an assignment (``helper.FACTOR = 3.0``, before a graph is compiled or
between two compiles) changes the digest, and the graph is asked for its
code again, but state that ops keep for themselves does not. The core
computes the digest (``_core.namespace_digest``), and asks :func:`other_text`
for the values it does not name itself.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from opweave import _core
from opweave._sha256 import sha256_hex

__all__ = ["namespace_digest", "other_text", "values_digest"]

_ARRAY_BYTES = 4096


def other_text(value: Any) -> str:
    """The text of a value the core does not name itself (see the top): a
    NumPy scalar or small array by its data, an enum member by name, any
    other object by its class."""
    kind = type(value)
    if isinstance(value, np.generic):
        return f"np:{value.dtype.str}:{value.tobytes().hex()}"
    if isinstance(value, np.ndarray) and not value.dtype.hasobject:
        if value.nbytes <= _ARRAY_BYTES:
            data = sha256_hex(np.ascontiguousarray(value).tobytes())
            return f"array:{value.dtype.str}:{value.shape}:{data}"
    if isinstance(value, enum.Enum):
        return f"enum:{kind.__module__}.{kind.__qualname__}.{value.name}"
    return f"object:{kind.__module__}.{kind.__qualname__}"


def namespace_digest(namespace: Any, names: tuple[str, ...]) -> str:
    """A digest of the values ``names`` have in ``namespace`` (a module's
    globals or a class) now; a name it does not have counts as missing."""
    return _core.namespace_digest(namespace, names, other_text)


def values_digest(names: tuple[str, ...], values: tuple[Any, ...]) -> str:
    """The digest :func:`namespace_digest` gives a namespace whose ``names``
    hold ``values``."""
    return _core.values_digest(names, values, other_text)

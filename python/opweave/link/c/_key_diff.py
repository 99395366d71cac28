"""Why a module was compiled: which fields of its key differ from those of
the nearest module of the same ops that this cache holds, the one whose key
differs in the fewest fields (the one used last among those), for the INFO
line of :mod:`._graph_lookup`.

A key's material (``Entry.key_material``) is one ``field: value`` line per
key field, a value going on over the indented lines after it; the source
shows as its size only, so a source of the same size that differs is told
by the keys differing while no field does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opweave.errors import OpweaveError

__all__ = ["fields_of", "unlike_nearest"]


def fields_of(material: str) -> dict[str, str]:
    """The fields of a key's material, by name, each with its whole text."""
    fields: dict[str, str] = {}
    name = ""
    for line in material.splitlines():
        if line.startswith(" ") and name:
            fields[name] += "\n" + line
        else:
            name = line.split(":", 1)[0]
            fields[name] = line
    return fields


def unlike_nearest(cache_of: Callable[[], Any], key: str) -> str:
    """``module <key>: <fields>``, the fields in which the key of the module
    entry ``key`` differs from that of the nearest module of the same ops
    (label) in the cache ``cache_of()`` gives (see the top); empty when that
    cache cannot be opened (the module was built in a private one), holds no
    such other module, or no longer holds ``key``'s."""
    try:  # a log line never fails a compile
        cache = cache_of()
        entry = cache.lookup(key)
        listed = cache.list() if entry is not None else []
    except (OpweaveError, OSError):
        return ""
    if entry is None:
        return ""
    mine = fields_of(entry.key_material)
    found = []
    for other in listed:
        if other.kind != "module" or other.label != entry.label or other.key == key:
            continue
        theirs = fields_of(other.key_material)
        names = sorted(n for n in mine.keys() | theirs.keys() if mine.get(n) != theirs.get(n))
        found.append((len(names), -other.last_used, other.key, names))
    if not found:
        return ""
    _, _, nearest, names = min(found)
    return f"module {nearest[:16]}: {', '.join(names) or 'source (same size)'}"

"""Finding the modules that export node codes (see :mod:`._node_keys`):
those this process used, checked again, and the others through the cache's
node-code index. Every entry used is verified first."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from opweave import _core
from opweave.errors import OpweaveError
from opweave.link.c._cache_choice import get_module_cache
from opweave.link.c._context import CONTEXT
from opweave.link.c.cmodule import CompiledModule, import_entry, log, lookup, verified

__all__ = ["load_exports", "remember_exports"]

# The module attribute holding a module's exports (node key -> graph ABI
# capsule). Modules made before exports were compiled only in a context
# their key covers named it "nodes": their exports are never used.
EXPORTS = "node_exports"


def remember_exports(compiled: CompiledModule) -> None:
    """Notes, for this process, the node codes ``compiled`` exports (see
    opweave.link.c._node_keys), so that :func:`load_exports` checks its
    entry rather than reading the index for each of them."""
    for key in [*getattr(compiled.module, EXPORTS, {}), compiled.key]:
        CONTEXT.exports[key] = (compiled.key, compiled.library_file)


def load_exports(keys: Sequence[str]) -> dict[str, tuple[ModuleType, Any] | None]:
    """For each node code of ``keys``, a module exporting it and the graph
    ABI capsule of that export, or None when no module holds it. Every
    entry used is verified, as every entry is before it is used (a changed
    header makes it stale: then None, and the node is compiled again),
    once per call however many of its exports are used. Entries this
    process already used are checked directly; the others are found through
    the cache's node-code index."""
    try:
        cache = get_module_cache()
    except OpweaveError as error:  # an unusable cache: the nodes are compiled instead
        log.debug("cannot look up node codes: %s", error)
        return dict.fromkeys(keys)
    checked: dict[str, Any] = {}
    found: dict[str, tuple[ModuleType, Any] | None] = {}
    for key in keys:
        if key in found:
            continue
        entry = None
        entry_key, library = CONTEXT.exports.get(key, ("", ""))
        if entry_key:
            if entry_key not in checked:
                checked[entry_key] = lookup(cache, entry_key)
            entry = checked[entry_key]
            if entry is None or str(entry.file_ending(".so")) != library:
                entry = None
        if entry is None:
            entry = verified(cache.find_export, key)
            if entry is not None:
                checked[entry.key] = entry
        found[key] = None if entry is None else _exported(cache, entry, key)
    return found


def _exported(cache: _core.ModuleCache, entry: Any, key: str) -> tuple[ModuleType, Any] | None:
    """The module of ``entry`` (verified) and its export ``key``."""
    if key not in entry.exports:
        return None
    module = import_entry(cache, entry, _core.GRAPH_MODULE_NAME)
    if module is None:
        return None
    library = entry.file_ending(".so")
    # A module whose key is the node's exports its own graph.
    exported = {key: module.abi} if key == entry.key else getattr(module, EXPORTS, {})
    if key not in exported:  # its metadata lists the key: the library does not match it
        log.warning("cache entry %s does not export node code %s", entry.dir, key[:12])
        return None
    CONTEXT.exports[key] = (entry.key, str(library))
    return module, exported[key]

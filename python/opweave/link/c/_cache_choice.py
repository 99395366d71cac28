"""Which module cache builds go to: the one at ``config.compiledir`` (with
the read-only layers of ``config.cache__shared_dirs``), one object per
setting, or a private temporary one when that cannot be used."""

from __future__ import annotations

import atexit
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from opweave import _core
from opweave._logs import get_logger
from opweave.configparser import config
from opweave.errors import CacheError, OpweaveError
from opweave.link.c._context import CONTEXT

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["get_module_cache", "private_cache", "writable_cache_root"]

_log = get_logger("opweave")


def get_module_cache() -> _core.ModuleCache:
    """The module cache that builds go to (one object per setting): the one
    at ``config.compiledir``, which looks up the read-only caches of
    ``config.cache__shared_dirs`` first. With ``config.cache__readonly``,
    compiledir is one of those read-only caches, looked up after the shared
    ones, and builds go to the user's default cache (or, when that is
    compiledir itself, to a private temporary one).

    Raises CacheError when the root cannot be used (another user's, or
    writable by others)."""
    settings = (
        config.compiledir,
        config.cache__lock_timeout,
        config.cache__max_size,
        config.compile__jobs,
        config.cache__readonly,
        config.cache__shared_dirs,
        config.cache__shared_owner,
        config.compile__slot_dir,
    )
    cache = CONTEXT.caches.get(settings)
    if cache is None:
        root, timeout, max_size, jobs, read_only, shared, owner, slot_dir = settings
        layers = _readable_layers([*shared, root] if read_only else list(shared), owner)
        if read_only:
            root = _writable_root(root)
        cache = _core.ModuleCache(
            root,
            lock_timeout=timeout,
            max_total_bytes=max_size,
            compile_jobs=jobs,
            shared_roots=layers,
            shared_owner=owner,
            slot_dir=slot_dir or None,
        )
        if not CONTEXT.caches:
            atexit.register(_flush_counters)
        cache.keep_file_digests()  # the last cache chosen keeps them
        CONTEXT.caches[settings] = cache
    return cache


def _readable_layers(roots: Sequence[str], owner: int | None) -> list[str]:
    """The read-only caches among ``roots`` that can be used, trusting
    ``owner`` besides this user and root; a WARNING says why for each one
    that cannot."""
    usable = []
    for root in roots:
        try:
            _core.ModuleCache(root, read_only=True, shared_owner=owner)
        except CacheError as error:
            _log.warning("not using the read-only cache %s: %s", root, error)
        else:
            usable.append(root)
    return usable


def _writable_root(read_only_root: str) -> str:
    """Where builds go when ``read_only_root`` is read-only: the user's
    default cache, unless that is the read-only root itself."""
    try:
        default = str(_core.ModuleCache.default_root())
    except CacheError:
        return str(private_cache().root)
    if os.path.realpath(default) == os.path.realpath(read_only_root):
        return str(private_cache().root)
    return default


def writable_cache_root() -> Path | None:
    """The root of the cache modules are built in (the private one when the
    configured one cannot be used), or None when it is read-only or there
    is none: where the graph index (``_graph_index.py``) lives."""
    try:
        cache = get_module_cache()
    except OpweaveError:
        return None
    if cache.read_only:
        return None
    from pathlib import Path  # not on a hit's path

    return Path(cache.root)


def private_cache() -> _core.ModuleCache:
    """A cache in a fresh private temporary directory, removed at exit."""
    if not CONTEXT.private_cache:
        import shutil  # rarely needed: not on a fresh process's path
        import tempfile

        root = tempfile.mkdtemp(prefix="opweave-private-")
        atexit.register(shutil.rmtree, root, True)
        CONTEXT.private_cache.append(
            _core.ModuleCache(root, lock_timeout=config.cache__lock_timeout)
        )
    return CONTEXT.private_cache[0]


def _flush_counters() -> None:
    for cache in CONTEXT.caches.values():
        try:
            cache.flush_counters()
        except OpweaveError:
            pass  # only statistics

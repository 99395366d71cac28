"""Which installed distribution provides a loaded module, and which loaded
modules come with Python itself.

A module's import root is the entry of ``sys.path`` its file lies below;
the distributions of a root are its ``*.dist-info`` (and ``*.egg-info``)
directories, each naming the top-level modules it installs (its
``top_level.txt``, else the first part of each path in its ``RECORD``). A
module belongs to the distribution of its root that installs its top-level
name; a module below no root, or whose top-level name no distribution of its
root installs (the user's own code, an editable install), belongs to none.
The map of a root, top-level name to distribution, is made once per
process, and kept as a record of the module cache (kind ``dists``) named
by the root, its identity and modification time and the names of its
distributions (installing or removing one changes them), so that a fresh
process reads one record instead of every distribution's ``RECORD``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
from types import ModuleType
from typing import Any

from opweave._namedtuple import NamedTuple
from opweave._sha256 import sha256_hex
from opweave.errors import OpweaveError
from opweave.link.c._context import CONTEXT

__all__ = ["Dist", "distribution_of", "import_root", "is_stdlib"]


class Dist(NamedTuple):
    """An installed distribution: its name and version, and the path of its
    ``RECORD`` (of ``top_level.txt`` for an egg-info without one)."""

    name: str
    version: str
    record: str


_RECORD_KIND = "dists"
_MAP_FORMAT = 1
_SUFFIXES = (".py", ".pyc", ".pyd", ".so")


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(dict.fromkeys(os.path.join(paths[name], "") for name in ("stdlib", "platstdlib")))


_STDLIB = _stdlib_dirs()


def import_root(path: str) -> str | None:
    """The longest entry of ``sys.path`` that ``path`` lies below (with a
    trailing separator), or None."""
    key = tuple(sys.path)
    roots = CONTEXT.path_roots.get(key)
    if roots is None:
        found = {os.path.join(os.path.abspath(entry or "."), "") for entry in key}
        roots = CONTEXT.path_roots[key] = tuple(sorted(found, key=len, reverse=True))
    for root in roots:
        if path.startswith(root):
            return root
    return None


def is_stdlib(module: ModuleType) -> bool:
    """Whether ``module`` is part of Python's standard library: built in, or
    a file of it (not of a site directory within it)."""
    path = getattr(module, "__file__", None)
    if not path:
        return module.__name__.partition(".")[0] in sys.stdlib_module_names
    return path.startswith(_STDLIB) and "site-packages" not in path and "dist-packages" not in path


def distribution_of(path: str) -> Dist | None:
    """The distribution that installed the module file ``path``, or None
    (see the top)."""
    root = import_root(path)
    if root is None:
        return None
    top = path[len(root) :].split(os.sep, 1)[0]
    for suffix in _SUFFIXES:
        if top.endswith(suffix):
            top = top[: -len(suffix)].split(".", 1)[0]  # foo.cpython-311-x86_64-linux-gnu.so
            break
    found = CONTEXT.dist_maps.get(root)
    if found is None:
        found = CONTEXT.dist_maps[root] = _root_map(root)
    return found.get(top)


def _root_map(root: str) -> dict[str, Dist]:
    """The top-level names of the distributions of ``root``: from the
    cache's record of them, or read (and kept there)."""
    try:
        status = os.stat(root)
        infos = sorted(n for n in os.listdir(root) if n.endswith((".dist-info", ".egg-info")))
    except OSError:
        return {}
    if not infos:
        return {}
    named = f"{_MAP_FORMAT}\0{root}\0{status.st_dev}\0{status.st_ino}\0{status.st_mtime_ns}"
    name = sha256_hex("\0".join([named, *infos]).encode())[:40]
    cache = _cache()
    kept = None if cache is None else cache.read_record(_RECORD_KIND, name)
    if kept is not None:
        try:
            return {top: Dist(*fields) for top, fields in json.loads(kept).items()}
        except (ValueError, TypeError):
            pass
    found: dict[str, Dist] = {}
    for info in infos:
        dist = _dist(os.path.join(root, info))
        for top in _top_levels(os.path.join(root, info)):
            found.setdefault(top, dist)
    if cache is not None:
        cache.write_record(_RECORD_KIND, name, json.dumps(found).encode())
    return found


def _cache() -> Any:
    """The module cache that keeps the maps, or None."""
    from opweave.link.c._cache_choice import get_module_cache

    try:
        return get_module_cache()
    except OpweaveError:
        return None


def _dist(info: str) -> Dist:
    stem = os.path.basename(info).rsplit(".", 1)[0]
    name, _, version = stem.partition("-")
    record = os.path.join(info, "RECORD")
    if not os.path.isfile(record):
        record = os.path.join(info, "top_level.txt")
    return Dist(name, version.partition("-")[0], record)


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read()


# The top-level name of a RECORD line: its first path part, without a
# module's suffix ("numpy/__init__.py,..." and "six.py,..." give numpy, six).
_RECORD_TOP = re.compile(r"^([^/,.\n]+)[^/,\n]*(?:/|,)", re.MULTILINE)


def _top_levels(info: str) -> set[str]:
    try:
        listed = _read_text(os.path.join(info, "top_level.txt")).split()
    except OSError:
        listed = []
    if listed:
        return set(listed)
    try:
        text = _read_text(os.path.join(info, "RECORD"))
    except OSError:
        return set()
    return {top for top in _RECORD_TOP.findall(text) if top.isidentifier() and top != "__pycache__"}

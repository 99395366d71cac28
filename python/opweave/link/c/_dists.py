"""Which installed distribution provides a loaded module, and which loaded
modules come with Python itself.

A module's import root is the entry of ``sys.path`` its file lies below;
the distributions of a root are its ``*.dist-info`` (and ``*.egg-info``)
directories, each naming the top-level modules it installs (its
``top_level.txt``, else the first part of each path in its ``RECORD``). A
module belongs to the distribution of its root that installs its top-level
name; a module below no root, or whose top-level name no distribution of its
root installs (the user's own code, an editable install), belongs to none.
Each root is read once per process.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

from opweave._namedtuple import NamedTuple

__all__ = ["Dist", "distribution_of", "import_root", "is_stdlib"]


class Dist(NamedTuple):
    """An installed distribution: its name and version, and the path of its
    ``RECORD`` (of ``top_level.txt`` for an egg-info without one)."""

    name: str
    version: str
    record: str


_roots: dict[str, dict[str, Dist]] = {}  # import root -> top-level name -> its distribution
_SUFFIXES = (".py", ".pyc", ".pyd", ".so")


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(dict.fromkeys(os.path.join(paths[name], "") for name in ("stdlib", "platstdlib")))


_STDLIB = _stdlib_dirs()


_path_roots: dict[tuple[str, ...], tuple[str, ...]] = {}  # sys.path -> its roots, longest first


def import_root(path: str) -> str | None:
    """The longest entry of ``sys.path`` that ``path`` lies below (with a
    trailing separator), or None."""
    key = tuple(sys.path)
    roots = _path_roots.get(key)
    if roots is None:
        found = {os.path.join(os.path.abspath(entry or "."), "") for entry in key}
        roots = _path_roots[key] = tuple(sorted(found, key=len, reverse=True))
    for root in roots:
        if path.startswith(root):
            return root
    return None


def is_stdlib(module: ModuleType) -> bool:
    """Whether ``module`` is part of Python's standard library (built in, or
    a file of it, not of a site directory within it)."""
    name = module.__name__.partition(".")[0]
    if name not in sys.stdlib_module_names:
        return False
    path = getattr(module, "__file__", None)
    if not path:
        return True
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
    found = _roots.get(root)
    if found is None:
        found = _roots[root] = _read_root(root)
    return found.get(top)


def _read_root(root: str) -> dict[str, Dist]:
    tops: dict[str, Dist] = {}
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return tops
    for name in names:
        if name.endswith((".dist-info", ".egg-info")):
            info = Path(root, name)
            dist = _dist(info)
            for top in _top_levels(info):
                tops.setdefault(top, dist)
    return tops


def _dist(info: Path) -> Dist:
    stem = info.name.rsplit(".", 1)[0]
    name, _, version = stem.partition("-")
    record = info / "RECORD"
    if not record.is_file():
        record = info / "top_level.txt"
    return Dist(name, version.partition("-")[0], str(record))


def _top_levels(info: Path) -> set[str]:
    try:
        listed = (info / "top_level.txt").read_text().split()
    except OSError:
        listed = []
    if listed:
        return set(listed)
    try:
        lines = (info / "RECORD").read_text().splitlines()
    except OSError:
        return set()
    tops = set()
    for line in lines:
        first = line.split(",", 1)[0].split("/", 1)[0]
        if not first or first.startswith("..") or first.endswith((".dist-info", ".data")):
            continue
        for suffix in _SUFFIXES:
            if first.endswith(suffix):
                first = first[: -len(suffix)].split(".", 1)[0]
                break
        tops.add(first)
    return tops

"""The loaded modules, as dependency lists see them: each module's file and
kind, the distributions they come from, and the records of their files.

A module is ``"user"`` (a file that no installed distribution provides: the
user's code, an editable install), ``"dist"`` (provided by one, see
:mod:`._dists`), ``"stdlib"`` (Python's own) or ``"none"`` (no file: built in,
frozen, ``python -c``'s ``__main__``). opweave's own modules are marked, so
that their globals (the library's own state) are not read as inputs.

A Python file is recorded once per process (its size, times and SHA-256,
:func:`opweave._core.record_files`): the code a process runs is what the
file held when it was imported, however the file changes later. A file
changed since its module began to be imported may not be that code, so it
is recorded without a hash, which no check matches: a dependency list
naming it is never reused, and the graph is asked for its code again. So
is a file whose cached bytecode CPython may have run in its place though
it holds an older content (:func:`older_bytecode`). When
a module began to be imported is bounded from below by the moment opweave
was first imported (:mod:`opweave._import_time`), for the modules that were
not in ``sys.modules`` then, and by the start of the process for the others.
"""

from __future__ import annotations

import _imp  # how hash-based bytecode files are checked
import importlib.machinery
import importlib.util
import os
import sys
import time
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from opweave import _core, _import_time
from opweave._namedtuple import NamedTuple
from opweave.link.c._context import CONTEXT
from opweave.link.c._dists import Dist, distribution_of, is_stdlib

__all__ = [
    "ModuleInfo",
    "file_records",
    "loaded_modules",
    "module_info",
    "module_of_file",
    "older_bytecode",
    "origin_of",
]


class ModuleInfo(NamedTuple):
    """A loaded module as dependency lists see it (see the top)."""

    name: str
    file: str  # "" for kind "none"
    kind: str  # "user", "dist", "stdlib" or "none"
    dist: Dist | None
    own: bool  # one of opweave's


def module_info(name: str, module: ModuleType) -> ModuleInfo:
    """What ``module`` (named ``name`` in sys.modules) is (see the top)."""
    found = CONTEXT.module_infos.get(name)
    if found is not None and found[0] is module:
        return found[1]
    path = getattr(module, "__file__", None)
    own = name == "opweave" or name.startswith("opweave.")
    if not isinstance(path, str) or not os.path.isabs(path):
        info = ModuleInfo(name, "", "none", None, own)
    elif is_stdlib(module):
        info = ModuleInfo(name, path, "stdlib", None, own)
    else:
        dist = distribution_of(path)
        info = ModuleInfo(name, path, "user" if dist is None else "dist", dist, own)
    CONTEXT.module_infos[name] = (module, info)
    if info.file:
        CONTEXT.module_files[info.file] = name
    return info


def loaded_modules() -> list[ModuleInfo]:
    """Every module in sys.modules, as :func:`module_info` sees it (made
    again only when sys.modules changed)."""
    if not CONTEXT.modules_watch:
        CONTEXT.modules_watch.append(_core.Watch([sys.modules], []))
    elif CONTEXT.loaded_infos and not CONTEXT.modules_watch[0].changed():
        return CONTEXT.loaded_infos[0]
    CONTEXT.modules_watch[0].refresh()
    found = [module_info(name, module) for name, module in list(sys.modules.items())]
    CONTEXT.loaded_infos[:] = [found]
    return found


def module_of_file(path: str) -> str | None:
    """The name of the loaded module whose file is ``path``, or None."""
    loaded_modules()
    return CONTEXT.module_files.get(path)


def origin_of(name: str) -> str | None:
    """The file this process runs for the module ``name``: its ``__file__``
    when it is loaded, else where the import system would find it (no
    code runs: its parents are found, not imported); None when it cannot
    be found."""
    spec = _find(name)
    return None if spec is None else spec[0]


def _find(name: str) -> tuple[str | None, list[str] | None] | None:
    """(file, submodule search path) of the module ``name``, or None."""
    module = sys.modules.get(name)
    if module is not None:
        search = getattr(module, "__path__", None)
        return getattr(module, "__file__", None), None if search is None else list(search)
    parent, _, _ = name.rpartition(".")
    path = None
    if parent:
        found = _find(parent)
        if found is None or found[1] is None:
            return None
        path = found[1]
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
    except Exception:  # a finder of a namespace package whose parent is not loaded
        return None
    if spec is None:
        return None
    search = spec.submodule_search_locations
    return spec.origin, None if search is None else list(search)


def started_ns() -> int:
    """When this process started, in ns since the epoch, on the
    filesystem's clock, no later than it did: from /proc/self/stat (rounded
    down to the clock tick, less a tick of the filesystem's clock, whose
    times lag), else the moment opweave was first imported."""
    if not CONTEXT.process_started:
        try:
            with open("/proc/self/stat") as stat:
                ticks = int(stat.read().rpartition(")")[2].split()[19])
            boot = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(
                time.CLOCK_BOOTTIME
            )
            lag = int(time.clock_getres(_import_time.CLOCK_REALTIME_COARSE) * 1e9)
            found = boot + ticks * (10**9 // os.sysconf("SC_CLK_TCK")) - lag
            CONTEXT.process_started.append(min(found, _import_time.NS))
        except (OSError, ValueError, IndexError, AttributeError):
            CONTEXT.process_started.append(_import_time.NS)
    return CONTEXT.process_started[0]


def file_records(modules: Iterable[tuple[str, str]], files: Iterable[str] = ()) -> dict[str, Any]:
    """The record (``_core.record_files``) of each file of ``modules``
    ((module name, file): a module's source, or the ``RECORD`` of a
    distribution of that module), as of when the module began to be
    imported, and of each of ``files``, as of the process's start; each
    recorded once per process (see the top)."""
    since: dict[str, int] = {}
    for name, path in modules:
        when = started_ns() if name in _import_time.BEFORE else _import_time.NS
        since[path] = min(since.get(path, when), when)
    for path in files:
        since[path] = started_ns()
    missing: dict[int, list[str]] = {}
    for path, when in since.items():
        if path not in CONTEXT.file_records:
            missing.setdefault(when, []).append(path)
    for when, paths in missing.items():
        for record in _core.record_files(paths, when):
            if record[4] and older_bytecode(record[0], record[1], record[2]):
                record = (*record[:4], "")  # no check matches: asked again
            CONTEXT.file_records[record[0]] = record
    return {path: CONTEXT.file_records[path] for path in since}


def older_bytecode(path: str, size: int, mtime_ns: int) -> bool:
    """Whether CPython may run, for the Python file ``path`` of ``size``
    bytes last modified at ``mtime_ns``, cached bytecode of an older content
    of it. It trusts a ``.pyc`` whose header holds the source's size and
    modification time in whole seconds: a same-size edit within the second
    of the content the ``.pyc`` was made from is not seen, in this process
    or any other, until the file is modified again. That is the case when
    the ``.pyc`` was written before the file's last modification. An
    unchecked hash-based ``.pyc`` is trusted whatever the file holds: the
    case when its hash is not the file's."""
    if not path.endswith(".py"):
        return False
    try:
        with open(importlib.util.cache_from_source(path), "rb") as cached:
            header = cached.read(16)
            written = os.fstat(cached.fileno()).st_mtime_ns
    except (OSError, ValueError, NotImplementedError):
        return False  # no bytecode: the file itself was compiled
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return False  # another Python's, or damaged: not used
    flags = int.from_bytes(header[4:8], "little")
    if flags == 0:
        stamp, length = (int.from_bytes(header[i : i + 4], "little") for i in (8, 12))
        trusted = stamp == (mtime_ns // 10**9) & 0xFFFFFFFF and length == size & 0xFFFFFFFF
        return trusted and written < mtime_ns
    checked = flags & 2 and _imp.check_hash_based_pycs != "never"
    if checked or _imp.check_hash_based_pycs == "always":
        return False
    try:
        with open(path, "rb") as source:
            return importlib.util.source_hash(source.read()) != header[8:16]
    except OSError:
        return True

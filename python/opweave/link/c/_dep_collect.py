"""Making a dependency list (:mod:`._dep_list`, which says what it holds)
from a recording (:mod:`._dep_window`): the modules, distributions and
files its code came from, the environment it read, and the namespaces whose
values its code names, watched from now on."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from opweave import _core
from opweave.link.c._context import CONTEXT
from opweave.link.c._dep_list import (
    Dependencies,
    Namespace,
    Taken,
    class_name,
    listing,
    merged,
)
from opweave.link.c._dep_modules import (
    ModuleInfo,
    file_records,
    loaded_modules,
    module_info,
    module_of_file,
)
from opweave.link.c._dep_window import Recording, paused

__all__ = ["collect"]


def collect(found: Recording, classes: Iterable[type]) -> Dependencies | None:
    """The dependency list of what ``found`` recorded while the ops and types
    of ``classes`` wrote code (see the top), watched here; None when the
    recording could not see what ran."""
    if not found.complete:
        return None
    with paused():
        own = _collect(found, classes)
        return merged([own, *found.included]) if found.included else own


def _collect(found: Recording, classes: Iterable[type]) -> Dependencies:
    loaded = loaded_modules()
    users = {info.name: info for info in loaded if info.kind == "user" and info.name != "__main__"}
    listed = dict(users)  # 2, then 3
    core: dict[str, ModuleInfo] = {}  # 3: whose values of 6 are taken
    extra: list[str] = []  # code that ran from a file that is no module's
    for path in {code.co_filename for code in found.codes}:
        name = module_of_file(path)
        if name is not None:
            core[name] = module_info(name, sys.modules[name])
        elif os.path.isabs(path) and os.path.isfile(path):
            extra.append(path)
    bases = {base for cls in classes for base in cls.__mro__ if base.__module__ != "builtins"}
    for base in bases:
        module = sys.modules.get(base.__module__)
        if module is not None:
            core[base.__module__] = module_info(base.__module__, module)
    listed.update(core)
    listed = {name: info for name, info in listed.items() if info.file or info.own}
    persistent = all(info.file or info.own for info in core.values())
    python_files = [(info.name, info.file) for info in listed.values() if info.file]
    records = [(info.name, info.dist.record) for info in loaded if info.dist is not None]
    known = {path for _, path in [*python_files, *records]} | set(extra)
    data = _data_files(found, known)
    taken = _take(found, core, bases, users)
    seen = {id(t.target) for t in taken}
    strict = [
        vars(sys.modules[name])
        for name, info in users.items()
        if not info.own and id(vars(sys.modules[name])) not in seen
    ]
    deps = Dependencies(
        lambda: file_records([*python_files, *records], extra).values(),
        data,
        [(info.name, info.file) for info in listed.values() if info.file],
        sorted(found.env.items()),
        (),
        persistent,
        _listed_dirs(found),
    )
    return deps.watch_here(taken, strict)


def _take(
    found: Recording, core: dict[str, ModuleInfo], bases: set[type], users: dict[str, ModuleInfo]
) -> list[Taken]:
    """The namespaces of 6 and the values their names hold: those of the
    modules and classes of 3, then those of the modules (of 2) and classes
    (of modules of 2) that their values lead to."""
    names = _names(found.codes)
    changed = {id(space) for space in found.changed}
    queue: list[tuple[str, str, Any]] = [
        ("module", info.name, vars(sys.modules[info.name]))
        for info in core.values()
        if not info.own
    ]
    queue += [("class", class_name(cls), cls) for cls in bases]
    seen = {id(target) for _, _, target in queue}
    taken = []
    while queue:
        kind, name, target = queue.pop()
        present, values = _core.take_values(target, names)
        if not present:
            continue
        space = Namespace(kind, name, present, "")
        taken.append(Taken(space, target, values, id(target) not in changed))
        for value in values:
            follow = _followed(value, users)
            if follow is not None and id(follow[2]) not in seen:
                seen.add(id(follow[2]))
                queue.append(follow)
    return taken


# A module's attributes that say where its file is, not what it holds (the
# list's module and file records cover them): a value of theirs would tie a
# graph record to where the packages are installed.
_WHERE_NAMES = frozenset({"__file__", "__cached__", "__path__", "__spec__", "__loader__"})

_NAMES_MEMO_SIZE = 64


def _names(codes: list[Any]) -> set[str]:
    """The names ``codes`` name (their ``co_names``)."""
    key = frozenset(map(id, codes))
    found = CONTEXT.code_names.get(key)
    if found is None:
        names = {name for code in codes for name in code.co_names} - _WHERE_NAMES
        found = CONTEXT.code_names[key] = (list(codes), names)  # the codes keep their ids theirs
        if len(CONTEXT.code_names) > _NAMES_MEMO_SIZE:
            del CONTEXT.code_names[next(iter(CONTEXT.code_names))]
    return found[1]


def _followed(value: Any, users: dict[str, ModuleInfo]) -> tuple[str, str, Any] | None:
    """The namespace a value of 6 leads to: a module of 2, or a class
    defined in one."""
    if isinstance(value, ModuleType):
        info = users.get(value.__name__)
        return None if info is None or info.own else ("module", info.name, vars(value))
    if isinstance(value, type) and value.__module__ in users:
        return ("class", class_name(value), value)
    return None


def _data_files(found: Recording, known: set[str]) -> list[Any]:
    """The records of the files ``found`` saw opened for reading: not written
    in the window, not Python's caches, not gone since, not known already."""
    written = {path for how, path in found.opened if how == "w"}
    paths = [
        path
        for path in dict.fromkeys(path for how, path in found.opened if how == "r")
        if path not in written
        and path not in known
        and not path.endswith(".pyc")
        and os.path.isfile(path)
    ]
    return list(_core.record_files(paths, found.start_ns)) if paths else []


def _listed_dirs(found: Recording) -> list[tuple[str, str]]:
    """The directories ``found`` saw listed (and still there), each with the
    digest of the names in it now."""
    dirs = []
    for path in dict.fromkeys(path for how, path in found.opened if how == "l"):
        names = listing(path)
        if names is not None:
            dirs.append((path, names))
    return dirs

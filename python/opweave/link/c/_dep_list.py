"""Dependency lists: everything that produced a piece of generated C code,
checked before the code is used again without asking the ops for it.

The process's memo of graphs, each graph record and each node's code carry
one (ccache's direct mode checks a manifest the same way). It holds, from a
recording (:mod:`._dep_window`) and the classes of the graph's ops and types:

1. every installed distribution that provides a loaded module, by the
   content of its ``RECORD`` (a helper package upgraded alone);
2. every loaded module that no distribution provides (the user's code, an
   editable install; ``__main__`` when a class of the graph is defined there
   or code of it ran), by name and file content;
3. the modules of the op and type classes and of their bases, and every
   module whose code ran, by file content, also within a distribution (a
   patched site-packages file);
4. every file opened for reading while the ops wrote code (not one written
   then, nor one gone since), by content, and every directory listed then,
   by the names in it;
5. every environment variable read then, with its value or its absence;
6. the values of the globals and class attributes that the code that ran
   names (its ``co_names``), in the modules of 3 and the classes of 3, and
   in the modules of 2 and their classes that those values lead to (not in
   opweave's own modules).

The configuration is part of the memo keys themselves.

Checks (each a string: empty when the list holds, else why not):

- :meth:`Dependencies.check_here`, in the process that made or adopted the
  list. A file a process has imported is the code it runs, so no Python file
  is stat'ed; what is checked: the environment, the data files and listed
  directories, and through
  a watch (dict and type watchers on Python >= 3.12, else version tags) any
  change of the namespaces of 2, 3 and 6, which then counts if a module was
  reloaded, a value of 6 is another object, or a module of 2 without values
  of 6 changed at all.
- :meth:`Dependencies.check_fresh`, for a list read from a graph record:
  the environment, where each module would be loaded from, every file (a
  stat each; a hash only when the stat differs), and the values of 6 by
  their digests (:mod:`._dep_digest`). A namespace that the ops' own code
  changed while writing code holds their state, which a fresh process has
  not made yet: it is left out of the digests (and checked in the process).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.link.c._context import CONTEXT
from opweave.link.c._dep_digest import namespace_digest, values_digest
from opweave.link.c._dep_modules import (
    origin_of,
)
from opweave.link.c._portable import is_dist_record, located, portable, record_digest

__all__ = ["Dependencies", "Namespace", "Taken", "class_name", "listing", "merged"]


class Namespace(NamedTuple):
    """Names of a module's globals (``kind`` "module", ``name`` the module's)
    or of a class's attributes ("class", "module:qualname"), and a digest of
    their values (empty: not digested, as the ops' own code changed them)."""

    kind: str
    name: str
    names: tuple[str, ...]
    digest: str


class Taken(NamedTuple):
    """A namespace of 6 in this process, with the objects its names held
    when the list was made; ``digested``: whether a record's digests hold it
    (not when the ops' own code changed it: see the top)."""

    space: Namespace
    target: Any  # the module's globals, or the class
    values: tuple[Any, ...]
    digested: bool = True


class Dependencies:
    """A dependency list (see the top)."""

    __slots__ = (
        "_files",
        "_make_files",
        "_spaces",
        "_specs",
        "_strict",
        "_strict_watch",
        "_taken",
        "_watch",
        "data",
        "dirs",
        "env",
        "modules",
        "persistent",
    )

    def __init__(
        self,
        files: Iterable[Any] | Callable[[], Iterable[Any]],
        data: Iterable[Any],
        modules: Iterable[tuple[str, str]],
        env: Iterable[tuple[str, str | None]],
        spaces: Iterable[Namespace] = (),
        persistent: bool = True,
        dirs: Iterable[tuple[str, str]] = (),
    ) -> None:
        # The records of files, (path, size, mtime_ns, ctime_ns, sha256):
        # ``files`` those of modules and distributions, or what makes them
        # when they are first needed (a graph record: a list made for a
        # node's code is checked in this process only, where no Python file
        # is looked at); ``data`` those of the data files, which it holds too.
        self._make_files = files if callable(files) else None
        self._files: tuple[Any, ...] | None = None if callable(files) else tuple(files)
        self.data = tuple(data)
        self.dirs = tuple(dirs)  # (a directory listed, the digest of its names)
        self.modules = tuple(modules)  # (name, file)
        self.env = tuple(env)  # (name, value or None)
        # Whether a graph record may carry it: every module of it has a file.
        self.persistent = persistent
        self._spaces = tuple(spaces)  # of a record (check_fresh), or made by namespaces()
        self._taken: tuple[Taken, ...] = ()
        self._strict: tuple[Any, ...] = ()  # the namespaces of 2 without values of 6
        self._strict_watch: Any = None  # and a watch of them
        self._watch: Any = None  # a watch of those of 6
        self._specs: tuple[tuple[ModuleType, Any], ...] = ()

    @property
    def files(self) -> tuple[Any, ...]:
        """The records of every file of the list (modules, distributions'
        RECORDs, data files)."""
        if self._files is None:
            assert self._make_files is not None
            made = {f[0]: f for f in self._make_files()}
            made.update((f[0], f) for f in self.data)
            self._files, self._make_files = tuple(made.values()), None
        return self._files

    # --- in this process -----------------------------------------------------

    def watch_here(self, taken: Iterable[Taken] = (), strict: Iterable[Any] = ()) -> Dependencies:
        """Starts watching the list's namespaces in this process: those
        ``taken`` (else those of its record, as they are now) and the
        ``strict`` ones (module globals that count as changed when they
        change at all)."""
        self._taken = tuple(taken) or tuple(_retake(self._spaces))
        modules = [sys.modules.get(name) for name, _ in self.modules]
        self._specs = tuple((m, getattr(m, "__spec__", None)) for m in modules if m is not None)
        dicts = [t.target for t in self._taken if t.space.kind == "module"]
        types = [t.target for t in self._taken if t.space.kind == "class"]
        self._watch = _core.Watch(dicts, types)
        self._strict = tuple(strict)
        self._strict_watch = _core.Watch(list(self._strict), []) if self._strict else None
        return self

    def check_here(self) -> str:
        """Why the list no longer holds in this process, or "" (see the top)."""
        why = _env_changed(self.env)
        if why:
            return why
        if self.data:
            why = _core.files_changed(list(self.data))
            if why:
                return why
        why = _dirs_changed(self.dirs)
        if why:
            return why
        if self._strict_watch is not None and self._strict_watch.changed():
            return "the globals of a module of the user's changed"
        if self._watch is None or not self._watch.changed():
            return ""
        for module, spec in self._specs:
            if sys.modules.get(module.__name__) is not module or module.__spec__ is not spec:
                return f"module {module.__name__} was reloaded"
        for taken in self._taken:
            space = taken.space
            if not _core.same_values(taken.target, space.names, taken.values):
                return f"a value {space.names} of {space.kind} {space.name} changed"
        self._watch.refresh()
        return ""

    def namespaces(self) -> tuple[Namespace, ...]:
        """The namespaces of 6 with the digests of their values when the list
        was made (for a graph record)."""
        if not self._spaces:
            self._spaces = tuple(
                t.space._replace(digest=values_digest(t.space.names, t.values))
                for t in self._taken
                if t.digested
            )
        return self._spaces

    # --- in another process ----------------------------------------------------

    def check_fresh(self) -> str:
        """Why the list, read from a record, does not hold in this process,
        or "" (see the top)."""
        why = _env_changed(self.env)
        if why:
            return why
        for name, file in self.modules:
            if name not in sys.modules and name.partition(".")[0] in sys.stdlib_module_names:
                continue  # Python's own: where it is found is the interpreter's choice
            origin = origin_of(name)
            if origin is not None and origin != file:
                return f"module {name} is {origin} here, not {file}"
        files = [f for f in self.files if not f[4].startswith(_RECORD_MARK)]
        why = _core.files_changed(files) or _dist_records_changed(
            f for f in self.files if f[4].startswith(_RECORD_MARK)
        )
        if why:
            return why
        why = _dirs_changed(self.dirs)
        if why:
            return why
        for space in self._spaces:
            target = _target(space)
            if target is None or not space.digest:
                continue
            if namespace_digest(target, space.names) != space.digest:
                return f"a value {space.names} of {space.kind} {space.name} changed"
        return ""

    def to_json(self) -> dict[str, Any]:
        """The list as JSON values (for a graph record)."""
        return {
            "files": [
                [portable(p), s, m, c, _file_digest(p, h), p] for p, s, m, c, h in self.files
            ],
            "data": sorted(f[0] for f in self.data),
            "dirs": [[portable(p), d, p] for p, d in self.dirs],
            "modules": [[n, portable(f), f] for n, f in self.modules],
            "env": [list(e) for e in self.env],
            "namespaces": [[s.kind, s.name, list(s.names), s.digest] for s in self.namespaces()],
        }

    @classmethod
    def from_json(cls, found: Any) -> Dependencies:
        """The list of :meth:`to_json`; ValueError, TypeError or KeyError
        when ``found`` is not one."""
        files = [
            (located(str(p), str(a)), int(s), int(m), int(c), str(h))
            for p, s, m, c, h, a in found["files"]
        ]
        env = [(str(k), None if v is None else str(v)) for k, v in found["env"]]
        spaces = [
            Namespace(str(k), str(n), tuple(str(x) for x in names), str(d))
            for k, n, names, d in found["namespaces"]
        ]
        if any(s.kind not in ("module", "class") for s in spaces):
            raise ValueError("a namespace of an unknown kind")
        modules = [(str(n), located(str(f), str(a))) for n, f, a in found["modules"]]
        dirs = [(located(str(p), str(a)), str(d)) for p, d, a in found["dirs"]]
        data_paths = {str(p) for p in found["data"]}  # where they were: matched below
        data = [f for f, (*_, a) in zip(files, found["files"], strict=True) if a in data_paths]
        return cls(files, data, modules, env, spaces, True, dirs)


def merged(lists: Iterable[Dependencies]) -> Dependencies:
    """One list holding everything of ``lists`` (made in this process),
    watched here."""
    lists = list(lists)
    data: dict[str, Any] = {}
    dirs: dict[str, str] = {}
    modules: dict[str, str] = {}
    env: dict[str, str | None] = {}
    taken: dict[tuple[str, str, tuple[str, ...]], Taken] = {}
    strict: dict[int, Any] = {}
    for found in lists:
        data.update((f[0], f) for f in found.data)
        dirs.update(found.dirs)
        modules.update(found.modules)
        env.update(found.env)
        taken.update(((t.space.kind, t.space.name, t.space.names), t) for t in found._taken)
        strict.update((id(d), d) for d in found._strict)

    def files() -> list[Any]:
        return [f for found in lists for f in found.files]

    persistent = all(found.persistent for found in lists)
    out = Dependencies(
        files, data.values(), modules.items(), env.items(), (), persistent, dirs.items()
    )
    return out.watch_here(taken.values(), strict.values())


def _retake(spaces: Iterable[Namespace]) -> list[Taken]:
    """The namespaces of a record, with the values their names hold now."""
    taken = []
    for space in spaces:
        target = _target(space)
        values = None if target is None else _core.values_of(target, space.names)
        if values is not None:
            taken.append(Taken(space, target, values))
    return taken


def listing(path: str) -> str | None:
    """A digest of the names in the directory ``path``, or None."""
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    return _core.sha256_hex("\n".join(names).encode())


def _dirs_changed(dirs: Iterable[tuple[str, str]]) -> str:
    for path, names in dirs:
        if listing(path) != names:
            return f"directory {path} holds other files"
    return ""


def class_name(cls: type) -> str:
    """How a namespace names a class: "module:qualname"."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _target(space: Namespace) -> Any:
    """The module's globals or the class a namespace names, in this
    process; None when it is not loaded (its file then speaks for it)."""
    module_name, _, qualname = space.name.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        return None
    if space.kind == "module":
        return vars(module)
    found: Any = module
    for part in qualname.split("."):
        found = vars(found).get(part) if hasattr(found, "__dict__") else None
        if found is None:
            return None
    return found if isinstance(found, type) else None


# A RECORD's digest in a graph record: record_digest's, not the file's.
_RECORD_MARK = "record:"


def _file_digest(path: str, sha256: str) -> str:
    """How a graph record holds a file's content: its SHA-256, or for a
    distribution's RECORD the digest of what does not depend on where it
    was installed (:func:`._portable.record_digest`)."""
    return _dist_digest(path) if sha256 and is_dist_record(path) else sha256


def _dist_digest(path: str) -> str:
    """The RECORD ``path``'s digest as a graph record holds it (kept per
    version of the file); "" when it cannot be read (the record never holds)."""
    try:
        status = os.stat(path)
        key = (path, status.st_size, status.st_mtime_ns)
        found = CONTEXT.record_digests.get(key)
        if found is None:
            with open(path, encoding="utf-8", errors="replace") as file:
                found = CONTEXT.record_digests[key] = record_digest(file.read())
    except OSError:
        return ""
    return _RECORD_MARK + found


def _dist_records_changed(records: Iterable[Any]) -> str:
    """Why a distribution's RECORD of a graph record's list is not what it
    was, or "": the same stat, else the same digest of its content."""
    for path, size, mtime, ctime, digest in records:
        try:
            status = os.stat(path)
        except OSError:
            return f"{path} is gone"
        if (status.st_size, status.st_mtime_ns, status.st_ctime_ns) == (size, mtime, ctime):
            continue
        if _dist_digest(path) != digest:
            return f"the distribution of {path} changed"
    return ""


def _env_changed(env: Iterable[tuple[str, str | None]]) -> str:
    for name, value in env:
        if os.environ.get(name) != value:
            return f"environment variable {name} changed"
    return ""

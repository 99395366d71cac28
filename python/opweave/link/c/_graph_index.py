"""The compile directory's index of graphs: a hit in a fresh process asks no
op for anything.

Finding a graph's module by its cache key means asking every op for its
code, and an op's version hook may be slow (PyTensor's CGemv compiles and
runs a test program in each process). So once a graph is compiled and every
op in it declares a code version, a record is kept under
``<cache root>/graphs/<aa>/<name>``. ``name`` is a hash of the stable text
(:mod:`._stable_text`) of the graph's memo key (:func:`._graph_memo.graph_key`:
ops and types by class, source files and props, constants by data, the
wiring and the configuration), of the environment (compiler, Python, NumPy,
machine flags) and of this format. The record names the module's cache key
and what the module takes besides its code: its orphans (the graph's
constants by number, the nodes' params by node, asked again) and the names
of its blocks for messages.

A record is read only if it is a regular file owned by this user, in
directories owned by this user, none writable by others (0600 and 0700 are
what it writes, as the cache does); a record that cannot be trusted, read or
parsed is ignored (logged at DEBUG: the cache warns about its own root), the
graph is compiled as usual, and its record written again. The
module it names is used only once the cache has verified its entry, so a
changed header still means a rebuild. ``opweave cache prune`` removes the
records whose module is no longer cached, and ``opweave cache clear`` all of
them (:func:`sweep`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.graph.op import op_label
from opweave.link.c import cmodule
from opweave.link.c._graph_records import CompiledGraph
from opweave.link.c._march import march_flags
from opweave.link.c._node_params import params_value
from opweave.link.c._stable_text import Unstable, stable_text, stable_texts

__all__ = ["Record", "index_name", "load", "orphans", "place", "read", "sweep", "write"]

_log = logging.getLogger(__name__)
_FORMAT = 1
_MAX_BYTES = 1 << 22
_KINDS = ("const", "params")


class Record(NamedTuple):
    """What a process needs to call a graph's module without its code."""

    module_key: str
    # Per orphan: ("const", n), the key's constant n, or ("params", k), the
    # params of the k-th node run.
    orphans: tuple[tuple[str, int], ...]
    block_names: dict[int, str]
    output_blocks: dict[int, int]
    node_blocks: dict[int, int]


def index_name(key: Any, environment: Any) -> str | None:
    """The name of the graph of memo key ``key`` (:func:`._graph_memo.graph_key`:
    two parts, a part per node led by its code signature, two parts)
    compiled in ``environment``, or None when part of it has no stable text."""
    try:
        head = stable_text((_FORMAT, environment, key[:2]))
        nodes = stable_texts(part[0] for part in key[2:-2])  # each node's code signature
        rest = stable_text(([part[1:] for part in key[2:-2]], key[-2:]))
        text = "\n".join([head, *nodes, rest])
    except Unstable as why:
        _log.debug("graph not indexed: %s", why)
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def place(key: Any) -> tuple[Path, str] | None:
    """Where the graph of memo key parts ``key`` (MemoKey.parts) is filed: the root of the cache
    modules are built in, and its name there; None when the cache cannot be
    written or the key has no stable text."""
    root = cmodule.writable_cache_root()
    if root is None:
        return None
    compiler = cmodule.get_compiler()
    environment = (cmodule.environment_fingerprint(compiler), tuple(march_flags(compiler)))
    name = index_name(key, environment)
    return None if name is None else (root, name)


def orphans(record: Record, constants: list[Any], nodes: Sequence[Any]) -> list[Any] | None:
    """The orphans ``record`` names, from the graph's ``constants`` (as its
    memo key numbers them) and its ``nodes`` (their params, asked again);
    None when it names one the graph does not have."""
    found: list[Any] = []
    for kind, number in record.orphans:
        if kind == "const" and number < len(constants):
            found.append(constants[number].data)
        elif kind == "params" and number < len(nodes):
            node = nodes[number]
            value = params_value(node, f"node {number} ({op_label(node.op)})")
            if value is None:
                return None
            found.append(value)
        else:
            return None
    return found


def load(
    place: tuple[Path, str], constants: list[Any], nodes: Sequence[Any], start: float
) -> tuple[CompiledGraph, cmodule.CompiledModule] | None:
    """The graph filed at ``place`` and its module, with no op asked for
    code: its orphans from the graph's ``constants`` and ``nodes`` (in the
    order they run); None when it has no valid record. ``start``: when the
    lookup began (its seconds)."""
    record = read(place)
    found = None if record is None else orphans(record, constants, nodes)
    if record is None or found is None:
        return None
    compiled = cmodule.load_entry(record.module_key, _core.GRAPH_MODULE_NAME)
    if compiled is None:
        return None
    try:  # the module takes these orphans (their number and types)
        _core.Function(module=compiled.module, orphans=found)
    except (TypeError, ValueError) as error:
        _log.warning("graph record %s does not fit its module (%s): ignored", place[1], error)
        return None
    seconds = {"lookup": time.perf_counter() - start}
    graph = CompiledGraph(
        compiled.module,
        str(compiled.library),
        str(compiled.source),
        "hit",
        found,
        record.block_names,
        record.output_blocks,
        seconds,
        node_blocks=record.node_blocks,
    )
    return graph, compiled


def _record(compiled: Any, module_key: str, constants: list[Any]) -> Record | None:
    """The record of ``compiled`` (a CompiledGraph), whose memo key numbers
    ``constants``; None when an orphan is a constant the key does not number."""
    numbers = {id(v): n for n, v in enumerate(constants)}
    found = []
    for kind, where in compiled.orphan_sources:
        if kind == "const":
            if id(where) not in numbers:
                return None
            where = numbers[id(where)]
        found.append((kind, int(where)))
    return Record(
        module_key,
        tuple(found),
        dict(compiled.block_names),
        dict(compiled.output_blocks),
        dict(compiled.node_blocks or {}),
    )


def _path(place: tuple[Path, str]) -> Path:
    root, name = place
    return Path(root) / "graphs" / name[:2] / name


def _trusted(status: os.stat_result) -> bool:
    return status.st_uid == os.geteuid() and not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read(place: tuple[Path, str]) -> Record | None:
    """The record filed at ``place`` (see :func:`place`), or None (none, or
    not trusted, or damaged: see the top)."""
    path = _path(place)
    try:
        if not all(_trusted(os.lstat(d)) for d in (path.parent.parent, path.parent)):
            _log.debug("graph index %s is not private to this user: ignored", path.parent)
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode) or not _trusted(status):
            _log.debug("graph record %s is not private to this user: replaced", path)
            return None
        data = file.read(_MAX_BYTES + 1)
    try:
        return _parse(json.loads(data))
    except (ValueError, TypeError, KeyError) as error:
        _log.warning("graph record %s is damaged (%s): ignored", path, error)
        return None


def _parse(found: Any) -> Record:
    if found.get("format") != _FORMAT:
        raise ValueError("another format")
    key = found["module_key"]
    orphans = tuple((str(kind), int(n)) for kind, n in found["orphans"])
    if not isinstance(key, str) or any(kind not in _KINDS or n < 0 for kind, n in orphans):
        raise ValueError("bad fields")
    # The spec takes constants in the order the key numbers them, then the
    # params of the nodes in the order they run (see spec.name_variables).
    if orphans != tuple(sorted(orphans)) or len(set(orphans)) != len(orphans):
        raise ValueError("orphans out of order")

    def numbers(field: str, value: type) -> dict[int, Any]:
        return {int(k): value(v) for k, v in found[field].items()}

    return Record(
        key,
        orphans,
        numbers("block_names", str),
        numbers("output_blocks", int),
        numbers("node_blocks", int),
    )


def write(place: tuple[Path, str], compiled: Any, module_key: str, constants: list[Any]) -> None:
    """Files the record of ``compiled`` (a CompiledGraph whose module's key
    is ``module_key`` and whose memo key numbers ``constants``) at
    ``place``, atomically; a cache that cannot be written keeps no record,
    nor does a graph with a constant orphan its key does not number."""
    record = _record(compiled, module_key, constants)
    if record is None:
        return
    path = _path(place)
    name = place[1]
    fields = record._asdict()
    fields["orphans"] = [list(orphan) for orphan in record.orphans]
    text = json.dumps({"format": _FORMAT, **fields})
    staging = path.with_name(f"{name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        for directory in (path.parent.parent, path.parent):
            _private_dir(directory)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(staging, flags, 0o600)
        with os.fdopen(fd, "w") as file:
            os.fchmod(fd, 0o600)  # whatever the umask, as the cache's files
            file.write(text)
        os.replace(staging, path)
    except OSError as error:
        _log.debug("cannot keep the graph record %s: %s", path, error)
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)


def _private_dir(directory: Path) -> None:
    """Creates ``directory`` if needed, private to this user (0700, as the
    cache's directories, whatever the umask)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    status = os.lstat(directory)
    if stat.S_ISDIR(status.st_mode) and status.st_uid == os.geteuid():
        if stat.S_IMODE(status.st_mode) != 0o700:
            os.chmod(directory, 0o700)


def sweep(root: Path, keep: Callable[[str], bool] | None = None) -> int:
    """Removes the records of the index under the cache root ``root`` whose
    module key ``keep`` rejects (every record when ``keep`` is None), and
    whatever else is there but a record that reads; returns how many files
    went. Only directories private to this user are swept, and no link is
    followed (``opweave cache clear`` and ``prune``)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    removed = 0
    try:
        top = os.open(Path(root) / "graphs", flags)
    except OSError:
        return 0
    try:
        if not _trusted(os.fstat(top)):
            return 0
        for shard in os.scandir(top):
            with contextlib.suppress(OSError):
                fd = os.open(shard.name, flags, dir_fd=top)
                try:
                    if _trusted(os.fstat(fd)):
                        removed += _sweep_shard(root, fd, keep)
                finally:
                    os.close(fd)
    finally:
        os.close(top)
    return removed


def _sweep_shard(root: Path, shard: int, keep: Callable[[str], bool] | None) -> int:
    removed = 0
    for entry in os.scandir(shard):
        if keep is not None:
            record = read((root, entry.name))
            if record is not None and keep(record.module_key):
                continue
        with contextlib.suppress(OSError):
            os.unlink(entry.name, dir_fd=shard)
            removed += 1
    return removed

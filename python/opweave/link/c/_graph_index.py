"""The compile directory's index of graphs: a hit in a fresh process asks no
op for anything.

Finding a graph's module by its cache key means asking every op for its
code, and an op's version hook may be slow (PyTensor's CGemv compiles and
runs a test program in each process). So once a graph is compiled and every
op in it declares a code version, a record is kept as an entry of the module
cache (kind ``graph``, one file ``graph.json``), beside the modules: written
by the core through the same staging, sealing and publishing, verified
before every read (``ModuleCache.read_entry_file``), listed, verified,
pruned, size-capped and counted (hits, and the seconds of asking the ops
that each hit saved) by ``opweave cache``, carried by ``cache export`` and
``import`` and by the remote tier (signed as modules are), and served from
the read-only layers. Its name is a hash of the stable text
(:mod:`._stable_text`) of the graph's memo key (:func:`._graph_memo.graph_key`:
ops and types by class and props, ExternalCOps' C files by content,
constants by data, the wiring and the configuration that can change code,
not where caches live), of the environment (compiler, Python, NumPy,
machine flags) and of this format: nothing in it depends on where the cache
or the Python packages are, or on file times, so a record made on one
machine is found on another. The record names the module's cache key,
what the module takes besides its code (its orphans: the graph's constants
by number, the nodes' params by node, asked again; the names of its blocks
for messages), and the dependency list of the code (:mod:`._dep_list`,
with paths relative to the import roots): it is used only while that list
holds here (every Python file, distribution, data file, environment
variable and value the code came from is as it was), so an edit anywhere
the code came from means the ops are asked again, never a stale module, and
the record is replaced. A record that cannot be read or parsed is ignored
(and replaced by the next compile of its graph). The module it names is
used only once the cache has verified its entry, so a changed header still
means a rebuild. ``opweave cache prune`` removes the records whose module
is no longer cached, and ``opweave cache clear`` all of them (:func:`sweep`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from opweave import _core
from opweave._logs import get_logger
from opweave._namedtuple import NamedTuple
from opweave._sha256 import sha256_hex
from opweave.configparser import config
from opweave.errors import OpweaveError
from opweave.graph.op import op_label
from opweave.link.c import cmodule
from opweave.link.c._dep_list import Dependencies
from opweave.link.c._graph_records import CompiledGraph
from opweave.link.c._march import march_flags
from opweave.link.c._node_params import params_value
from opweave.link.c._stable_text import Unstable, stable_text, stable_texts

__all__ = ["Record", "index_name", "load", "orphans", "place", "read", "sweep", "write"]

_log = get_logger(__name__)
_FORMAT = 3  # 2: with the dependency list; 3: an entry, with portable paths
_KIND = "graph"  # the kind of a graph record's entry
_FILE = "graph.json"
_LEGACY_KIND = "graphs"  # records of format 2, kept as records, not entries
_KINDS = ("const", "params")

Place = tuple[_core.ModuleCache, str]  # the cache holding a graph's record, and its name


class Record(NamedTuple):
    """What a process needs to call a graph's module without its code."""

    module_key: str
    # Per orphan: ("const", n), the key's constant n, or ("params", k), the
    # params of the k-th node run.
    orphans: tuple[tuple[str, int], ...]
    block_names: dict[int, str]
    output_blocks: dict[int, int]
    node_blocks: dict[int, int]
    dependencies: Dependencies
    # What a hit saves: the seconds the graph's first compile spent asking
    # its ops and types for code and laying out its module.
    saved_seconds: float = 0.0


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
    return sha256_hex(text.encode())


def place(key: Any) -> Place | None:
    """Where the graph of memo key parts ``key`` (MemoKey.parts) is filed:
    the cache modules are built in (whose read-only layers are read too),
    and its name there; None when there is no usable cache or the key has
    no stable text."""
    try:
        cache = cmodule.get_module_cache()
    except OpweaveError:
        return None
    compiler = cmodule.get_compiler()
    environment = (cmodule.environment_fingerprint(compiler), tuple(march_flags(compiler)))
    name = index_name(key, environment)
    return None if name is None else (cache, name)


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
    place: Place, constants: list[Any], nodes: Sequence[Any], start: float
) -> tuple[CompiledGraph, cmodule.CompiledModule, Dependencies] | str:
    """The graph filed at ``place``, its module and the dependency list of
    its code (watched here from now on), with no op asked for code: its
    orphans from the graph's ``constants`` (as its memo key numbers them)
    and its ``nodes`` (in the order they run); else why not (no valid
    record, a dependency that changed, ...). ``start``: when the lookup
    began (its seconds)."""
    record = read(place)
    if record is None:
        return f"no graph record {place[1][:16]}"
    why = record.dependencies.check_fresh()
    if why:
        return f"graph record {place[1][:16]} not used: {why}"
    found = orphans(record, constants, nodes)
    if found is None:
        return f"graph record {place[1][:16]} names orphans this graph does not have"
    compiled = cmodule.load_entry(record.module_key, _core.GRAPH_MODULE_NAME)
    if compiled is None and config.cache__remote:  # the module is the remote tier's too
        if _remote().fetch_entry(place[0], record.module_key, "module"):
            compiled = cmodule.load_entry(record.module_key, _core.GRAPH_MODULE_NAME)
    if compiled is None:
        return f"graph record {place[1][:16]}: its module {record.module_key[:16]} is not cached"
    try:  # the module takes these orphans (their number and types)
        _core.Function(module=compiled.module, orphans=found)
    except (TypeError, ValueError) as error:
        _log.warning("graph record %s does not fit its module (%s): ignored", place[1], error)
        return f"graph record {place[1][:16]} does not fit its module"
    place[0].note_hit(record.saved_seconds)
    seconds = {"lookup": time.perf_counter() - start}
    graph = CompiledGraph(
        compiled.module,
        compiled.library_file,
        compiled.source_file,
        "hit",
        found,
        record.block_names,
        record.output_blocks,
        seconds,
        node_blocks=record.node_blocks,
    )
    return graph, compiled, record.dependencies.watch_here()


def _record(
    compiled: Any,
    module_key: str,
    constants: list[Any],
    dependencies: Dependencies,
    saved_seconds: float,
) -> Record | None:
    """The record of ``compiled`` (a CompiledGraph), whose memo key numbers
    ``constants`` and whose code came from ``dependencies``; None when an
    orphan is a constant the key does not number."""
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
        dependencies,
        saved_seconds,
    )


def read(place: Place) -> Record | None:
    """The record filed at ``place`` (see :func:`place`): this cache's, a
    read-only layer's, else the remote tier's (adopted here once it
    verifies); None when there is none, or it is damaged (see the top)."""
    cache, name = place
    try:
        data = _entry_data(cache, name)
        if data is None and config.cache__remote:
            if _remote().fetch_entry(cache, name, "graph record"):
                data = _entry_data(cache, name)
        return None if data is None else _parse(json.loads(data))
    except (ValueError, TypeError, KeyError, IndexError) as error:
        _log.warning("graph record %s is damaged (%s): ignored", name, error)
        return None


def _remote() -> Any:
    """The remote tier's module (imported, with its client, only when one
    is configured)."""
    from opweave.link.c import _remote

    return _remote


def _entry_data(cache: _core.ModuleCache, name: str) -> bytes | None:
    """The verified data of the record entry ``name``, or None."""
    events: list[Any] = []
    try:
        return cache.read_entry_file(name, _FILE, events)
    except OpweaveError as error:  # e.g. an entry another user owns
        _log.debug("cannot read the graph record %s: %s", name[:16], error)
        return None
    finally:
        cmodule.report_events(events)


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
        Dependencies.from_json(found["deps"]),
        float(found["saved_seconds"]),
    )


def write(
    place: Place,
    compiled: Any,
    module_key: str,
    constants: list[Any],
    dependencies: Dependencies,
    saved_seconds: float,
    label: str,
) -> None:
    """Files the record of ``compiled`` (a CompiledGraph whose module's key
    is ``module_key``, whose memo key numbers ``constants``, whose code came
    from ``dependencies`` and cost ``saved_seconds`` to ask for and lay out;
    ``label``: what it runs, for ``opweave cache list``) at ``place``, in
    place of any record there, and stores it in the remote
    tier when one is configured; a cache that cannot be written keeps no
    record, nor does a graph with a constant orphan its key does not number,
    nor one whose code came from a module with no file."""
    record = _record(compiled, module_key, constants, dependencies, saved_seconds)
    if record is None or not dependencies.persistent:
        return
    cache, name = place
    fields = record._asdict()
    fields["orphans"] = [list(orphan) for orphan in record.orphans]
    fields["deps"] = dependencies.to_json()
    del fields["dependencies"]
    data = json.dumps({"format": _FORMAT, **fields}).encode()
    described = {
        "kind": _KIND,
        "label": label,
        "environment": cmodule.environment_fingerprint(),
        # The first line as a module's: the sweep after an upgrade of the
        # key recipe (which renames every record) removes it.
        "key_material": f"layout: graph {_core.MODULE_LAYOUT_VERSION}\n"
        f"record: {name}\nmodule: {module_key}\n",
        "compile_seconds": saved_seconds,
    }
    try:
        cache.replace(name, {_FILE: data}, described)
    except OpweaveError as error:  # a read-only cache, a busy lock, a full disk
        _log.debug("cannot keep the graph record %s in %s: %s", name[:16], cache.root, error)
        return
    if config.cache__remote:
        _remote().store_entry(cache, name)


def sweep(cache: _core.ModuleCache, keep: Callable[[str], bool] | None = None) -> int:
    """Removes the graph records of ``cache`` whose module key ``keep``
    rejects (every record when ``keep`` is None), and those that do not
    read; returns how many went (``opweave cache clear`` and ``prune``).
    Records of an older opweave (kept as records, not entries) all go."""
    removed = 0
    for entry in cache.list():
        if entry.kind != _KIND:
            continue
        if keep is not None:
            record = read((cache, entry.key))
            if record is not None and keep(record.module_key):
                continue
        removed += cache.evict(entry.key)
    for name in cache.record_names(_LEGACY_KIND):
        removed += cache.remove_record(_LEGACY_KIND, name)
    return removed

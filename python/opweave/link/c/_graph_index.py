"""The compile directory's index of graphs: a hit in a fresh process asks no
op for anything.

Finding a graph's module by its cache key means asking every op for its
code, and an op's version hook may be slow (PyTensor's CGemv compiles and
runs a test program in each process). So once a graph is compiled and every
op in it declares a code version, a record is kept as a record of the
module cache (``ModuleCache.write_record``, kind ``graphs``: the core reads
and writes it, with the checks of its own files, and serves it from the
read-only layers too). Its name is a hash of the stable text
(:mod:`._stable_text`) of the graph's memo key (:func:`._graph_memo.graph_key`:
ops and types by class, source files and props, constants by data, the
wiring and the configuration), of the environment (compiler, Python, NumPy,
machine flags) and of this format. The record names the module's cache key,
what the module takes besides its code (its orphans: the graph's constants
by number, the nodes' params by node, asked again; the names of its blocks
for messages), and the dependency list of the code (:mod:`._dep_list`): it
is used only while that list holds here (every Python file, distribution,
data file, environment variable and value the code came from is as it was),
so an edit anywhere the code came from means the ops are asked again, never
a stale module. A record that cannot be read or parsed is ignored (and
replaced by the next compile of its graph). The module it names is used only
once the cache has verified its entry, so a changed header still means a
rebuild. ``opweave cache prune`` removes the records whose module is no
longer cached, and ``opweave cache clear`` all of them (:func:`sweep`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.errors import OpweaveError
from opweave.graph.op import op_label
from opweave.link.c import cmodule
from opweave.link.c._dep_list import Dependencies
from opweave.link.c._graph_records import CompiledGraph
from opweave.link.c._march import march_flags
from opweave.link.c._node_params import params_value
from opweave.link.c._stable_text import Unstable, stable_text, stable_texts

__all__ = ["Record", "index_name", "load", "orphans", "place", "read", "sweep", "write"]

_log = logging.getLogger(__name__)
_FORMAT = 2  # 2: with the dependency list
_KIND = "graphs"
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
    if compiled is None:
        return f"graph record {place[1][:16]}: its module {record.module_key[:16]} is not cached"
    try:  # the module takes these orphans (their number and types)
        _core.Function(module=compiled.module, orphans=found)
    except (TypeError, ValueError) as error:
        _log.warning("graph record %s does not fit its module (%s): ignored", place[1], error)
        return f"graph record {place[1][:16]} does not fit its module"
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
    return graph, compiled, record.dependencies.watch_here()


def _record(
    compiled: Any, module_key: str, constants: list[Any], dependencies: Dependencies
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
    )


def read(place: Place) -> Record | None:
    """The record filed at ``place`` (see :func:`place`), or None (none, or
    damaged: see the top)."""
    cache, name = place
    try:
        data = cache.read_record(_KIND, name)
        return None if data is None else _parse(json.loads(data))
    except (ValueError, TypeError, KeyError, IndexError) as error:
        _log.warning("graph record %s is damaged (%s): ignored", name, error)
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
        Dependencies.from_json(found["deps"]),
    )


def write(
    place: Place,
    compiled: Any,
    module_key: str,
    constants: list[Any],
    dependencies: Dependencies,
) -> None:
    """Files the record of ``compiled`` (a CompiledGraph whose module's key
    is ``module_key``, whose memo key numbers ``constants`` and whose code
    came from ``dependencies``) at ``place``; a cache that cannot be written
    keeps no record, nor does a graph with a constant orphan its key does
    not number, nor one whose code came from a module with no file."""
    record = _record(compiled, module_key, constants, dependencies)
    if record is None or not dependencies.persistent:
        return
    cache, name = place
    fields = record._asdict()
    fields["orphans"] = [list(orphan) for orphan in record.orphans]
    fields["deps"] = dependencies.to_json()
    del fields["dependencies"]
    if not cache.write_record(_KIND, name, json.dumps({"format": _FORMAT, **fields}).encode()):
        _log.debug("cannot keep the graph record %s in %s", name, cache.root)


def sweep(cache: _core.ModuleCache, keep: Callable[[str], bool] | None = None) -> int:
    """Removes the records of the index of ``cache`` whose module key
    ``keep`` rejects (every record when ``keep`` is None), and those that
    do not read; returns how many went (``opweave cache clear`` and
    ``prune``)."""
    removed = 0
    for name in cache.record_names(_KIND):
        if keep is not None:
            record = read((cache, name))
            if record is not None and keep(record.module_key):
                continue
        removed += cache.remove_record(_KIND, name)
    return removed

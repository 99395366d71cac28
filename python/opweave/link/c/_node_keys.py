"""Node codes: what identifies one node's compiled code, the graph a module
exports for it, and the memo that finds a node's code again in a process.

A node's *code key* is the cache key of the module that would hold that node
alone: the node on fresh input variables, its constants kept (the graph of
:func:`single_node_graph`), with that graph's compile job and key material.
A module compiled with exports (``GraphBuild(..., export_nodes=True)``, :mod:`.service`) holds,
besides its own graph, the graph of each of its nodes whose compile job is
the module's, under that key (``ModuleSpec::exports``); its cache entry
lists the keys, and the cache indexes them (``ModuleCache.find_export``).
The per-node linker looks each node up by key and runs the exported graphs,
so a graph whose node codes were all compiled before, in any graphs,
compiles nothing.

Keys are memoised per process by the node's *signature* (:mod:`._node_memo`):
its op, the types of its inputs and outputs, the data of its constants and
the configuration, and checked against the dependency list of what its
hooks read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave._sha256 import sha256_hex
from opweave.configparser import config
from opweave.graph.basic import Apply, Variable, fresh_variable, is_constant, make_apply
from opweave.graph.fg import FunctionGraph
from opweave.link.c._context import CONTEXT
from opweave.link.c._dep_list import Dependencies
from opweave.link.c._export import STATIC_DESTROY, cell_helpers, export_text, shared_run, shares_run
from opweave.link.c._export_context import ModuleContext
from opweave.link.c.kernels import KERNEL_CLASSES, code_op

__all__ = [
    "MISSING",
    "NodeCode",
    "SourceFiles",
    "constant_signature",
    "export_parts",
    "job_signature",
    "memo_snapshot",
    "register_snapshot",
    "signature",
    "single_node_graph",
    "variable_inputs",
    "with_exports",
]

# Constants up to this many bytes are part of a memo signature as they are;
# larger ones (a model's data) by their SHA-256 digest, up to
# _DIGEST_CONSTANT_BYTES; past that, a node's code key is computed again for
# each graph.
_MEMO_CONSTANT_BYTES = 4096
_DIGEST_CONSTANT_BYTES = 64 << 20
MISSING = object()  # what constant_signature returns for data that cannot key a memo


class NodeCode(NamedTuple):
    """The compiled code of one node, as the per-node linker needs it."""

    key: str  # the code key (see the top)
    positions: tuple[int, ...]  # per input of the node's graph: the node input it stands for
    orphans: list[Any]  # the node graph's orphans (constants' data, params)
    export: dict[str, Any]  # the graph's parts, for a module's exports (see with_exports)
    job: tuple[Any, ...]  # the compile job, as compared with a module's (job_signature)
    node_block: int  # the run block id of the node in its graph (the rest are its inputs')
    # What its hooks read (set when it is memoised; None: not memoised).
    dependencies: Dependencies | None = None


def register_snapshot(provider: Callable[[], Any]) -> None:
    """Adds ``provider()`` (hashable) to the configuration that the memos of
    node and graph code are keyed on: the settings a graph library's hooks
    read (:mod:`opweave.pytensor` registers PyTensor's ``in_c_key`` flags)."""
    CONTEXT.memo_snapshots.append(provider)


def memo_snapshot() -> Any:
    """The configuration the code memos are keyed on: opweave's options and
    every registered provider's value."""
    return (config.snapshot(), *(provider() for provider in CONTEXT.memo_snapshots))


class SourceFiles(tuple):
    """The C files an ExternalCOp reads, each as (path, size, modification
    time, inode): equal while no file is edited or replaced, so a process's
    memos are never served an edited file. A graph record's name holds
    their content instead (:meth:`contents`), which does not depend on
    where they are or when they were written."""

    __slots__ = ()

    def contents(self) -> tuple[tuple[str, str], ...]:
        """Each file's name and the SHA-256 of its content ("" when it
        cannot be read: then the record's dependency list, which holds the
        file too, does not hold either)."""
        found = []
        for path, *_ in self:
            try:
                with open(path, "rb") as file:
                    digest = _core.sha256_hex(file.read())
            except OSError:
                digest = ""
            found.append((os.path.basename(path), digest))
        return tuple(found)


def _files_signature(op: Any) -> Any:
    """The C files an ExternalCOp reads (``func_files``) as SourceFiles,
    so that an edited file is never served from a memo; ``()`` for other
    ops; MISSING when one cannot be read."""
    files = getattr(op, "func_files", None)
    if not files:
        return ()
    found = []
    for path in files:
        try:
            stat = os.stat(path)
        except (OSError, TypeError, ValueError):
            return MISSING
        found.append((str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return SourceFiles(found)


def single_node_graph(node: Apply, given: Collection[int] = ()) -> tuple[FunctionGraph, list[int]]:
    """``node`` alone, on fresh input variables (one per distinct variable
    input; constants stay constants, so ``c_code`` sees their data, but
    those in ``given``, ids of constants the caller passes as inputs), and
    for each fresh input the position of the node input it stands for."""
    fresh: dict[int, Variable] = {}
    positions: list[int] = []
    for position, variable in enumerate(node.inputs):
        if id(variable) in fresh:
            continue
        if not is_constant(variable) or id(variable) in given:
            fresh[id(variable)] = fresh_variable(variable)
            positions.append(position)
    inputs = [fresh.get(id(v), v) for v in node.inputs]
    outputs = [v.clone() for v in node.outputs]
    clone = make_apply(node.op, inputs, outputs, like=node)  # of the node's own class
    return FunctionGraph(list(fresh.values()), list(clone.outputs)), positions


def constant_signature(variable: Variable) -> Any:
    """A hashable value of a constant's data, equal for equal data, or
    :data:`MISSING` (large, opaque or object data)."""
    data = getattr(variable, "data", None)
    if isinstance(data, np.ndarray):
        if data.nbytes > _DIGEST_CONSTANT_BYTES or data.dtype.hasobject:
            return MISSING
        if data.nbytes > _MEMO_CONSTANT_BYTES:
            digest = sha256_hex(np.ascontiguousarray(data).data)
            return ("array-sha256", data.dtype.str, data.shape, digest)
        return ("array", data.dtype.str, data.shape, data.tobytes())
    if isinstance(data, np.generic):
        return ("scalar", data.dtype.str, data.tobytes())
    if data is None or isinstance(data, (bool, int, float, complex, str, bytes)):
        return (type(data).__name__, data)
    return MISSING  # data whose equality says nothing about its code


def signature(node: Apply, snapshot: Any, given: Collection[int] = ()) -> Any:
    """A hashable value equal for two nodes whose code is the same, or None
    when the node cannot be memoised (an unhashable op or type, a large or
    opaque constant). ``given``: the ids of constants passed as inputs."""
    inputs: list[Any] = []
    seen: dict[int, int] = {}
    for variable in node.inputs:
        if is_constant(variable) and id(variable) not in given:
            data = constant_signature(variable)
            if data is MISSING:
                return None
            inputs.append(("constant", variable.type, data))
        else:  # which distinct variable: x*x is not x*y
            inputs.append(("variable", variable.type, seen.setdefault(id(variable), len(seen))))
    outputs = tuple(v.type for v in node.outputs)
    op = code_op(node) if type(node.op) in KERNEL_CLASSES else node.op  # no call on a hit
    files = _files_signature(op)
    if files is MISSING:
        return None
    key = (type(node), type(op), op, tuple(inputs), outputs, files, snapshot)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def job_signature(job: Any) -> tuple[Any, ...]:
    """What of a compile job decides how a node's code compiles: a module
    exports a node only when these are the node's own."""
    return (
        tuple(job.include_dirs),
        tuple(job.flags),
        tuple(job.lib_dirs),
        tuple(job.libraries),
        str(job.opt_level),
        str(job.debug_info),
    )


def export_parts(graph: Any, key: str) -> dict[str, Any]:
    """What a module needs to export a one-node graph (a GraphSpec without
    units) under ``key``: the graph's definitions with their names and
    origins, and the export's own text (see _export.py)."""
    table = f"opweave_node_{key[:24]}"
    return {
        "origins": graph.spec.origins,
        "names": graph.definition_names,
        "definitions": graph.spec.definitions,
        "table": table,
        "text": export_text(graph.node_plan, table),
        "read": graph.node_plan.inputs,
        "made": graph.node_plan.outputs,
        # the run it shares with the exports of its signature, if it does
        "shared_run": shared_run(graph.node_plan) if shares_run(graph.node_plan) else None,
        "headers": list(graph.spec.headers),
        "support": [text for text, _ in graph.spec.support_code],
    }


def with_exports(
    spec: _core.ModuleSpec, names: Sequence[str], codes: Sequence[NodeCode]
) -> _core.ModuleSpec:
    """``spec`` (whose definitions define ``names``) exporting the graph of
    each of ``codes`` that it compiles as the node's own module would
    (:class:`._export_context.ModuleContext`): its export's text, after those of its graph's
    definitions that the module lacks (their origins appended to the
    module's)."""
    out = spec.copy()
    origins = spec.origins
    present = set(names)
    context = ModuleContext(spec)
    unique = [c for c in dict((c.key, c) for c in codes).values() if context.holds_alone(c.export)]
    if not unique:
        return out
    if out.units:  # exports may name the units' structs: the body declares them
        out.definitions = [*out.definitions, *out.unit_names[:-1]]
    read = {cell for code in unique for cell in code.export["read"]}
    made = {cell for code in unique for cell in code.export["made"]}
    runs = dict(code.export["shared_run"] for code in unique if code.export["shared_run"])
    # The cell functions the exports call, then the runs they share, before
    # the first export's text.
    helpers = "".join(
        cell_helpers(cell, cell in read, cell in made) for cell in sorted(read | made)
    )
    helpers += (STATIC_DESTROY if runs else "") + "".join(runs[name] for name in sorted(runs))
    exports = []
    for index, code in enumerate(unique):
        parts = code.export
        offset = len(origins)
        origins.extend(parts["origins"])
        definitions = [[(helpers, -1)]] if index == 0 else []
        for name, definition in zip(parts["names"], parts["definitions"], strict=True):
            if name not in present:
                present.add(name)
                definitions.append([(t, o + offset if o >= 0 else o) for t, o in definition])
        definitions.append([(parts["text"], -1)])
        exports.append(
            _core.GraphExport(key=code.key, table=parts["table"], definitions=definitions)
        )
    out.origins = origins
    out.exports = exports
    return out


def variable_inputs(node: Apply, code: NodeCode) -> list[Variable]:
    """The variables a node's exported graph takes, in order."""
    return [node.inputs[p] for p in code.positions]

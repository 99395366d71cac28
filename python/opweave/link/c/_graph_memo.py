"""The process's memo of compiled graphs: a second ``function()`` of an equal
graph does not ask every op for its code again.

A graph's memo key is what its module's text depends on: per node, in the
order they run, the node's code signature (:func:`._node_keys.signature`:
op, types, constants' data, which inputs are the same variable, the files an
ExternalCOp reads, and the configuration of opweave and of registered
libraries), how the nodes are wired (to which graph input, node output or
constant each input is connected), the outputs, the storage not kept between
calls, the types of the inputs and the data of constants, and the names that
messages show. Only graphs whose every op declares
a code version are memoised (:func:`versioned`, asked when a graph is
remembered, so that a hit asks no op anything): an op without one may change
its code without saying so. A memoised module is used again only while the
dependency list of its code holds (:mod:`._dep_list`: what the ops' code
read, from other modules, files and the environment, is as it was) and the
headers it was compiled with are unchanged (:func:`.cmodule.still_current`):
otherwise the graph is compiled again, never served stale. The key also
names a graph in the compile directory's index, for hits in other processes
(:mod:`._graph_index`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from opweave._namedtuple import NamedTuple
from opweave.graph.basic import Apply, is_constant
from opweave.link.c._context import CONTEXT
from opweave.link.c._node_keys import MISSING, constant_signature, memo_snapshot, signature
from opweave.link.c.hooks import call_optional_hook, declares_version
from opweave.link.c.kernels import code_op

__all__ = ["GraphKey", "MemoKey", "forget", "graph_key", "recall", "remember", "versioned"]

_MEMO_SIZE = 256


class MemoKey:
    """A graph's memo key: ``parts``, a tuple of ops, types and wiring,
    hashed once (Python keeps no hash of a tuple, and the ops' hashes are
    Python code)."""

    __slots__ = ("_hash", "parts")

    def __init__(self, parts: tuple[Any, ...]) -> None:
        self.parts = parts
        self._hash = hash(parts)  # TypeError for an unhashable part

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoKey):
            return NotImplemented
        return self._hash == other._hash and self.parts == other.parts


class GraphKey(NamedTuple):
    """A graph's memo key and the constants it numbers (``("const", n, ...)``
    in the key is ``constants[n]``)."""

    key: MemoKey
    constants: list[Any]


def versioned(nodes: Sequence[Apply]) -> bool:
    """Whether every node's op declares a code version for it."""
    for node in nodes:
        op: Any = code_op(node)
        if declares_version(op, "c_code_cache_version_apply"):
            found = call_optional_hook(op, "c_code_cache_version_apply", node, default=())
        else:
            found = declares_version(op) and op.c_code_cache_version()
        if not found:
            return False
    return True


def graph_key(
    fgraph: Any,
    nodes: Sequence[Apply],
    no_recycling: Collection[int],
    numbers: dict[int, int] | None,
    export_nodes: bool,
) -> GraphKey | None:
    """The memo key of ``fgraph`` run in the order ``nodes``, or None when
    it cannot be memoised. It asks no op for anything."""
    snapshot = memo_snapshot()
    given = {id(v) for v in fgraph.inputs}
    source: dict[int, Any] = {id(v): ("in", k) for k, v in enumerate(fgraph.inputs)}
    constants: dict[int, int] = {}
    numbered: list[Any] = []

    def where(variable: Any) -> Any:
        found = source.get(id(variable))
        if found is None:
            if not is_constant(variable):
                raise KeyError(variable)
            data = constant_signature(variable)
            if data is MISSING:
                raise KeyError(variable)
            number = constants.setdefault(id(variable), len(constants))
            if number == len(numbered):
                numbered.append(variable)
            found = ("const", number, variable.type, data)
        return found

    # The inputs' types: an input no node reads is still checked by the module.
    parts: list[Any] = [tuple((v.type, v.name) for v in fgraph.inputs), export_nodes]
    try:
        for index, node in enumerate(nodes):
            code = signature(node, snapshot, given)
            if code is None:
                return None
            wiring = tuple(where(v) for v in node.inputs)
            number = None if numbers is None else numbers.get(id(node))
            parts.append((code, wiring, number, tuple(v.name for v in node.outputs)))
            for position, variable in enumerate(node.outputs):
                source[id(variable)] = ("node", index, position)
        parts.append(tuple(where(v) for v in fgraph.outputs))
        kept = {id(v): v for v in [*fgraph.inputs, *(o for n in nodes for o in n.outputs)]}
        parts.append(tuple(sorted(str(where(kept[i])) for i in no_recycling if i in kept)))
        key = MemoKey(tuple(parts))
    except (KeyError, TypeError):  # a variable from outside the graph, an unhashable part
        return None
    return GraphKey(key, numbered)


def recall(key: MemoKey) -> tuple[Any, Any, Any] | None:
    """The compiled graph memoised under ``key``, the CompiledModule it runs
    and the dependency list of its code (whose ``check_here`` and
    :func:`.cmodule.still_current` say whether it may be used)."""
    return CONTEXT.graphs.get(key)


def remember(key: MemoKey, compiled: Any, module: Any, dependencies: Any) -> None:
    """Memoises ``compiled``, which runs the CompiledModule ``module``, and
    whose code came from ``dependencies``."""
    CONTEXT.graphs[key] = (compiled, module, dependencies)
    if len(CONTEXT.graphs) > _MEMO_SIZE:
        del CONTEXT.graphs[next(iter(CONTEXT.graphs))]


def forget(key: MemoKey) -> None:
    """Drops ``key`` (its module went stale)."""
    CONTEXT.graphs.pop(key, None)

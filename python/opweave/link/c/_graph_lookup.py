"""The one way to a graph's module past its code: a graph compiled before
is found without asking its ops for code, in this process's memo
(:mod:`._graph_memo`), then in the compile directory's index
(:mod:`._graph_index`), each only while the dependency list of its code
holds (:mod:`._dep_list`); a graph compiled now is kept in both with the
dependency list of what its ops' and types' hooks read while it was
compiled (:mod:`._dep_window`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from opweave.link.c import _graph_index, _graph_memo, cmodule
from opweave.link.c._dep_collect import collect
from opweave.link.c._dep_window import Recording, recording
from opweave.link.c._graph_records import CompiledGraph

__all__ = ["Compile", "compiled_graph"]

_log = logging.getLogger(__name__)

# Compiles the graph past the memos: (the graph, its module, the ops and
# types that wrote its code); its recording, when one is open around it.
Compile = Callable[[float, Recording | None], tuple[CompiledGraph, Any, Sequence[Any]]]


def compiled_graph(linker: Any, compile_graph: Compile) -> CompiledGraph:
    """The module of the graph bound to ``linker`` (a CLinker): from the
    memo, the index, or ``compile_graph``."""
    start = time.perf_counter()
    memo = _graph_memo.graph_key(
        linker.bound_graph(),
        linker.order(),
        {id(v) for v in linker.no_recycling},
        linker.numbers,
        linker.export_nodes,
    )
    if memo is None:
        return compile_graph(start, None)[0]
    found = _graph_memo.recall(memo.key)
    if found is not None:
        why = found[2].check_here()
        if not why and cmodule.still_current(found[1]):
            seconds = {"lookup": time.perf_counter() - start}
            return found[0]._replace(outcome="hit", seconds=seconds)
        if why:
            _log.info("%s is asked for its code again: %s", linker.label(), why)
        _graph_memo.forget(memo.key)
    place = _graph_index.place(memo.key.parts)
    indexed = (
        None if place is None else _graph_index.load(place, memo.constants, linker.order(), start)
    )
    if indexed is not None:
        graph, module, dependencies = indexed
    else:
        with recording() as seen:
            graph, module, objects = compile_graph(start, seen)
            versioned = _graph_memo.versioned(linker.order())
        collecting = time.perf_counter()
        found_dependencies = collect(seen, {type(o) for o in objects}) if versioned else None
        if found_dependencies is None:
            return graph
        dependencies = found_dependencies
        if place is not None:
            _graph_index.write(place, graph, module.key, memo.constants, dependencies)
        seconds = dict(graph.seconds or {})
        seconds["dependencies"] = time.perf_counter() - collecting
        graph = graph._replace(seconds=seconds)
    _graph_memo.remember(memo.key, graph, module, dependencies)
    return graph

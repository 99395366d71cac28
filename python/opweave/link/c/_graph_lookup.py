"""The one way to a graph's module past its code: a graph compiled before
is found without asking its ops for code, in this process's memo
(:mod:`._graph_memo`), then in the compile directory's index
(:mod:`._graph_index`), each only while the dependency list of its code
holds (:mod:`._dep_list`); a graph compiled now is kept in both with the
dependency list of what its ops' and types' hooks read while it was
compiled (:mod:`._dep_window`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from opweave import _logs
from opweave.link.c import _graph_index, _graph_memo, cmodule
from opweave.link.c._dep_collect import collect
from opweave.link.c._dep_window import Recording, recording
from opweave.link.c._graph_records import CompiledGraph
from opweave.link.c._key_diff import unlike_nearest

__all__ = ["Compile", "compiled_graph"]

_log = _logs.get_logger(__name__)

# Compiles the graph past the memos: (the graph, its module, the ops and
# types that wrote its code); its recording, when one is open around it.
Compile = Callable[[float, Recording | None], tuple[CompiledGraph, Any, Sequence[Any]]]


def compiled_graph(linker: Any, compile_graph: Compile) -> CompiledGraph:
    """The module of the graph bound to ``linker`` (a GraphBuild): from the
    memo, the index, or ``compile_graph``. One line says which: DEBUG for
    the memo and the index, INFO (with why) when the ops are asked for
    code (:func:`_explain`)."""
    start = time.perf_counter()
    memo = _graph_memo.graph_key(
        linker.bound_graph(),
        linker.order(),
        {id(v) for v in linker.no_recycling},
        linker.numbers,
        linker.export_nodes,
    )
    if memo is None:
        graph = compile_graph(start, None)[0]
        _explain(linker, graph, "the graph has no memo key (a node or constant without one)")
        return graph
    found = _graph_memo.recall(memo.key)
    missed = ""
    if found is not None:
        why = found[2].check_here()
        if not why and cmodule.still_current(found[1]):
            seconds = {"lookup": time.perf_counter() - start}
            if _log.isEnabledFor(_logs.DEBUG):  # a label costs a walk of the graph
                _log.debug("%s: this process's memo (module %s)", linker.label(), found[1].key[:16])
            return found[0]._replace(outcome="hit", seconds=seconds)
        missed = f"memo not used: {why}" if why else "memo not used: its module went stale"
        _graph_memo.forget(memo.key)
    place = _graph_index.place(memo.key.parts)
    indexed = (
        "no graph record name (a part of the graph has no stable text)"
        if place is None
        else _graph_index.load(place, memo.constants, linker.order(), start)
    )
    if not isinstance(indexed, str):
        graph, module, dependencies = indexed
        if _log.isEnabledFor(_logs.DEBUG):  # a hit stays quiet at INFO
            name = place[1][:16] if place is not None else ""
            _log.debug("%s: graph record %s (module %s)", linker.label(), name, module.key[:16])
    else:
        missed = f"{missed}; {indexed}" if missed else indexed
        with recording() as seen:
            graph, module, objects = compile_graph(start, seen)
            versioned = _graph_memo.versioned(linker.order())
        _explain(linker, graph, missed)
        collecting = time.perf_counter()
        found_dependencies = collect(seen, {type(o) for o in objects}) if versioned else None
        if found_dependencies is None:
            return graph
        dependencies = found_dependencies
        seconds = dict(graph.seconds or {})
        seconds["dependencies"] = time.perf_counter() - collecting
        graph = graph._replace(seconds=seconds)
        if place is not None:  # a hit saves asking the ops, laying out, collecting
            saved = sum(seconds.get(k, 0.0) for k in ("hooks", "assembly", "dependencies"))
            label = linker.label()
            _graph_index.write(place, graph, module.key, memo.constants, dependencies, saved, label)
    _graph_memo.remember(memo.key, graph, module, dependencies)
    return graph


def _explain(linker: Any, graph: CompiledGraph, why: str) -> None:
    """The INFO line of a graph whose ops were asked for code: why, and what
    the module cache did then (``hit``: the entry was there); a module
    compiled names the key fields in which it differs from the module of
    the same ops nearest to it (:func:`._key_diff.unlike_nearest`)."""
    if not _log.isEnabledFor(_logs.INFO):
        return
    key = os.path.basename(os.path.dirname(graph.library))
    unlike = unlike_nearest(cmodule.get_module_cache, key) if graph.outcome == "built" else ""
    _log.info(
        "%s: ops asked for code (%s); module %s: %s%s",
        linker.label(),
        why,
        key[:16],
        graph.outcome,
        f" (unlike {unlike})" if unlike else "",
    )

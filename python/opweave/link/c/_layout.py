"""One module or node by node: the one rule every C linker follows.

- In C mode (:class:`~opweave.link.c.basic.CLinker`) a graph is one
  compiled module. With ``python_fallback`` (the default mode's), a graph
  with a node that cannot run in C (no C code, or float16 data without
  ``_f16_ok``: :func:`links_node_by_node`, decided before the graph is
  prepared), or whose C code turns out to be missing when the module is
  built (a ``c_code`` raising NotImplementedError), is linked node by node
  instead.
- Node by node (``mode="c|py"``, or that fallback): when every node's code
  was compiled before (exported by some module), the nodes run those
  modules and nothing compiles; else, when every node has C code, the graph
  is one module again, exporting its nodes' code; else, or when that module
  does not compile, by regions (:mod:`._regions`).

Every module comes from the compile service (:mod:`.service`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opweave.errors import CompileError
from opweave.graph.basic import Apply
from opweave.link.c._regions import node_codes, region_steps, reused_steps
from opweave.link.c._step_table import table_function
from opweave.link.c._steps import can_run_in_c
from opweave.link.c.service import GraphBuild
from opweave.link.c.spec import MissingCCode
from opweave.link.callable import InputBinding, compiled_function
from opweave.link.compiled import record_compiled

__all__ = ["linked_function", "links_node_by_node"]


def links_node_by_node(nodes: Sequence[Apply], python_fallback: bool) -> bool:
    """Whether a C-mode graph of ``nodes`` is linked node by node from the
    start: with ``python_fallback``, when a node cannot run in C."""
    return python_fallback and not all(can_run_in_c(node) for node in nodes)


def linked_function(
    build: GraphBuild,
    binding: InputBinding,
    single: bool,
    node_by_node: bool,
    python_fallback: bool = False,
    allow_gc: bool = True,
) -> Any:
    """The Function of ``build``'s graph (its nodes, order and
    ``no_recycling``): one module, or node by node (see the module's
    docstring); ``binding`` binds its inputs, ``single``: it returns its one
    output itself."""
    if not node_by_node:
        try:
            return compiled_function(build.compile(), binding, single)
        except MissingCCode:
            if not python_fallback:
                raise
    return _node_by_node(build, binding, single, allow_gc)


def _node_by_node(build: GraphBuild, binding: InputBinding, single: bool, allow_gc: bool) -> Any:
    fgraph, nodes = build.fgraph, build.order()
    codes = node_codes(nodes, {id(v) for v in fgraph.inputs})
    parts: list[Any] = []
    steps = reused_steps(nodes, codes, parts)
    if steps is None and all(code is not None for code in codes):
        whole = GraphBuild(fgraph, nodes, None, build.no_recycling, export_nodes=True)
        try:
            fn = compiled_function(whole.compile(), binding, single)
        except (MissingCCode, CompileError):
            pass  # the regions find what runs in C, or raise a node's error
        else:
            return record_compiled(fn, outcomes=(fn.cache_outcome,) * len(nodes))
    if steps is None:
        steps = region_steps(fgraph, binding.label, nodes, build.no_recycling, parts)
    fn = table_function(fgraph, binding, single, steps, allow_gc, build.no_recycling)
    return record_compiled(fn, parts=tuple(parts))

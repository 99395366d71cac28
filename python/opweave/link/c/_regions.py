"""Linking a graph node by node (``mode="c|py"``): its nodes' code keys,
the steps that reuse modules compiled before, and its regions.

Each node with C code has a *code key* (:mod:`._node_keys`): the key of its
code alone. Every module compiled for per-node linking also exports the
graph of each of its nodes under that key, and the module cache indexes
those keys. So a graph whose node codes were all compiled before, in any
earlier graphs, compiles nothing: each node runs the graph a module exports
for its code (:func:`reused_steps`).

Otherwise the graph is cut into *regions* (:func:`region_steps`): each
maximal run of consecutive nodes (in the order the graph runs) that have C
code is compiled as one module (with the exports of its nodes), like a graph
of its own, so it runs in one C call with its intermediate results kept in
C between calls (but those in ``no_recycling``); each node without C code
runs ``perform``. A region whose C code turns out to be missing (an op's
``c_code`` may raise NotImplementedError for some nodes), or whose nodes do
not compile together, is split in two until each part compiles; a single
node without C code runs ``perform``, and a single node whose C code does
not compile raises the CompileError.

Steps (compiled graphs and ``perform`` thunks) run in C, in a
:class:`opweave._core.StepRunner` (:mod:`._step_table`), which honours
``allow_gc`` as PyTensor's ``cvm`` does.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from opweave._logs import get_logger
from opweave.errors import CompileError
from opweave.graph.basic import Apply, Variable, is_constant
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import NodeThunk, has_perform, perform_thunk
from opweave.link.c._compile_errors import first_error
from opweave.link.c._export_lookup import load_exports
from opweave.link.c._node_keys import NodeCode
from opweave.link.c._node_memo import computed_together
from opweave.link.c._step_table import TableStep
from opweave.link.c._steps import can_run_in_c, neither_way, python_step
from opweave.link.c.service import GraphBuild, node_code, node_thunk
from opweave.link.c.spec import MissingCCode
from opweave.link.compiled import ModulePart, module_part

_log = get_logger(__name__)

__all__ = ["any_thunk", "node_codes", "region_steps", "reused_steps"]


def any_thunk(node: Apply, index: int) -> NodeThunk:
    """``node``'s compiled thunk if it has C code, else its ``perform``; an
    error naming the node (``index``) if it has neither."""
    thunk = node_thunk(node)
    if thunk is not None:
        return thunk
    if has_perform(node.op):
        return perform_thunk(node)
    raise neither_way(node, index)


def node_codes(nodes: Sequence[Apply], given: Collection[int]) -> list[NodeCode | None]:
    """Per node, the code key of its C code, or None when it runs perform;
    ``given``: the ids of the graph's inputs (constants among them are
    passed)."""
    codes: list[NodeCode | None] = []
    with computed_together():
        for node in nodes:
            code = None
            if can_run_in_c(node):
                try:
                    code = node_code(node, given)
                except MissingCCode:
                    pass  # perform, or the error naming the node
            codes.append(code)
    return codes


def reused_steps(
    nodes: Sequence[Apply], codes: Sequence[NodeCode | None], parts: list[Any]
) -> list[TableStep] | None:
    """A step per node, each compiled node running the graph a module
    exports for its code (each module used is added to ``parts``, as a
    hit, for the compile profile); None when a node's code is in no module
    yet."""
    exported = load_exports([code.key for code in codes if code is not None])
    if any(found is None for found in exported.values()):
        return None
    modules = {id(found[0]): found[0] for found in exported.values() if found is not None}
    parts.extend(ModulePart("hit", {}, (), "", None, m.__file__) for m in modules.values())
    steps = []
    for index, (node, code) in enumerate(zip(nodes, codes, strict=True)):
        if code is None:
            steps.append(python_step(node, index))
            continue
        module, abi = exported[code.key]  # type: ignore[misc]  # none is None here
        what = f"node {index} ({node.op})"
        steps.append(
            TableStep(
                abi,
                module,
                code.orphans,
                [node.inputs[p] for p in code.positions],
                list(node.outputs),
                what,
                ["hit"],
                index,
                {code.node_block: what},
                {code.node_block: index},
            )
        )
    return steps


def region_steps(
    fgraph: FunctionGraph,
    label: str,
    order: Sequence[Apply] | None = None,
    no_recycling: Sequence[Variable] = (),
    parts: list[Any] | None = None,
) -> list[TableStep]:
    """The steps of ``fgraph`` in ``c|py`` mode, its nodes in ``order``
    (default: ``fgraph.toposort()``), which each region keeps; ``label``
    names the function in messages. A region empties at every call its
    intermediate results that are in ``no_recycling`` (its outputs are
    fresh at every call). Each compiled region is added to ``parts`` (its
    cache outcome and compile seconds, for the compile profile)."""
    nodes = fgraph.toposort() if order is None else list(order)
    numbers = {id(node): index for index, node in enumerate(nodes)}
    steps: list[TableStep] = []
    run: list[Apply] = []
    found = [] if parts is None else parts
    for node in [*nodes, None]:
        if node is not None and can_run_in_c(node):
            run.append(node)
            continue
        if run:
            region = _compiled_region(fgraph, nodes, run, numbers, no_recycling, found)
            steps.extend(region)
            run = []
        if node is not None:
            steps.append(python_step(node, numbers[id(node)]))
    return steps


def _region_ends(
    fgraph: FunctionGraph,
    order: list[Apply],
    nodes: list[Apply],
    numbers: dict[int, int],
    inside: set[int],
) -> tuple[list[Variable], list[Variable]]:
    """The inputs of the region of ``nodes`` (what they read from outside
    it: no constant but those the graph takes as inputs) and its outputs
    (what a later node or the graph's outputs read); ``inside``: the ids of
    the variables its nodes make."""
    later = {id(v) for v in fgraph.outputs}
    for node in order[numbers[id(nodes[-1])] + 1 :]:
        later.update(id(v) for v in node.inputs)
    given = {id(v) for v in fgraph.inputs}  # constants among them are passed
    inputs = list(
        {
            id(v): v
            for node in nodes
            for v in node.inputs
            if id(v) not in inside and (not is_constant(v) or id(v) in given)
        }.values()
    )
    outputs = [v for node in nodes for v in node.outputs if id(v) in later]
    return inputs, outputs


def _compiled_region(
    fgraph: FunctionGraph,
    order: list[Apply],
    nodes: list[Apply],
    numbers: dict[int, int],
    no_recycling: Sequence[Variable],
    parts: list[Any],
) -> list[TableStep]:
    """``nodes`` (consecutive in ``order``, the order the graph's nodes run)
    as one compiled step, in that order, or split in two when they do not
    compile together."""
    inside = {id(v) for node in nodes for v in node.outputs}
    inputs, outputs = _region_ends(fgraph, order, nodes, numbers, inside)
    region = FunctionGraph(inputs, outputs)

    def split() -> list[TableStep]:
        half = len(nodes) // 2
        return [
            step
            for part in (nodes[:half], nodes[half:])
            for step in _compiled_region(fgraph, order, part, numbers, no_recycling, parts)
        ]

    kept = [v for v in no_recycling if id(v) in inside]
    try:
        compiled = GraphBuild.of(region, nodes, numbers, kept, export_nodes=True).compile()
    except MissingCCode:
        if len(nodes) == 1:
            return [python_step(nodes[0], numbers[id(nodes[0])])]
        return split()
    except CompileError as error:
        # Nodes that compile on their own may not compile together (two enums
        # defining one name differently); a single node's error is its own.
        if len(nodes) == 1:
            raise
        why = first_error(error)
        _log.info("%d nodes do not compile as one module, split in two: %s", len(nodes), why)
        return split()
    parts.append(module_part(compiled))
    first, last = numbers[id(nodes[0])], numbers[id(nodes[-1])]
    return [
        TableStep(
            compiled.module.abi,
            compiled.module,
            compiled.orphans,
            inputs,
            outputs,
            f"nodes {first}-{last} (C)" if first != last else f"node {first} ({nodes[0].op})",
            [compiled.outcome] * len(nodes),
            first if first == last else None,
            compiled.block_names,
            compiled.node_blocks,
        )
    ]

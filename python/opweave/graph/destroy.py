"""What in-place operations mean for a graph: the order they impose and the
storage a linker may not recycle between calls. Every linker and every mode
orders nodes with :func:`ordered_nodes`, and every entry point computes the
storage it may not recycle with :func:`no_recycling_of`.

**Order.** An op's ``destroy_map`` (``{output: [input]}``) says that it
overwrites an input; its ``view_map`` that an output shares an input's
memory. As in PyTensor's ``DestroyHandler``, the variable a node destroys is
followed through ``view_map`` to its *root*, the variable that owns the
memory; every node that reads the root or any view of it (transitively)
must run before the destroyer. Two nodes that destroy one root, a node that
destroys a variable it also reads through another input (unless the op
tolerates it: ``destroyhandler_tolerate_same`` /
``destroyhandler_tolerate_aliased``), and orderings that form a cycle raise
:class:`InconsistencyError`, naming the nodes.

**Outputs.** A graph output is read after every node has run, so a node
that destroys an output (or what an output views) would change a result
already computed: :func:`destroyed_outputs` names those outputs, and every
entry point copies each of them before its destroyer runs (a copy is a
reader, ordered first): ``opweave.function`` when it prepares the graph,
a linker object when it accepts one.

**Recycling.** PyTensor's ``infer_reuse_pattern``: the outputs, followed up
through ``view_map`` and ``destroy_map`` to the variable that owns their
memory, then down to every variable that views it; those with an owner may
not keep their storage from one call to the next, or a later call would
change a result already returned.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opweave.errors import OpweaveError
from opweave.graph.basic import Apply, Variable, io_toposort

__all__ = [
    "InconsistencyError",
    "Schedule",
    "alias_root",
    "destroy_orderings",
    "destroyed_outputs",
    "infer_reuse_pattern",
    "no_recycling_of",
    "order_nodes",
    "ordered_nodes",
    "view_root",
]

Schedule = Callable[[Any], Sequence[Apply]]


class InconsistencyError(OpweaveError, ValueError):
    """In-place operations that cannot be ordered: two destroyers of one
    variable, a destroyer reading what it destroys through another input,
    a cycle, or a schedule that breaks an ordering. ``nodes`` holds the
    nodes involved."""

    def __init__(self, message: str, nodes: Sequence[Apply] = ()) -> None:
        super().__init__(message)
        self.nodes = list(nodes)


def _map(node: Apply, name: str) -> dict[int, list[int]]:
    return getattr(node.op, name, None) or {}


def _position(variable: Variable, node: Apply) -> int:
    """The position of ``variable`` among its owner's outputs."""
    return next(k for k, output in enumerate(node.outputs) if output is variable)


def view_root(variable: Variable) -> Variable:
    """The variable whose memory ``variable`` shares through ``view_map``
    alone: what a node destroys when it destroys ``variable``."""
    while variable.owner is not None:
        sources = _map(variable.owner, "view_map").get(_position(variable, variable.owner))
        if not sources:
            break
        variable = variable.owner.inputs[sources[0]]
    return variable


def alias_root(variable: Variable) -> Variable:
    """The variable whose memory ``variable`` shares, following ``view_map``
    and ``destroy_map`` (an in-place result is its input), as PyTensor's
    ``alias_root``."""
    while variable.owner is not None:
        node = variable.owner
        index = _position(variable, node)
        sources = _map(node, "view_map").get(index) or _map(node, "destroy_map").get(index)
        if not sources:
            break
        variable = node.inputs[sources[0]]
    return variable


def _describe(node: Apply, position: dict[int, int]) -> str:
    return f"node {position[id(node)]} ({node})"


def _clients(nodes: Sequence[Apply]) -> dict[int, list[Apply]]:
    """``id(variable)`` -> the nodes that read it (each once), from the nodes."""
    clients: dict[int, list[Apply]] = {}
    for node in nodes:
        for key in dict.fromkeys(id(v) for v in node.inputs):
            clients.setdefault(key, []).append(node)
    return clients


def _views(nodes: Sequence[Apply], maps: tuple[str, ...]) -> dict[int, list[Variable]]:
    """``id(variable)`` -> the variables that view it directly through ``maps``."""
    views: dict[int, list[Variable]] = {}
    for node in nodes:
        op = node.op
        for name in maps:
            mapping = getattr(op, name, None)
            if not mapping:
                continue
            for output, inputs in mapping.items():
                for position in inputs:
                    views.setdefault(id(node.inputs[position]), []).append(node.outputs[output])
    return views


def _impact(root: Variable, views: dict[int, list[Variable]]) -> dict[int, Variable]:
    """``root`` and every variable that views it, transitively."""
    found = {id(root): root}
    stack = [root]
    while stack:
        for view in views.get(id(stack.pop()), ()):
            if id(view) not in found:
                found[id(view)] = view
                stack.append(view)
    return found


def destroy_orderings(nodes: Sequence[Apply]) -> dict[int, list[Apply]]:
    """``id(destroyer)`` -> the nodes that must run before it (beyond the data
    dependencies), for ``nodes`` in a topological order. Raises
    :class:`InconsistencyError` for two destroyers of one variable or a
    destroyer that reads what it destroys through another input."""
    destroyers = [node for node in nodes if _map(node, "destroy_map")]
    if not destroyers:
        return {}
    position = {id(node): k for k, node in enumerate(nodes)}
    clients = _clients(nodes)
    views = _views(nodes, ("view_map",))
    owner_of: dict[int, Apply] = {}  # id(root) -> its destroyer
    orderings: dict[int, list[Apply]] = {}
    for node in destroyers:
        before: dict[int, Apply] = {}
        for destroyed in sorted({i for ins in _map(node, "destroy_map").values() for i in ins}):
            root = view_root(node.inputs[destroyed])
            other = owner_of.setdefault(id(root), node)
            if other is not node:
                raise InconsistencyError(
                    f"{root} is destroyed by two nodes: {_describe(other, position)} and "
                    f"{_describe(node, position)}",
                    [other, node],
                )
            impact = _impact(root, views)
            _check_aliasing(node, destroyed, impact, position)
            for variable in impact.values():
                for client in clients.get(id(variable), ()):
                    if client is not node:
                        before[id(client)] = client
        if before:
            orderings[id(node)] = list(before.values())
    return orderings


def destroyed_outputs(nodes: Sequence[Apply], outputs: Sequence[Variable]) -> list[int]:
    """The positions of the ``outputs`` that a node of ``nodes`` overwrites
    after they are computed: an output that is, or views (``view_map``),
    the root of a variable a node destroys. A graph output is read when the
    call returns, after every node, so no ordering can save it: it must be
    copied before its destroyer runs (a copy is a reader, which the destroy
    orderings run first). A destroyer's own result is a new value, not its
    input's: it is never in the list."""
    roots: set[int] = set()
    for node in nodes:  # no Python call per node that destroys nothing
        destroy_map = getattr(node.op, "destroy_map", None)
        if destroy_map:
            for inputs in destroy_map.values():
                roots.update(id(view_root(node.inputs[k])) for k in inputs)
    if not roots:
        return []
    return [k for k, output in enumerate(outputs) if id(view_root(output)) in roots]


def _check_aliasing(
    node: Apply, destroyed: int, impact: dict[int, Variable], position: dict[int, int]
) -> None:
    """A node may not read what it destroys through another input, unless
    its op tolerates that pair of inputs."""
    target = node.inputs[destroyed]
    same = getattr(node.op, "destroyhandler_tolerate_same", ())
    aliased = getattr(node.op, "destroyhandler_tolerate_aliased", ())
    for index, variable in enumerate(node.inputs):
        if index == destroyed or id(variable) not in impact:
            continue
        if (destroyed, index) in aliased or (variable is target and (destroyed, index) in same):
            continue
        raise InconsistencyError(
            f"{_describe(node, position)} destroys its input {destroyed} ({target}) and reads "
            f"the same memory through input {index} ({variable})",
            [node],
        )


def _predecessors(nodes: Sequence[Apply], orderings: dict[int, list[Apply]]) -> list[set[int]]:
    """Per node (by position), the positions of the nodes it must follow."""
    position = {id(node): k for k, node in enumerate(nodes)}
    result: list[set[int]] = []
    for node in nodes:
        needs = {position[id(v.owner)] for v in node.inputs if id(v.owner) in position}
        needs.update(position[id(n)] for n in orderings.get(id(node), ()))
        result.append(needs)
    return result


def order_nodes(nodes: Sequence[Apply], schedule: Sequence[Apply] | None = None) -> list[Apply]:
    """``nodes`` (in a topological order) in an order that also honours the
    destroy orderings: the given ``schedule`` after checking it, or the
    topological order closest to ``nodes``. InconsistencyError when that
    cannot be done."""
    orderings = destroy_orderings(nodes)
    if schedule is None and not orderings:
        return list(nodes)
    needs = _predecessors(nodes, orderings)
    if schedule is not None:
        return _checked_schedule(nodes, list(schedule), needs)
    successors: list[list[int]] = [[] for _ in nodes]
    for k, before in enumerate(needs):
        for j in before:
            successors[j].append(k)
    waiting = [len(before) for before in needs]
    ready = [k for k, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[Apply] = []
    while ready:
        k = heapq.heappop(ready)
        order.append(nodes[k])
        for later in successors[k]:
            waiting[later] -= 1
            if waiting[later] == 0:
                heapq.heappush(ready, later)
    if len(order) < len(nodes):
        stuck = [nodes[k] for k, count in enumerate(waiting) if count > 0]
        shown = ", ".join(f"node {k} ({nodes[k]})" for k, c in enumerate(waiting) if c > 0)
        raise InconsistencyError(
            f"these nodes cannot be ordered (their destroy orderings form a cycle): {shown}",
            stuck,
        )
    return order


def _checked_schedule(
    nodes: Sequence[Apply], schedule: list[Apply], needs: list[set[int]]
) -> list[Apply]:
    position = {id(node): k for k, node in enumerate(nodes)}
    given = [id(node) for node in schedule]
    if len(given) != len(nodes) or set(given) != set(position):
        raise InconsistencyError(
            f"the schedule gives {len(given)} nodes ({len(set(given))} distinct) for a graph "
            f"of {len(nodes)}, or nodes that are not in the graph",
            [n for n in schedule if id(n) not in position],
        )
    done: set[int] = set()
    for node in schedule:
        k = position[id(node)]
        for j in needs[k]:
            if j not in done:
                raise InconsistencyError(
                    f"the schedule runs node {k} ({node}) before node {j} ({nodes[j]}), "
                    "which must run first",
                    [node, nodes[j]],
                )
        done.add(k)
    return schedule


def ordered_nodes(fgraph: Any, schedule: Schedule | None = None) -> list[Apply]:
    """The nodes of ``fgraph`` in the order a linker runs them: ``schedule(fgraph)``
    when given (checked), else a topological order honouring the destroy
    orderings. Any graph with ``inputs`` and ``outputs`` will do."""
    from opweave.graph.fg import FunctionGraph

    if schedule is None and isinstance(fgraph, FunctionGraph):
        return fgraph.toposort()  # cached there
    nodes = io_toposort(fgraph.inputs, fgraph.outputs)
    return order_nodes(nodes, None if schedule is None else list(schedule(fgraph)))


def _nodes_of(fgraph: Any) -> list[Apply]:
    """The nodes of any graph with ``inputs`` and ``outputs`` (an opweave
    FunctionGraph has them already)."""
    from opweave.graph.fg import FunctionGraph

    if isinstance(fgraph, FunctionGraph):
        return fgraph.apply_nodes
    return io_toposort(fgraph.inputs, fgraph.outputs)


def infer_reuse_pattern(fgraph: Any, outputs_to_disown: Iterable[Variable]) -> list[Variable]:
    """The variables with an owner whose storage may not be kept between
    calls so that ``outputs_to_disown`` stay the caller's: each output's
    :func:`alias_root` and every variable that views it (``view_map`` and
    ``destroy_map``, transitively), as PyTensor's ``infer_reuse_pattern``."""
    nodes = _nodes_of(fgraph)
    views = _views(nodes, ("view_map", "destroy_map"))
    found: dict[int, Variable] = {}
    for output in outputs_to_disown:
        for variable in _impact(alias_root(output), views).values():
            if variable.owner is not None:
                found.setdefault(id(variable), variable)
    return list(found.values())


def no_recycling_of(fgraph: Any, given: Any = None) -> list[Variable]:
    """What a linker bound to ``fgraph`` empties at every call: what
    :func:`infer_reuse_pattern` gives for every output of the graph (the
    results opweave returns are always the caller's), plus ``given`` (a
    linker's ``no_recycling`` argument: variables, or True for every
    variable computed by a node)."""
    found = {id(v): v for v in infer_reuse_pattern(fgraph, fgraph.outputs)}
    if given is True:
        for node in _nodes_of(fgraph):
            found.update((id(v), v) for v in node.outputs)
    elif given:
        found.update((id(v), v) for v in given if getattr(v, "owner", None) is not None)
    return list(found.values())

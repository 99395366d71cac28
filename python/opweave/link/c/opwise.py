"""The per-node linker (``Mode(linker="c|py")``): C where nodes have C code,
Python ``perform`` for the others.

A function is cut into *regions*: each maximal run of consecutive nodes (in
topological order) that have C code is compiled as one module, like a graph
of its own, in the order of the whole graph, so it runs in one C call with
its intermediate results kept in C between calls (but those the outputs
view: ``no_recycling``); each node without C code runs ``perform``. A graph whose
nodes all have C code is one region: the function is then that region's
compiled function, as in C mode. Otherwise a loop passes values between the
regions and the Python nodes (:class:`StepRunner`). A region whose C code
turns out to be missing (an op's ``c_code`` may raise NotImplementedError for
some nodes), or whose nodes do not compile together, is split in two until
each part compiles; a single node without C code runs ``perform``, and a
single node whose C code does not compile raises the CompileError.

For a single node (:meth:`OpWiseCLinker.c_thunk`, which DebugMode uses), the
node is compiled as a graph of its own whose inputs are fresh variables of
the node's variable inputs; constants stay constants. So that module depends
only on the op, the types and any scalar constants, and every graph that
applies the same op to the same types shares it through the module cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from opweave import _core
from opweave.errors import CompileError
from opweave.graph.basic import Apply, Variable, fresh_variable, is_constant, make_apply
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import NodeThunk, has_perform, perform_thunk
from opweave.link.c.hooks import get_hook
from opweave.link.c.spec import MissingCCode
from opweave.link.callable import InputBinding, compiled_function
from opweave.link.runner import NodeRunner, Step, node_steps
from opweave.link.thunk import Linker

__all__ = [
    "NodeThunk",
    "OpWiseCLinker",
    "can_run_in_c",
    "has_perform",
    "perform_thunk",
    "region_steps",
]


def _is_float16(variable: Variable) -> bool:
    return getattr(variable.type, "dtype", None) == "float16"


class OpWiseCLinker(Linker):
    """Links the nodes of a graph one run at a time (``mode="c|py"``): each
    run of consecutive nodes with C code is a compiled module, the others
    run ``perform``. With ``allow_gc`` (the default) the loop releases each
    value it passes between steps right after its last reader."""

    kind = "c|py"

    def __init__(self, allow_gc: bool | None = None, schedule: Any = None) -> None:
        self.fgraph: FunctionGraph | None = None
        self.schedule = schedule
        self.allow_gc = True if allow_gc is None else allow_gc

    def make_function(self, binding: InputBinding, single: bool) -> Any:
        """The graph node by node, in C where nodes have C code; a graph
        whose nodes all have it is one compiled module, as in C mode."""
        from opweave.link.c.basic import CLinker

        fgraph, nodes = self.bound_graph(), self.order()
        if all(can_run_in_c(node) for node in nodes):
            whole = CLinker(schedule=lambda _: nodes).accept(fgraph, self.no_recycling)
            try:
                fn = whole.make_function(binding, single)
            except (MissingCCode, CompileError):
                pass  # the regions find what runs in C, or raise a node's error
            else:
                fn.node_outcomes = [fn.cache_outcome] * len(nodes)
                return fn
        steps = region_steps(fgraph, binding.label, nodes, self.no_recycling)
        runner = NodeRunner(fgraph, binding, single, steps, self.allow_gc)
        fn = _core.Function(impl=runner.run, unpack_single=single)
        # The compiled regions' steps run their Functions (which have compile_seconds).
        fn.compiled_parts = [
            cast(_core.Function, s.run) for s in steps if hasattr(s.run, "compile_seconds")
        ]
        # Per node: "hit", "built" or "built_by_other" for compiled code (its
        # region's module), None for a node that runs perform.
        fn.node_outcomes = [outcome for step in steps for outcome in step.outcomes]
        return fn

    def c_thunk(self, node: Apply) -> NodeThunk | None:
        """A thunk running ``node``'s own compiled module, or None if the
        node has no C code (or has float16 data and an op without
        ``_f16_ok``)."""
        if not can_run_in_c(node):
            return None
        from opweave.link.c.basic import CLinker

        fgraph, positions = _single_node_graph(node)
        try:
            compiled = CLinker().accept(fgraph).compile()
        except MissingCCode:  # an op or type of the node has no C code
            return None
        binding = InputBinding(fgraph.inputs, f"the C code of {node.op}")
        function = compiled_function(compiled, binding, single=False)

        def run(values: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
            inputs = [values[p] for p in positions]
            if outputs is None:
                return function(*inputs)  # inexact values go through the fallback
            return function.call_with_outputs(inputs, outputs)

        run.function = function  # type: ignore[attr-defined]  # keeps it alive
        run.outcome = compiled.outcome  # type: ignore[attr-defined]
        return run

    def node_thunk(self, node: Apply, index: int) -> NodeThunk:
        """C if the node has it, else ``perform``; an error naming the node
        if it has neither."""
        thunk = self.c_thunk(node)
        if thunk is not None:
            return thunk
        if has_perform(node.op):
            return perform_thunk(node)
        raise MissingCCode(
            f"node {index} ({node.op}) can run neither in C (no usable C code) nor in "
            f"Python ({type(node.op).__name__} defines no perform)"
        )


def can_run_in_c(node: Apply) -> bool:
    """Whether ``node`` has C code it may use (float16 data needs ``_f16_ok``)."""
    if get_hook(node.op, "c_code") is None:
        return False
    touches_f16 = any(_is_float16(v) for v in [*node.inputs, *node.outputs])
    return not touches_f16 or bool(getattr(node.op, "_f16_ok", False))


def region_steps(
    fgraph: FunctionGraph,
    label: str,
    order: Sequence[Apply] | None = None,
    no_recycling: Sequence[Variable] = (),
) -> list[Step]:
    """The steps of ``fgraph`` in ``c|py`` mode, its nodes in ``order``
    (default: ``fgraph.toposort()``), which each region keeps; ``label``
    names the function in messages. A region empties at every call its
    intermediate results that are in ``no_recycling`` (its outputs are
    fresh at every call)."""
    nodes = fgraph.toposort() if order is None else list(order)
    numbers = {id(node): index for index, node in enumerate(nodes)}
    steps: list[Step] = []
    run: list[Apply] = []
    for node in [*nodes, None]:
        if node is not None and can_run_in_c(node):
            run.append(node)
            continue
        if run:
            steps.extend(_compiled_region(fgraph, nodes, run, numbers, label, no_recycling))
            run = []
        if node is not None:
            steps.append(_python_step(node, numbers[id(node)]))
    return steps


def _python_step(node: Apply, index: int) -> Step:
    if not has_perform(node.op):
        raise MissingCCode(
            f"node {index} ({node.op}) can run neither in C (no usable C code) nor in "
            f"Python ({type(node.op).__name__} defines no perform)"
        )
    thunk = perform_thunk(node)
    return node_steps([node], [thunk])[0]._replace(label=f"node {index} ({node.op})", node=index)


def _compiled_region(
    fgraph: FunctionGraph,
    order: list[Apply],
    nodes: list[Apply],
    numbers: dict[int, int],
    label: str,
    no_recycling: Sequence[Variable] = (),
) -> list[Step]:
    """``nodes`` (consecutive in ``order``, the order the graph's nodes run)
    as one compiled step, in that order, or split in two when they do not
    compile together."""
    from opweave.link.c.basic import CLinker

    inside = {id(v) for node in nodes for v in node.outputs}
    later = {id(v) for v in fgraph.outputs}
    for node in order[numbers[id(nodes[-1])] + 1 :]:
        later.update(id(v) for v in node.inputs)
    inputs = list(
        {
            id(v): v
            for node in nodes
            for v in node.inputs
            if id(v) not in inside and not is_constant(v)
        }.values()
    )
    outputs = [v for node in nodes for v in node.outputs if id(v) in later]
    graph_inputs = {id(v): position for position, v in enumerate(fgraph.inputs)}
    # An input of the region that is not one of the graph's is made by an earlier node.
    names = [
        f"input {graph_inputs[id(v)]}"
        if id(v) in graph_inputs
        else f"{v} (made by {cast(Apply, v.owner).op})"
        for v in inputs
    ]
    region = FunctionGraph(inputs, outputs)

    def split() -> list[Step]:
        half = len(nodes) // 2
        return [
            step
            for part in (nodes[:half], nodes[half:])
            for step in _compiled_region(fgraph, order, part, numbers, label, no_recycling)
        ]

    kept = [v for v in no_recycling if id(v) in inside]
    try:
        linker = CLinker(schedule=lambda _: nodes, numbers=numbers)
        compiled = linker.accept(region, no_recycling=kept).compile()
    except MissingCCode:
        if len(nodes) == 1:
            return [_python_step(nodes[0], numbers[id(nodes[0])])]
        return split()
    except CompileError:
        # Nodes that compile on their own may not compile together (two enums
        # defining one name differently); a single node's error is its own.
        if len(nodes) == 1:
            raise
        return split()
    binding = InputBinding(inputs, label, names=names)
    function = compiled_function(compiled, binding, single=False)
    first, last = numbers[id(nodes[0])], numbers[id(nodes[-1])]
    return [
        Step(
            function,
            [id(v) for v in inputs],
            [id(v) for v in outputs],
            f"nodes {first}-{last} (C)" if first != last else f"node {first} ({nodes[0].op})",
            [compiled.outcome] * len(nodes),
            True,
        )
    ]


def _single_node_graph(node: Apply) -> tuple[FunctionGraph, list[int]]:
    """``node`` alone, on fresh input variables (one per distinct variable
    input; constants stay constants, so ``c_code`` sees their data), and
    for each fresh input the position of the node input it stands for."""
    fresh: dict[int, Variable] = {}
    positions: list[int] = []
    for position, variable in enumerate(node.inputs):
        if id(variable) not in fresh and not is_constant(variable):
            fresh[id(variable)] = fresh_variable(variable)
            positions.append(position)
    inputs = [fresh.get(id(v), v) for v in node.inputs]
    outputs = [v.clone() for v in node.outputs]
    clone = make_apply(node.op, inputs, outputs, like=node)  # of the node's own class
    return FunctionGraph(list(fresh.values()), list(clone.outputs)), positions

"""Running a graph step by step from Python: the loop of ``mode="py"``
(every node runs ``perform``) and of DebugMode (each node run and checked
by Python code).

Why a second engine beside :class:`opweave._core.StepRunner`, the C loop of
``mode="c|py"`` (:mod:`opweave.link.c._step_table`): the StepRunner's table
calls compiled steps through their module's ABI, and is worth it where
most steps are compiled. Here every step is a Python callable, so a loop in
C would only call back into Python for each of them; DebugMode also
replaces each step with its checking runs, which a compiled table cannot
hold.

The loop is unrolled: :class:`NodeRunner` writes a Python function that
calls the steps one after the other, with each value in a local variable,
so that a call costs little more than its steps. Those locals are every
cell of the loop: each is empty at the start of every call and released at
its end, so the loop itself recycles nothing (a compiled region empties its
own ``no_recycling`` cells). The generated text holds
only names that opweave makes (``a0``, ``v3``, ``s1``); the steps, the
constants and the helpers are passed in its namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opweave._namedtuple import NamedTuple
from opweave.graph.basic import Apply, graph_variables, is_constant
from opweave.graph.fg import FunctionGraph
from opweave.link.callable import InputBinding, note_failed_node

__all__ = ["NodeRunner", "Step", "node_steps"]


class Step(NamedTuple):
    """One step of a function run node by node: one node (its ``perform``,
    or DebugMode's checked runs of it), called with the sequence of its
    input values."""

    run: Callable[[Sequence[Any]], list[Any]]  # run(input values) -> output values
    inputs: list[int]  # ids of the variables it reads
    outputs: list[int]  # ids of the variables it makes
    label: str  # "node 3 (Op)"
    node: int  # the node's number (error.failed_node)


def node_steps(nodes: Sequence[Apply], thunks: Sequence[Callable[..., list[Any]]]) -> list[Step]:
    """One step per node, running its thunk."""
    return [
        Step(
            thunk,
            [id(v) for v in node.inputs],
            [id(v) for v in node.outputs],
            f"node {index} ({node.op})",
            index,
        )
        for index, (node, thunk) in enumerate(zip(nodes, thunks, strict=True))
    ]


class NodeRunner:
    """``run`` calls the steps in order, passing values between them.
    Arguments a step reads or the function returns go through
    ``Type.filter``. An error raised by a step gets a note naming the node,
    and the node's number as ``error.failed_node``."""

    def __init__(
        self,
        fgraph: FunctionGraph,
        inputs: InputBinding,
        single: bool,
        steps: Sequence[Step],
        allow_gc: bool = False,
    ) -> None:
        self.inputs = inputs
        self.single = single
        self.steps = list(steps)
        # Free each intermediate value right after its last reader (as
        # PyTensor's allow_gc does), not only when the call returns.
        self.allow_gc = allow_gc
        # The function to call: run(*args, **kwargs).
        self.run = self._generate(fgraph)

    def _generate(self, fgraph: FunctionGraph) -> Any:
        names: dict[int, str] = {}
        namespace: dict[str, Any] = {"bind": self.inputs.bind, "filter": self.inputs.filter_one}
        for variable in graph_variables(fgraph):  # any graph's
            if is_constant(variable):
                names[id(variable)] = f"c{len(names)}"
                namespace[names[id(variable)]] = variable.data
        arguments = [f"a{p}" for p in range(len(fgraph.inputs))]
        names.update(zip((id(v) for v in fgraph.inputs), arguments, strict=True))
        unchecked = {i for step in self.steps for i in step.inputs}
        unchecked.update(id(v) for v in fgraph.outputs)  # an input returned as an output
        n = len(arguments)
        lines = [
            "def run(*args, **kwargs):",
            f"    if kwargs or len(args) != {n}:",
            "        args = bind(args, kwargs)",
        ]
        if arguments:
            lines.append(f"    {', '.join(arguments)}, = args")
        lines += [
            f"    a{p} = filter({p}, a{p})"
            for p, v in enumerate(fgraph.inputs)
            if id(v) in unchecked
        ]
        lines += ["    k = -1", "    try:", *self._step_lines(fgraph, names, namespace)]
        lines += [
            "        pass",
            "    except Exception as error:",
            "        note(error, k)",
            "        raise",
        ]
        results = [names[id(v)] for v in fgraph.outputs]
        returned = results[0] if self.single else f"[{', '.join(results)}]"
        lines.append(f"    return {returned}")
        namespace["note"] = self._note
        exec(compile("\n".join(lines) + "\n", "<opweave node loop>", "exec"), namespace)
        return namespace["run"]

    def _step_lines(
        self, fgraph: FunctionGraph, names: dict[int, str], namespace: dict[str, Any]
    ) -> list[str]:
        """The loop's body: each step's call, and with ``allow_gc`` the
        release of the values no later step reads."""
        kept = {id(v) for v in fgraph.outputs}
        last_read = {i: k for k, step in enumerate(self.steps) for i in step.inputs}
        lines = []
        for k, step in enumerate(self.steps):
            namespace[f"s{k}"] = step.run
            for i in step.outputs:
                names.setdefault(i, f"v{len(names)}")
            values = ", ".join(names[i] for i in step.inputs)
            call = f"s{k}(({values}{',' if len(step.inputs) == 1 else ''}))"
            targets = ", ".join(names[i] for i in step.outputs)
            lines += [
                f"        k = {k}",
                f"        {targets}, = {call}" if targets else f"        {call}",
            ]
            done = {names[i] for i in step.inputs if last_read[i] == k and i not in kept}
            freed = sorted(name for name in done if name.startswith("v"))
            if self.allow_gc and freed:
                lines.append(f"        {' = '.join(freed)} = None")
        return lines

    def _note(self, error: BaseException, step: int) -> None:
        if step >= 0:
            done = self.steps[step]
            note_failed_node(error, done.node, f"raised by {done.label}")

"""The per-node linker's loop, in C: a graph's steps laid out as the slot
table that :class:`opweave._core.StepRunner` runs.

A step is a compiled graph (a region's module, or the graph a module
exports for one node's code) or a node's Python ``perform``. Every variable
a step reads or makes has a slot: the call's arguments first, then each
step's outputs, then the constants Python steps read. With ``allow_gc``,
a slot is emptied right after its last reader (as PyTensor's ``cvm``
does); without it, an intermediate result keeps its storage between calls
and is offered to its node as storage at the next call (ABI v2), unless
it is in ``no_recycling``. A graph output is fresh at every call: nothing
the caller got back ever changes.

Arguments go straight to the compiled steps, whose types' ``c_extract``
checks them; those a Python step reads (or that are returned as they
are) go through ``Type.filter`` first. When an input check fails, the
arguments are converted with ``Type.filter`` and the call is run again
(unless ``trust_input``); an error raised by a node's code gets a note
naming the node, and the node's number as ``error.failed_node``.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.graph.basic import Variable, is_constant
from opweave.graph.fg import FunctionGraph
from opweave.link.callable import InputBinding, note_failed_node
from opweave.link.compiled import record_compiled

__all__ = ["TableStep", "table_function"]


class TableStep(NamedTuple):
    """One step of the table."""

    abi: Any  # the graph ABI capsule of a compiled step; None: a Python step
    run: Any  # compiled: the module holding the code; Python: run(values) -> outputs
    orphans: Sequence[Any]  # compiled: its graph's orphans
    inputs: Sequence[Variable]  # what it reads, in the order its graph takes them
    outputs: Sequence[Variable]  # what it makes
    label: str  # "node 3 (Op)", "nodes 0-5 (C)"
    outcomes: Sequence[Any]  # per node: the cache outcome of its code, None for perform
    node: int | None = None  # a one-node step: the node's number
    block_names: dict[int, str] | None = None  # compiled: run block id -> what it runs
    node_blocks: dict[int, int] | None = None  # compiled: run block id -> node number


class _Layout:
    """The slots of a table: ``slot[id(variable)]``."""

    def __init__(self, fgraph: FunctionGraph, steps: Sequence[TableStep]) -> None:
        self.slot: dict[int, int] = {id(v): k for k, v in enumerate(fgraph.inputs)}
        self.n_inputs = len(fgraph.inputs)
        self.constants: list[tuple[int, Any]] = []
        for step in steps:
            for variable in step.outputs:
                self.slot.setdefault(id(variable), len(self.slot))
        for variable in [v for s in steps for v in s.inputs] + list(fgraph.outputs):
            if id(variable) not in self.slot:
                if not is_constant(variable):
                    raise ValueError(f"{variable} is read but neither an input nor made by a step")
                self.slot[id(variable)] = len(self.slot)
                self.constants.append((self.slot[id(variable)], variable.data))

    def of(self, variables: Sequence[Variable]) -> list[int]:
        return [self.slot[id(v)] for v in variables]


class _OnError:
    """What the runner does with a call it did not complete (see the top)."""

    def __init__(self, binding: InputBinding, steps: Sequence[TableStep]) -> None:
        self.binding = binding
        self.steps = steps
        # id(variable) -> the `convert` flag of the Python step that makes it
        self.python_makers = {
            id(v): step.run.convert
            for step in steps
            if step.abi is None and hasattr(step.run, "convert")
            for v in step.outputs
        }
        self.function: Any = lambda: None  # the Function, weakly (it owns this)
        self.runner: Any = lambda: None

    def __call__(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        error: BaseException | None,
        index: int,
        block: int,
    ) -> Any:
        runner, function = self.runner(), self.function()
        if runner is None or function is None:
            raise ReferenceError("the opweave function was deleted")
        if error is None:  # keywords or a wrong count
            return self.binding.call_converted(runner.call_exact, args, kwargs, None)
        step = self.steps[index]
        if step.abi is None:
            note_failed_node(error, step.node, f"raised by {step.label}")
            raise error
        if 0 < block <= len(step.inputs):  # an input check of a compiled step
            maker = self.python_makers.get(id(step.inputs[block - 1]))
            if maker is not None and not maker[0]:
                maker[0] = True  # a Python step made it: convert its outputs from now on
            elif function.trust_input:
                raise error
            return self.binding.call_converted(runner.call_exact, args, None, error)
        where = (step.block_names or {}).get(block)
        if where:
            note_failed_node(
                error, (step.node_blocks or {}).get(block), f"raised by the C code of {where}"
            )
        raise error


def _unchecked_arguments(fgraph: FunctionGraph, steps: Sequence[TableStep]) -> list[int]:
    """The argument positions that go through ``Type.filter`` before the
    steps: those a Python step reads before any compiled step has checked
    them (a compiled step's ``c_extract`` accepts only exact values, and
    refuses the others before anything else reads them), and those
    returned as they are."""
    checked: set[int] = set()
    unchecked: set[int] = {id(v) for v in fgraph.outputs}
    for step in steps:
        read = {id(v) for v in step.inputs}
        if step.abi is None:
            unchecked.update(read - checked)
        else:
            checked.update(read)
    return [p for p, v in enumerate(fgraph.inputs) if id(v) in unchecked]


def _storage_plan(
    layout: _Layout,
    steps: Sequence[TableStep],
    outputs: list[int],
    no_recycling: Sequence[Variable],
    allow_gc: bool,
) -> tuple[list[list[int]], set[int]]:
    """Per step, the slots freed after it (with ``allow_gc``: the
    intermediates it reads last); and the slots whose storage is kept
    between calls (without ``allow_gc``: the intermediates neither returned
    nor in ``no_recycling``)."""
    returned = set(outputs)
    made = {layout.slot[id(v)] for step in steps for v in step.outputs}
    fresh = {layout.slot[id(v)] for v in no_recycling if id(v) in layout.slot}
    keep = set() if allow_gc else made - returned - fresh
    last_read = {s: k for k, step in enumerate(steps) for s in layout.of(step.inputs)}
    gc: list[list[int]] = [[] for _ in steps]
    if allow_gc:
        for slot, k in last_read.items():
            if slot in made and slot not in returned:
                gc[k].append(slot)
    return gc, keep


def _table(layout: _Layout, steps: Sequence[TableStep], keep: set[int]) -> list[tuple[Any, ...]]:
    """The StepRunner's table: per compiled step, its ABI, module, orphans,
    slots and which outputs keep their storage; per Python step, its run."""
    return [
        (
            0,
            step.abi,
            step.run,
            list(step.orphans),
            layout.of(step.inputs),
            layout.of(step.outputs),
            [slot in keep for slot in layout.of(step.outputs)],
        )
        if step.abi is not None
        else (1, step.run, layout.of(step.inputs), layout.of(step.outputs))
        for step in steps
    ]


def table_function(
    fgraph: FunctionGraph,
    binding: InputBinding,
    single: bool,
    steps: Sequence[TableStep],
    allow_gc: bool,
    no_recycling: Sequence[Variable] = (),
) -> Any:
    """A :class:`opweave._core.Function` running ``steps`` in order through
    a StepRunner (see the top)."""
    layout = _Layout(fgraph, steps)
    outputs = layout.of(fgraph.outputs)
    gc, keep = _storage_plan(layout, steps, outputs, no_recycling, allow_gc)
    filtered = _unchecked_arguments(fgraph, steps)
    table = _table(layout, steps, keep)
    on_error = _OnError(binding, steps)
    pool: dict[int, Any] = {}

    def make_runner(depth: int) -> Any:
        return _core.StepRunner(
            layout.n_inputs,
            len(layout.slot),
            table,
            outputs,
            constants=layout.constants,
            filtered=filtered,
            filter=binding.filter_one,
            gc=gc,
            keep=sorted(keep),
            on_error=on_error,
            unpack_single=single,
            on_reenter=lambda *args, **kwargs: nested(depth + 1, args, kwargs),
        )

    def nested(depth: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # A call from one of the graph's own Python steps (recursion): a runner
        # of its own, with its own compiled instances and slots.
        runner = pool.get(depth)
        if runner is None:
            runner = pool[depth] = make_runner(depth)
        return runner(*args, **kwargs)

    runner = make_runner(0)
    fn: Any = _core.Function(impl=runner, unpack_single=single)  # see compile.function.Function
    on_error.function = weakref.ref(fn)
    on_error.runner = weakref.ref(runner)
    fn.runner = runner
    return record_compiled(
        fn, outcomes=tuple(outcome for step in steps for outcome in step.outcomes)
    )

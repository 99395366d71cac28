"""The graph a module exports for one node's code (``ModuleSpec::exports``).

An export runs the node's code struct (:mod:`._node_code`) on the module's
own cell structs (:mod:`._cells`), as the graph of that node alone would,
but as one function rather than a graph struct with its step tables, so
that exporting every node of a module adds little to its compile time::

    struct <T>_state { int reached; cell o0; ...; op_<hash> op; };
    static void* <T>_create(PyObject* const* orphans);  // takes the orphans, op init
    static int <T>_run(void* graph, PyObject* const* inputs, PyObject** outputs);
    static void <T>_destroy(void* graph);
    static const opweave_graph_abi <T> = {...};

``run`` takes each input (its type's ``c_extract`` checks it), takes what
the caller offers as each output's storage, runs the node, then syncs and
stores the outputs and releases every cell, in the reverse order, whatever
failed.

Most exports have no orphans and no per-node state: those of one module
with the same cells in the same places share one ``run``
(:func:`shared_run`, named after that signature), which calls the node's
code through the export's constant state, a pointer to its struct's
``run``; the export adds only that constant and its table. So the text and
the compile time an export adds do not grow with the node's code, and a
module that exports many nodes of a few signatures compiles a few runs.

The failure ids of ``run`` are those of the one-node graph: input ``p`` is
``p + 1``, output ``j`` is ``n_inputs + 1 + j`` and the node is
``n_inputs + n_outputs + 1``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave._sha256 import sha256_hex
from opweave.link.c._node_code import OpStruct

__all__ = [
    "STATIC_DESTROY",
    "NodePlan",
    "cell_helpers",
    "export_text",
    "node_block",
    "plan_node",
    "shared_run",
    "shares_run",
]


class NodePlan(NamedTuple):
    """What a one-node graph's export runs, in C names."""

    inputs: list[str]  # per graph input, its cell struct
    outputs: list[str]  # per output, its cell struct
    orphans: list[str]  # per orphan (constants, params), its cell struct
    struct: OpStruct  # the node's code
    run_args: list[str]  # the struct's run() arguments: i<k>, r<j>, s->o<m>
    init_args: str  # its init() argument (the params), when it has state


def plan_node(
    struct: OpStruct,
    run_inputs: Sequence[Any],
    n_outputs: int,
    params: Any,
    *,
    graph: tuple[Sequence[Any], Sequence[Any]],
    orphans: Sequence[Any],
    cell_of: Mapping[int, str],
) -> NodePlan:
    """The plan of a one-node graph's export: its node's ``struct`` runs on
    ``run_inputs`` (its inputs but literals), its ``n_outputs`` outputs and
    its ``params`` (a variable, or None), each a graph input or an orphan;
    ``graph`` holds the graph's inputs and outputs, ``orphans`` its orphans
    in order, and ``cell_of`` the cell struct of each variable, by id."""
    inputs, outputs = graph
    position = {id(v): f"i{k}" for k, v in enumerate(inputs)}
    position.update((id(v), f"s->o{m}") for m, v in enumerate(orphans))
    run_args = [position[id(v)] for v in run_inputs]
    run_args += [f"r{k}" for k in range(n_outputs)]
    run_args += [] if params is None else [position[id(params)]]
    return NodePlan(
        [cell_of[id(v)] for v in inputs],
        [cell_of[id(v)] for v in outputs],
        [cell_of[id(v)] for v in orphans],
        struct,
        run_args,
        "" if params is None else position[id(params)],
    )


def node_block(plan: NodePlan) -> int:
    """The failure id of the node's own code."""
    return len(plan.inputs) + len(plan.outputs) + 1


def _create(t: str, plan: NodePlan) -> str:
    steps = [
        f"    ++s->reached;\n    if (s->o{m}.take(orphans[{m}]) != 0) {{ goto fail; }}\n"
        for m in range(len(plan.orphans))
    ]
    if plan.struct.stateful:
        steps.append(
            f"    ++s->reached;\n    if (s->op.init({plan.init_args}) != 0) {{ goto fail; }}\n"
        )
    return (
        f"static void* {t}_create(PyObject* const* orphans) {{\n"
        f"    {t}_state* s = new (std::nothrow) {t}_state();\n"
        "    if (s == NULL) { PyErr_NoMemory(); return NULL; }\n"
        "    (void)orphans;\n"
        + "".join(steps)
        + "    return s;\n"
        + ("fail:\n" if steps else "")
        + (
            "    {\n        OPWEAVE_NO_ERROR_SET\n"
            "        PyObject *type, *value, *traceback;\n"
            "        PyErr_Fetch(&type, &value, &traceback);\n"
            f"        {t}_destroy(s);\n"
            "        PyErr_Restore(type, value, traceback);\n"
            "        return NULL;\n    }\n"
            if steps
            else ""
        )
        + "}\n\n"
    )


def _destroy(t: str, plan: NodePlan) -> str:
    n = len(plan.orphans)
    lines = [
        f"static void {t}_destroy(void* graph) {{\n",
        f"    {t}_state* s = static_cast<{t}_state*>(graph);\n",
    ]
    if plan.struct.stateful:
        lines.append(f"    if (s->reached > {n}) {{ s->op.cleanup(); }}\n")
    lines += [f"    if (s->reached > {m}) {{ s->o{m}.release(); }}\n" for m in reversed(range(n))]
    lines.append("    delete s;\n}\n\n")
    return "".join(lines)


def cell_helpers(cell: str, read: bool, made: bool) -> str:
    """The functions exports call on ``cell``, for the inputs (``read``)
    and outputs (``made``) that use it: compiled once per module and cell
    struct, not inlined into every export."""
    h = f"opweave_x_{cell}"
    text = ""
    if read:
        text += (
            f"__attribute__((noinline)) static int {h}_take({cell}& c, PyObject* o) {{\n"
            "    return c.take(o);\n}\n"
            f"__attribute__((noinline)) static void {h}_release({cell}& c) {{\n"
            "    c.release();\n}\n"
        )
    if made:
        text += (
            f"__attribute__((noinline)) static int {h}_take_output({cell}& c, PyObject** slot) {{\n"
            "    return c.take_output(slot);\n}\n"
            f"__attribute__((noinline)) static int {h}_finish({cell}& c, int failure,\n"
            "                                                PyObject** slot) {\n"
            "    if (failure == 0) {\n        failure = c.sync();\n"
            "        if (failure == 0) { *slot = c.py_V; Py_INCREF(c.py_V); }\n    }\n"
            "    c.release();\n    return failure;\n}\n"
        )
    return text + "\n"


def _run(t: str, plan: NodePlan, shared: bool = False) -> str:
    n_in, n_out = len(plan.inputs), len(plan.outputs)
    cells = [f"    {c} i{k}{{}};\n" for k, c in enumerate(plan.inputs)]
    cells += [f"    {c} r{j}{{}};\n" for j, c in enumerate(plan.outputs)]
    call = (
        f"s->run({', '.join(plan.run_args)})"
        if shared
        else f"s->op.run({', '.join(plan.run_args)})"
        if plan.struct.stateful
        else f"{plan.struct.name}::run({', '.join(plan.run_args)})"
    )
    constant = "const " if shared else ""  # a shared run's state is its export's constant
    state = f"{constant}{t}_state* s = static_cast<{constant}{t}_state*>(graph)"
    do = [
        f"    if (opweave_x_{c}_take(i{k}, inputs[{k}]) != 0) "
        f"{{ failure = {k + 1}; goto undo_i{k}; }}\n"
        for k, c in enumerate(plan.inputs)
    ]
    do += [
        f"    if (opweave_x_{c}_take_output(r{j}, outputs + {j}) != 0) "
        f"{{ failure = {n_in + 1 + j}; goto undo_r{j}; }}\n"
        for j, c in enumerate(plan.outputs)
    ]
    do.append(f"    if ({call} != 0) {{ failure = {n_in + n_out + 1}; }}\n")
    undo = [
        f"undo_r{j}:\n"
        f"    if (opweave_x_{c}_finish(r{j}, failure, outputs + {j}) != 0 && failure == 0) "
        f"{{ failure = {n_in + 1 + j}; }}\n"
        for j, c in reversed(list(enumerate(plan.outputs)))
    ]
    undo += [
        f"undo_i{k}:\n    opweave_x_{c}_release(i{k});\n"
        for k, c in reversed(list(enumerate(plan.inputs)))
    ]
    return (
        f"static int {t}_run(void* graph, PyObject* const* inputs, PyObject** outputs) {{\n"
        f"    {state};\n"
        "    (void)s;\n    (void)inputs;\n    int failure = 0;\n"
        + "".join(cells)
        + "".join(do)
        + "".join(undo)
        + "    if (failure != 0) { OPWEAVE_NO_ERROR_SET }\n    return failure;\n}\n\n"
    )


# The destroy of every export whose state is a constant (see shared_run).
STATIC_DESTROY = "static void opweave_x_static_destroy(void* graph) {\n    (void)graph;\n}\n\n"


def shares_run(plan: NodePlan) -> bool:
    """Whether the export of ``plan`` uses a run shared by its signature:
    it has no orphans and no per-node state."""
    return not plan.orphans and not plan.struct.stateful


def _signature(plan: NodePlan) -> str:
    """The name of the run that exports of ``plan``'s signature share: the
    cells of its inputs and outputs, and where its struct's run() takes
    them."""
    text = "|".join([*plan.inputs, "", *plan.outputs, "", *plan.run_args])
    return f"opweave_x_run_{sha256_hex(text.encode())[:16]}"


def _arg_cells(plan: NodePlan) -> list[str]:
    """The cell struct of each argument of the struct's run()."""
    cell = {f"i{k}": c for k, c in enumerate(plan.inputs)}
    cell.update((f"r{j}", c) for j, c in enumerate(plan.outputs))
    return [cell[arg] for arg in plan.run_args]


def shared_run(plan: NodePlan) -> tuple[str, str]:
    """The name and text of the run shared by the exports of ``plan``'s
    signature (see the top): its state, a pointer to a struct's run(), and
    the function that runs it on the cells."""
    t = _signature(plan)
    args = ", ".join(f"{c}&" for c in _arg_cells(plan))
    return t, f"struct {t}_state {{\n    int (*run)({args});\n}};\n" + _run(t, plan, shared=True)


def export_text(plan: NodePlan, table: str) -> str:
    """The definitions of the export whose graph ABI table is ``table``
    (a C identifier unique in the module); one without orphans or
    per-node state is a constant state for its signature's shared run
    (:func:`shared_run`, defined before it) and its table."""
    n_in, n_out, n_orphans = len(plan.inputs), len(plan.outputs), len(plan.orphans)
    head = f"    {_core.GRAPH_LAYOUT_VERSION}, {n_in}, {n_out}, {n_orphans},\n"
    if shares_run(plan):
        t = _signature(plan)
        return (
            f"static const {t}_state {table}_state = {{&{plan.struct.name}::run}};\n"
            f"static void* {table}_create(PyObject* const* orphans) {{\n"
            f"    (void)orphans;\n    return const_cast<{t}_state*>(&{table}_state);\n}}\n"
            f"static const opweave_graph_abi {table} = {{\n{head}"
            f"    {table}_create, {t}_run, opweave_x_static_destroy,\n}};\n"
        )
    state = [f"struct {table}_state {{\n    int reached;\n"]
    state += [f"    {c} o{m};\n" for m, c in enumerate(plan.orphans)]
    if plan.struct.stateful:
        state.append(f"    {plan.struct.name} op;\n")
    state.append("};\n\n")
    return (
        "".join(state)
        + _destroy(table, plan)
        + _create(table, plan)
        + _run(table, plan)
        + f"static const opweave_graph_abi {table} = {{\n{head}"
        f"    {table}_create, {table}_run, {table}_destroy,\n}};\n"
    )

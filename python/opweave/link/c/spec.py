"""Building the module spec of a graph: asking every type and op for its C
code and laying out the steps that :func:`opweave._core.assemble_module`
turns into one C++ module (see include/opweave/module_source.hpp).

Each variable is an instance of its type's cell struct (:mod:`._cells`), in
the graph struct; each node runs its code's struct (:mod:`._node_code`).
Variables are numbered ``V1, V2, ...`` in messages (inputs first, then node
outputs in topological order, then constants). The run steps, in order:
every input is taken from the caller's arguments; every node output that is
a graph output starts as the object the caller offers in its output slot (a
preallocated output, extracted like an input), or empty when the slot is
NULL, as it is on every ordinary call (so two calls never share an output);
then the nodes run, in topological order. Undoing them syncs the outputs
back to the caller's slots. The init steps take the constants (once, when
the function is created), make the intermediate results empty (they keep
their storage between calls, as in PyTensor) and run the nodes' struct init
code; an intermediate in ``no_recycling`` is instead emptied by a run step,
before the nodes run, and released at the end of every call. A step's id
is what a failure reports: ``block_names`` says what it runs.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from opweave._namedtuple import NamedTuple
from opweave.configparser import config
from opweave.graph.basic import (
    Apply,
    Constant,
    Variable,
    graph_clients,
    graph_variables,
    is_constant,
)
from opweave.graph.fg import FunctionGraph
from opweave.graph.op import op_label
from opweave.graph.utils import not_defined_errors
from opweave.link.c._cells import Cells
from opweave.link.c._export import NodePlan
from opweave.link.c._node_code import MissingCCode, NodeArgs, NodeStructs, OpStruct, StructCode
from opweave.link.c._units import ObjectCode, plan_units, unit_spec
from opweave.link.c.hooks import as_code_list, call_optional_hook, get_hook, has_hook
from opweave.link.c.interface import CLinkerOp

__all__ = ["GraphSpec", "MissingCCode", "build_spec", "params_value"]

_NO_ORIGIN = -1
_TYPE_HOOKS = ("c_declare", "c_init", "c_extract", "c_sync")


class GraphSpec(NamedTuple):
    """The module spec (for assemble_module) plus what the linker needs to
    compile and call it."""

    spec: dict[str, Any]
    orphans: list[Any]
    origins: list[str]
    objects: list[Any]  # the ops and types, in order
    block_names: dict[int, str]  # run block id -> what it runs
    output_blocks: dict[int, int]  # run block id of an output -> its output position
    # With units: the same module as one translation unit (what a failed
    # compile of the units falls back to). Without: None.
    whole: dict[str, Any] | None = None
    # run block id of a node -> the node's number (as in block_names)
    node_blocks: dict[int, int] | None = None
    # The name each of spec["definitions"] defines (a cell or op struct).
    definition_names: tuple[str, ...] = ()
    # A graph of one node: how its export runs it (see _export.py).
    node_plan: NodePlan | None = None
    # Per orphan, where it comes from: ("const", the constant variable) or
    # ("params", the position of the first node run whose params it is).
    orphan_sources: tuple[tuple[str, Any], ...] = ()


def fail_run(block: int) -> str:
    """The ``%(fail)s`` statement of a run() block."""
    return f"OPWEAVE_FAIL({block})"


def fail_init(block: int) -> str:
    """The ``%(fail)s`` statement of a struct init block."""
    return f"OPWEAVE_FAIL_INIT({block})"


_NO_PARAMS = object()


def get_params(node: Apply, what: str) -> Any:
    """The params value of ``node``, or ``_NO_PARAMS`` if its op has none
    (no ``get_params``, or one that raises a "not defined" exception,
    ``MethodNotDefined`` or a registered one, or returns None).

    An op whose ``get_params`` returns a value must say what C type that
    value has (``params_type``); otherwise the linker could not pass it."""
    op = node.op
    hook = get_hook(op, "get_params")
    if hook is None:
        return _NO_PARAMS
    params_type = getattr(op, "params_type", None)
    if params_type is None and getattr(type(op), "get_params", None) is CLinkerOp.get_params:
        return _NO_PARAMS
    try:
        value = hook(node)
    except not_defined_errors() as error:
        if params_type is None:
            return _NO_PARAMS
        raise TypeError(
            f"{what}: {type(op).__name__} has a params_type ({params_type}) but no "
            f"params for it: {error}"
        ) from error
    if value is None:
        return _NO_PARAMS
    if params_type is None:
        raise TypeError(
            f"{what}: {type(op).__name__}.get_params returned a value but the op has no "
            "params_type; set params_type to the C type of that value (e.g. a ParamsType)"
        )
    return value


def params_value(node: Apply, what: str) -> Any:
    """The params value of ``node`` as its module takes it (filtered by its
    op's ``params_type``: an enum alias becomes its value), or None."""
    value = get_params(node, what)
    if value is _NO_PARAMS:
        return None
    op: Any = node.op  # get_params found its params_type (ops are duck-typed)
    return op.params_type.filter(value)


def _same_value(params_type: Any, a: Any, b: Any) -> bool:
    """Whether two params values can share one constant; values that cannot
    be compared (e.g. arrays in a Generic field) are taken as different."""
    if a is b:
        return True
    try:
        return bool(params_type.values_eq(a, b))
    except (TypeError, ValueError):
        return False


def _check_input(op: Any) -> bool:
    value = getattr(op, "check_input", None)
    return config.check_input if value is None else bool(value)


class _Builder:
    # id(variable) -> the nodes using it, computed when first needed
    clients: dict[int, list[tuple[Apply, int]]] | None = None

    def __init__(
        self,
        fgraph: FunctionGraph,
        compiler: Any,
        numbers: dict[int, int] | None = None,
        no_recycling: Collection[int] = (),
        order: Sequence[Apply] | None = None,
    ) -> None:
        self.fgraph = fgraph
        self.no_recycling = set(no_recycling)  # ids of variables emptied at every call
        self.numbers = numbers or {}
        self.compiler = compiler
        self.origins: list[tuple[str, str, int]] = []
        self.names: dict[int, str] = {}
        self.variables: list[Variable] = []  # in C-name order, set by name_variables
        self.literals: dict[int, str | None] = {}
        self.params: dict[int, Constant] = {}  # id(node) -> its params constant
        self.run_steps: list[tuple[int, str, str, list[int]]] = []
        self.init_steps: list[tuple[int, str, str, list[int]]] = []
        self.orphans: list[Any] = []
        self.block_names: dict[int, str] = {}
        self.output_blocks: dict[int, int] = {}
        self.node_blocks: dict[int, int] = {}
        self.next_id = len(fgraph.inputs) + 1
        self.input_ids = {id(v) for v in fgraph.inputs}
        self.nodes = list(order) if order is not None else fgraph.toposort()
        self.output_slots: dict[int, list[int]] = {}
        self.orphan_of: dict[int, int] = {}  # id(constant) -> its position in orphans
        self.node_structs: dict[int, OpStruct] = {}  # id(node) -> the struct running it
        self.cells_of: dict[int, str] = {}  # id(variable) -> its cell struct
        self.places: dict[int, int] = {}  # id(variable) -> its index among its cell's
        self.cells = Cells(self.fragment)
        self.nodes_code = NodeStructs(self.fragment, self.cells)
        for slot, variable in enumerate(fgraph.outputs):
            self.output_slots.setdefault(id(variable), []).append(slot)

    # --- helpers -------------------------------------------------------------

    def origin(self, what: str) -> int:
        self.origins.append((what, "", 1))
        return len(self.origins) - 1

    def fragment(self, text: Any, what: str) -> tuple[str, int]:
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise TypeError(f"{what} must return a string, got {type(text).__name__}")
        return (text, self.origin(what) if text else _NO_ORIGIN)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def node_label(self, index: int, node: Apply) -> str:
        """``node <n> (<op>)``: its position in the graph, or in the larger
        graph it was taken from (``numbers``)."""
        return f"node {self.numbers.get(id(node), index)} ({op_label(node.op)})"

    def describe(self, variable: Variable) -> str:
        label = f" {variable.name!r}" if variable.name else ""
        return f"variable {self.names[id(variable)]}{label} ({variable.type})"

    def check_for_variable(self, variable: Variable) -> bool:
        """Whether ``variable``'s type code checks values: when an op that
        uses or makes it has ``check_input`` on."""
        if self.clients is None:  # computed from the nodes: any graph has them
            self.clients = graph_clients(self.fgraph, self.nodes)
        users = [node.op for node, _ in self.clients.get(id(variable), [])]
        if variable.owner is not None:
            users.append(variable.owner.op)
        return any(_check_input(op) for op in users) if users else config.check_input

    # --- naming --------------------------------------------------------------

    def name_variables(self) -> None:
        order: list[Variable] = list(self.fgraph.inputs)
        for node in self.nodes:
            order.extend(node.outputs)
        for node in self.nodes:
            order.extend(v for v in node.inputs if is_constant(v))
        order.extend(v for v in self.fgraph.outputs if is_constant(v))
        for variable in order:
            if id(variable) not in self.names:
                self.names[id(variable)] = f"V{len(self.names) + 1}"
        by_id = {id(v): v for v in graph_variables(self.fgraph, self.nodes)}
        self.literals = {id(v): self._literal(v) for v in by_id.values()}
        for index, node in enumerate(self.nodes):
            constant = self.params_constant(index, node)
            if constant is not None:
                if id(constant) not in self.names:
                    self.names[id(constant)] = f"V{len(self.names) + 1}"
                    self.literals[id(constant)] = None  # params are data, never text
                    by_id[id(constant)] = constant
                self.params[id(node)] = constant
        self.variables = sorted(by_id.values(), key=lambda v: int(self.names[id(v)][1:]))

    def params_constant(self, index: int, node: Apply) -> Constant | None:
        """The constant holding ``node``'s params (shared by the nodes whose
        params are equal), or None if its op has no params."""
        value = params_value(node, self.node_label(index, node))
        if value is None:
            return None
        params_type = node.op.params_type  # type: ignore[attr-defined]
        for constant in self.params.values():
            if constant.type == params_type and _same_value(params_type, constant.data, value):
                return constant
        return Constant(params_type, value, name="params")

    def _literal(self, variable: Variable) -> str | None:
        if not is_constant(variable) or id(variable) in self.output_slots:
            return None
        if id(variable) in self.input_ids:
            return None  # a constant given as an input: the caller gives its value
        value = call_optional_hook(variable.type, "c_literal", variable.data)
        return f"({value})" if value else None

    def literal(self, variable: Variable) -> str | None:
        """The inlined C expression of a constant, or None."""
        return self.literals[id(variable)]

    # --- steps ---------------------------------------------------------------

    def place(
        self, variable: Variable, check: bool, roles: tuple[str, ...], needs: tuple = ()
    ) -> list[int]:
        """Gives ``variable`` a cell in the graph, whose steps call ``roles``;
        the ``args`` of those steps without the position:
        ``[index, n_slots, slots...]``."""
        try:
            cell = self.cells.cell(variable, check, self.describe(variable), needs)
        except not_defined_errors(NotImplementedError) as error:
            # e.g. PyTensor's ScalarType, which has no C type for float16
            raise MissingCCode(
                f"{self.describe(variable)} has no C implementation ({error!r}); its nodes run "
                "in Python"
            ) from error
        self.cells_of[id(variable)] = cell
        index = self.cells.place(cell, roles)
        self.places[id(variable)] = index
        slots = self.output_slots.get(id(variable), [])
        return [index, len(slots), *slots]

    @staticmethod
    def with_position(args: list[int], position: int) -> list[int]:
        return [args[0], position, *args[1:]]

    def add_input(self, position: int, variable: Variable) -> None:
        # Graph inputs are always checked, whatever their users' check_input:
        # the checks are what sends an inexact argument to Type.filter rather
        # than into C code that would misread it.
        args = self.place(variable, True, ("take", "drop"))
        cell = self.cells_of[id(variable)]
        self.run_steps.append(
            (position + 1, f"take_{cell}", f"drop_{cell}", self.with_position(args, position))
        )

    def add_output(self, variable: Variable) -> None:
        """An output computed by a node: its storage is what the caller
        offers in its (first) slot, taken over, or None."""
        check = self.check_for_variable(variable)
        args = self.place(variable, check, ("take_output", "finish"), ("c_init", "c_sync"))
        cell, step = self.cells_of[id(variable)], self.new_id()
        self.block_names[step] = f"output {self.describe(variable)}"
        self.output_blocks[step] = self.output_slots[id(variable)][0]
        self.run_steps.append(
            (step, f"take_output_{cell}", f"finish_{cell}", self.with_position(args, 0))
        )

    def add_struct_variable(self, variable: Variable) -> None:
        """A constant (extracted once, from the orphans) or an intermediate
        result: storage kept between calls, or, for a variable in
        ``no_recycling``, emptied before the nodes run at every call and
        released at its end."""
        check = self.check_for_variable(variable)
        constant = is_constant(variable)
        output = constant and id(variable) in self.output_slots
        roles = ("take", "drop", *(("store",) if output else ())) if constant else ("empty", "drop")
        args = self.place(variable, check, roles, () if constant else ("c_init",))
        cell = self.cells_of[id(variable)]
        position = 0
        if is_constant(variable):
            self.orphans.append(variable.data)
            self.orphan_of[id(variable)] = len(self.orphans) - 1
            position = len(self.orphans) - 1
        first = "take" if constant else "empty"
        steps = self.run_steps if id(variable) in self.no_recycling else self.init_steps
        steps.append(
            (self.new_id(), f"{first}_{cell}", f"drop_{cell}", self.with_position(args, position))
        )
        if output:
            self.run_steps.append((self.new_id(), f"store_{cell}", "", self.with_position(args, 0)))

    def add_node(self, index: int, node: Apply) -> None:
        what = self.node_label(index, node)
        params = self.params.get(id(node))
        cells = [None if self.literal(v) else self.cells_of[id(v)] for v in node.inputs]
        args = NodeArgs(
            inputs=cells,
            literals=[self.literal(v) for v in node.inputs],
            literal_types=[v.type if self.literal(v) else None for v in node.inputs],
            outputs=[self.cells_of[id(v)] for v in node.outputs],
            params=None if params is None else self.cells_of[id(params)],
            same=_first_positions(node.inputs),
        )
        struct = self.nodes_code.struct(node, args, what)
        self.node_structs[id(node)] = struct
        used = [v for v in node.inputs if not self.literal(v)] + list(node.outputs)
        if params is not None:
            used.append(params)
        indices = [self.places[id(v)] for v in used]
        step = self.new_id()
        self.block_names[step] = what
        self.node_blocks[step] = self.numbers.get(id(node), index)
        if struct.stateful:
            indices.append(self.nodes_code.place(struct))
            self.init_steps.append(
                (self.new_id(), f"init_{struct.name}", f"cleanup_{struct.name}", indices)
            )
        self.run_steps.append((step, f"node_{struct.name}", "", indices))

    # --- module-level code ---------------------------------------------------

    def objects(self) -> list[Any]:
        seen: dict[int, Any] = {}
        for variable in self.variables:
            seen.setdefault(id(variable.type), variable.type)
        for node in self.nodes:
            seen.setdefault(id(node.op), node.op)
        return list(seen.values())

    def object_code(self, obj: Any) -> ObjectCode:
        """The headers, support code and init code of an op or type."""
        kw = {"c_compiler": self.compiler}
        label = type(obj).__name__
        headers = call_optional_hook(obj, "c_headers", default=[], **kw) or []
        support = call_optional_hook(obj, "c_support_code", **kw)
        init = call_optional_hook(obj, "c_init_code", **kw)
        support = as_code_list(support, f"{label}.c_support_code")
        init = as_code_list(init, f"{label}.c_init_code")
        return ObjectCode(
            [str(h) for h in headers],
            [self.fragment(text, f"{label} c_support_code") for text in support],
            [self.fragment(text, f"{label} c_init_code") for text in init],
        )

    @staticmethod
    def table_step(
        step: tuple[int, str, str, list[int]], calls: dict[str, tuple[str, int]]
    ) -> tuple[int, str, str, list[int]]:
        """``step``, calling its struct's run() through the table when
        ``calls`` says so (see NodeStructs.table_steps)."""
        ident, run, undo, args = step
        call = calls.get(run[len("node_") :]) if run.startswith("node_") else None
        return step if call is None else (ident, call[0], undo, [*args, call[1]])

    def module_code(self, objects: list[Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The module-level parts of the spec, and with units, those of the
        same module as one translation unit."""
        code = {id(obj): self.object_code(obj) for obj in objects}
        structs = self.nodes_code.codes
        spec = _translation_unit([code[id(obj)] for obj in objects], structs)
        spec.update(
            definitions=[
                *self.cells.definitions.values(),
                *([*c.declaration, *c.body] for c in structs),
            ],
            members=[*self.cells.members(), *self.nodes_code.members()],
            step_functions=[*self.cells.step_functions(), *self.nodes_code.functions],
        )
        groups = plan_units(structs)
        if not groups:
            return spec, None
        in_units = {c.struct.name for g in groups for c in g}
        # The module keeps the cells, and the structs that no unit holds.
        own = [c for c in structs if c.struct.name not in in_units]
        kept = {id(self.cells.types[cell][0]) for cell in self.cells.definitions}
        kept.update(id(op) for c in own for op in c.ops)
        split = _translation_unit([code[id(obj)] for obj in objects if id(obj) in kept], own)
        table, calls = self.nodes_code.table_steps(in_units)
        split.update(
            definitions=[
                *self.cells.definitions.values(),
                *(
                    c.declaration if c.struct.name in in_units else [*c.declaration, *c.body]
                    for c in structs
                ),
            ],
            members=spec["members"],
            step_functions=[
                *self.cells.step_functions(),
                *(
                    f
                    for c, f in zip(structs, self.nodes_code.functions, strict=True)
                    if c.struct.name not in calls
                ),
                *table,
            ],
            run_steps=[self.table_step(step, calls) for step in self.run_steps],
            units=[
                unit_spec(
                    group,
                    self.cells.definitions,
                    lambda cell: self.cells.types[cell][0],
                    lambda obj: code[id(obj)],
                )
                for group in groups
            ],
        )
        return split, spec

    def check_c_support(self) -> None:
        for variable in self.variables:
            if self.literal(variable) is None and not all(
                has_hook(variable.type, hook) for hook in _TYPE_HOOKS
            ):
                raise MissingCCode(
                    f"type {variable.type} of {variable} has no C implementation "
                    "(it needs c_declare, c_init, c_extract and c_sync); run the graph "
                    "with mode='py'"
                )
        for index, node in enumerate(self.nodes):
            if get_hook(node.op, "c_code") is None:
                raise MissingCCode(
                    f"{self.node_label(index, node)} has no C implementation: "
                    f"{type(node.op).__name__} defines no c_code; run the graph with mode='py'"
                )

    def build(self) -> GraphSpec:
        self.name_variables()
        self.check_c_support()
        for position, variable in enumerate(self.fgraph.inputs):
            self.add_input(position, variable)
        for node in self.nodes:
            for variable in node.outputs:
                if id(variable) in self.output_slots:
                    self.add_output(variable)
        for variable in self.variables:
            if id(variable) in self.input_ids or (
                variable.owner and id(variable) in self.output_slots
            ):
                continue
            if self.literal(variable) is None:
                self.add_struct_variable(variable)
        for index, node in enumerate(self.nodes):
            self.add_node(index, node)
        objects = self.objects()
        spec, whole = self.module_code(objects)
        spec.setdefault("run_steps", self.run_steps)
        common = {
            "origins": self.origins,
            "init_steps": self.init_steps,
            "n_inputs": len(self.fgraph.inputs),
            "n_outputs": len(self.fgraph.outputs),
            "n_orphans": len(self.orphans),
        }
        spec.update(common)
        if whole is not None:
            whole.update(common, run_steps=self.run_steps)
        origins = [o[0] for o in self.origins]
        return GraphSpec(
            spec,
            self.orphans,
            origins,
            objects,
            self.block_names,
            self.output_blocks,
            whole,
            self.node_blocks,
            (*self.cells.definitions, *(c.struct.name for c in self.nodes_code.codes)),
            self.node_plan() if len(self.nodes) == 1 else None,
            self.orphan_sources(),
        )

    def orphan_sources(self) -> tuple[tuple[str, Any], ...]:
        """Where each orphan comes from (GraphSpec.orphan_sources)."""
        params_of: dict[int, int] = {}
        for index, node in enumerate(self.nodes):
            constant = self.params.get(id(node))
            if constant is not None:
                params_of.setdefault(id(constant), index)
        by_id = {id(v): v for v in self.variables}
        placed = sorted(self.orphan_of.items(), key=lambda item: item[1])
        return tuple(
            ("params", params_of[i]) if i in params_of else ("const", by_id[i]) for i, _ in placed
        )

    def node_plan(self) -> NodePlan:
        """How the export of this one-node graph runs it (see _export.py)."""
        node = self.nodes[0]
        inputs = {id(v): k for k, v in enumerate(self.fgraph.inputs)}

        def value(variable: Variable) -> str:
            if id(variable) in inputs:
                return f"i{inputs[id(variable)]}"
            return f"s->o{self.orphan_of[id(variable)]}"

        params = self.params.get(id(node))
        run_args = [value(v) for v in node.inputs if not self.literal(v)]
        run_args += [f"r{k}" for k in range(len(node.outputs))]
        run_args += [] if params is None else [value(params)]
        orphans = sorted(self.orphan_of.items(), key=lambda item: item[1])
        by_id = {id(v): v for v in self.variables}
        return NodePlan(
            [self.cells_of[id(v)] for v in self.fgraph.inputs],
            [self.cells_of[id(v)] for v in self.fgraph.outputs],
            [self.cells_of[id(by_id[i])] for i, _ in orphans],
            self.node_structs[id(node)],
            run_args,
            "" if params is None else value(params),
        )


def _translation_unit(parts: list[ObjectCode], structs: list[StructCode]) -> dict[str, Any]:
    """The headers, support code and init code of a translation unit that
    holds the code of ``structs`` and uses the ops and types of ``parts``:
    each node's apply-specific support code is where its code is, and its
    ``c_init_code_apply`` runs there (PyTensor's contract, see
    docs/op-authors.md)."""
    return {
        "headers": [h for part in parts for h in part.headers],
        "support_code": [
            *(s for part in parts for s in part.support),
            *(c.support_apply for c in structs),
        ],
        "init_code": [i for part in parts for i in part.init],
        "init_code_apply": [c.init_apply for c in structs],
    }


def _first_positions(variables: Sequence[Variable]) -> list[int]:
    """Per variable, the position where the same variable first appears."""
    first: dict[int, int] = {}
    return [first.setdefault(id(v), k) for k, v in enumerate(variables)]


def build_spec(
    fgraph: FunctionGraph,
    compiler: Any = None,
    numbers: dict[int, int] | None = None,
    no_recycling: Collection[int] = (),
    order: Sequence[Apply] | None = None,
) -> GraphSpec:
    """The module spec of ``fgraph``. Raises :class:`MissingCCode` if an op or
    type has no C code. ``numbers`` (``id(node)`` -> a number) names nodes in
    messages by their position in a larger graph, for a part of it.
    ``no_recycling``: the ids of the intermediate results emptied at every
    call (the others keep their storage between calls); ``order``: the
    nodes in the order they run (default: ``fgraph.toposort()``)."""
    return _Builder(fgraph, compiler, numbers, no_recycling, order).build()

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

from opweave import _core
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
from opweave.link.c._cells import Cells, StepFields
from opweave.link.c._export import NodePlan, plan_node
from opweave.link.c._graph_records import GraphSpec
from opweave.link.c._module_code import module_code
from opweave.link.c._node_code import (
    MissingCCode,
    NodeArgs,
    NodeStructs,
    OpStruct,
    check_c_support,
    first_positions,
)
from opweave.link.c._node_params import params_value, same_params
from opweave.link.c.hooks import call_optional_hook, checks_input
from opweave.link.c.kernels import code_op

__all__ = ["GraphSpec", "MissingCCode", "build_spec", "params_value"]

_NO_ORIGIN = -1


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
        self.origins: list[tuple[str, str, int]] = []  # _core.CodeOrigin's fields
        self.names: dict[int, str] = {}
        self.variables: list[Variable] = []  # in C-name order, set by name_variables
        self.literals: dict[int, str | None] = {}
        self.params: dict[int, Constant] = {}  # id(node) -> its params constant
        self.run_steps: list[StepFields] = []
        self.init_steps: list[StepFields] = []
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
        users = [code_op(node) for node, _ in self.clients.get(id(variable), [])]
        if variable.owner is not None:
            users.append(code_op(variable.owner))
        return any(checks_input(op) for op in users) if users else config.check_input

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
        params_type = code_op(node).params_type
        for constant in self.params.values():
            if constant.type == params_type and same_params(params_type, constant.data, value):
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
            store = (self.new_id(), f"store_{cell}", "", self.with_position(args, 0))
            self.run_steps.append(store)

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
            same=first_positions(node.inputs),
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
            op = code_op(node)
            seen.setdefault(id(op), op)
        return list(seen.values())

    def build(self) -> GraphSpec:
        self.name_variables()
        check_c_support(
            [v for v in self.variables if self.literal(v) is None], self.nodes, self.node_label
        )
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
        parts, whole_parts, unit_plan = module_code(
            objects,
            self.run_steps,
            self.compiler,
            self.fragment,
            self.cells,
            self.nodes_code,
        )
        common: dict[str, Any] = {
            "origins": self.origins,
            "init_steps": self.init_steps,
            "n_inputs": len(self.fgraph.inputs),
            "n_outputs": len(self.fgraph.outputs),
            "n_orphans": len(self.orphans),
        }
        spec = _core.ModuleSpec(**{"run_steps": self.run_steps, **parts, **common})
        whole = None
        if whole_parts is not None:
            whole = _core.ModuleSpec(**whole_parts, **common, run_steps=self.run_steps)
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
            unit_plan,
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
        by_id = {id(v): v for v in self.variables}
        placed = sorted(self.orphan_of.items(), key=lambda item: item[1])
        return plan_node(
            self.node_structs[id(node)],
            [v for v in node.inputs if not self.literal(v)],
            len(node.outputs),
            self.params.get(id(node)),
            graph=(self.fgraph.inputs, self.fgraph.outputs),
            orphans=[by_id[i] for i, _ in placed],
            cell_of=self.cells_of,
        )


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

"""Building the module spec of a graph: asking every type and op for its C
code and laying out the blocks that :func:`opweave._core.assemble_module`
turns into one C++ module (see include/opweave/module_source.hpp).

Variables get the C names ``V1, V2, ...`` (inputs first, then node outputs in
topological order, then constants); ``py_V<n>`` is the Python object.
Inputs, outputs and the code of each node live in run(): inputs are extracted
from ``__inputs`` on each call. An output starts as the object the caller
offers in its ``__outputs`` slot (a preallocated output, extracted like an
input), or empty when the slot is NULL, as it is on every ordinary call (so
two calls never share an output); it is synced back to ``__outputs``. Constants and
intermediate results live in the struct: constants are extracted once when
the function is created, and intermediates keep their storage between calls,
as in PyTensor.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from opweave.configparser import config
from opweave.graph.basic import Apply, Constant, Variable
from opweave.graph.fg import FunctionGraph
from opweave.graph.utils import MethodNotDefined
from opweave.link.c.hooks import as_code_list, call_hook, get_hook, has_hook
from opweave.link.c.interface import CLinkerOp

__all__ = ["GraphSpec", "MissingCCode", "build_spec"]

_NO_ORIGIN = -1
_TYPE_HOOKS = ("c_declare", "c_init", "c_extract", "c_sync")


class MissingCCode(NotImplementedError):
    """An op or type of the graph has no C implementation."""


class GraphSpec(NamedTuple):
    """The module spec (for assemble_module) plus what the linker needs to
    compile and call it."""

    spec: dict[str, Any]
    orphans: list[Any]
    origins: list[str]
    objects: list[Any]  # the ops and types, in order
    block_names: dict[int, str]  # run block id -> what it runs
    output_blocks: dict[int, int]  # run block id of an output -> its output position


def fail_run(block: int) -> str:
    """The ``%(fail)s`` statement of a run() block."""
    return f"OPWEAVE_FAIL({block})"


def fail_init(block: int) -> str:
    """The ``%(fail)s`` statement of a struct init block."""
    return f"OPWEAVE_FAIL_INIT({block})"


_NO_PARAMS = object()


def get_params(node: Apply, what: str) -> Any:
    """The params value of ``node``, or ``_NO_PARAMS`` if its op has none
    (no ``get_params``, or one that raises MethodNotDefined or returns None).

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
    except MethodNotDefined as error:
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
    def __init__(self, fgraph: FunctionGraph, compiler: Any) -> None:
        self.fgraph = fgraph
        self.compiler = compiler
        self.origins: list[tuple[str, str, int]] = []
        self.names: dict[int, str] = {}
        self.variables: list[Variable] = []  # in C-name order, set by name_variables
        self.literals: dict[int, str | None] = {}
        self.params: dict[int, Constant] = {}  # id(node) -> its params constant
        self.run_blocks: list[tuple[Any, ...]] = []
        self.struct_blocks: list[tuple[Any, ...]] = []
        self.orphans: list[Any] = []
        self.block_names: dict[int, str] = {}
        self.output_blocks: dict[int, int] = {}
        self.next_id = len(fgraph.inputs) + 1
        self.nodes = fgraph.toposort()
        self.output_slots: dict[int, list[int]] = {}
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

    def describe(self, variable: Variable) -> str:
        label = f" {variable.name!r}" if variable.name else ""
        return f"variable {self.names[id(variable)]}{label} ({variable.type})"

    def type_sub(self, name: str, block: int, fail: str) -> dict[str, str]:
        return {"fail": fail, "id": str(block), "failure_var": "__failure", "py_ptr": f"py_{name}"}

    def check_for_variable(self, variable: Variable) -> bool:
        users = [node.op for node, _ in self.fgraph.clients.get(id(variable), [])]
        if variable.owner is not None:
            users.append(variable.owner.op)
        return any(_check_input(op) for op in users) if users else config.check_input

    def type_code(self, variable: Variable, hook: str, sub: dict[str, str], **kw: Any) -> tuple:
        name = self.names[id(variable)]
        text = call_hook(variable.type, hook, name, sub, default="", **kw)
        return self.fragment(text, f"{self.describe(variable)} {hook}")

    @staticmethod
    def join(*fragments: tuple[str, int]) -> list[tuple[str, int]]:
        return [f for f in fragments if f[0]]

    # --- naming --------------------------------------------------------------

    def name_variables(self) -> None:
        order: list[Variable] = list(self.fgraph.inputs)
        for node in self.nodes:
            order.extend(node.outputs)
        for node in self.nodes:
            order.extend(v for v in node.inputs if isinstance(v, Constant))
        order.extend(v for v in self.fgraph.outputs if isinstance(v, Constant))
        for variable in order:
            if id(variable) not in self.names:
                self.names[id(variable)] = f"V{len(self.names) + 1}"
        by_id = {id(v): v for v in [*self.fgraph.variables, *self.fgraph.inputs]}
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
        value = get_params(node, f"node {index} ({node.op})")
        if value is _NO_PARAMS:
            return None
        params_type = node.op.params_type
        value = params_type.filter(value)  # e.g. an enum alias becomes its value
        for constant in self.params.values():
            if constant.type == params_type and _same_value(params_type, constant.data, value):
                return constant
        return Constant(params_type, value, name="params")

    def _literal(self, variable: Variable) -> str | None:
        if not isinstance(variable, Constant) or id(variable) in self.output_slots:
            return None
        value = call_hook(variable.type, "c_literal", variable.data)
        return f"({value})" if value else None

    def literal(self, variable: Variable) -> str | None:
        """The inlined C expression of a constant, or None."""
        return self.literals[id(variable)]

    # --- blocks --------------------------------------------------------------

    def sync_outputs(self, variable: Variable) -> str:
        """Stores ``variable`` in its output slots, releasing whatever the
        caller offered there that the graph did not use."""
        name = self.names[id(variable)]
        return "".join(
            f"Py_XDECREF(__outputs[{slot}]);\n__outputs[{slot}] = py_{name};\n"
            f"Py_INCREF(py_{name});\n"
            for slot in self.output_slots.get(id(variable), [])
        )

    def add_input(self, position: int, variable: Variable) -> None:
        name, block = self.names[id(variable)], position + 1
        sub = self.type_sub(name, block, fail_run(block))
        # Graph inputs are always checked, whatever their users' check_input:
        # the checks are what sends an inexact argument to Type.filter rather
        # than into C code that would misread it.
        declare = self.type_code(variable, "c_declare", sub, check_input=True)
        extract = self.type_code(variable, "c_extract", sub, check_input=True)
        cleanup = self.type_code(variable, "c_cleanup", sub)
        sync = self.sync_outputs(variable)
        self.run_blocks.append(
            (
                block,
                (f"PyObject* py_{name};\n" + declare[0], declare[1]),
                (
                    f"py_{name} = __inputs[{position}];\nPy_INCREF(py_{name});\n" + extract[0],
                    extract[1],
                ),
                (
                    (f"if (!__failure) {{\n{sync}}}\n" if sync else "")
                    + cleanup[0]
                    + f"Py_XDECREF(py_{name});\n",
                    cleanup[1],
                ),
            )
        )

    def add_output(self, variable: Variable) -> None:
        """An output computed by a node: its storage is what the caller
        offers in its (first) slot, taken over, or None."""
        name, block = self.names[id(variable)], self.new_id()
        self.block_names[block] = f"output {self.describe(variable)}"
        sub = self.type_sub(name, block, fail_run(block))
        check = self.check_for_variable(variable)
        declare = self.type_code(variable, "c_declare", sub, check_input=check)
        init = self.type_code(variable, "c_init", sub)
        extract = self.type_code(variable, "c_extract", sub, check_input=check)
        sync = self.type_code(variable, "c_sync", sub)
        cleanup = self.type_code(variable, "c_cleanup", sub)
        slot = self.output_slots[id(variable)][0]
        self.output_blocks[block] = slot
        take = (
            f"py_{name} = __outputs[{slot}];\n__outputs[{slot}] = NULL;\n"
            f"if (py_{name} == NULL) {{\npy_{name} = Py_None;\nPy_INCREF(py_{name});\n}}\n"
        )
        self.run_blocks.append(
            (
                block,
                (f"PyObject* py_{name};\n" + declare[0], declare[1]),
                (
                    f"{take}if (py_{name} == Py_None) {{\n{init[0]}\n}} else {{\n"
                    f"{extract[0]}\n}}\n",
                    extract[1] if extract[0] else init[1],
                ),
                (
                    f"if (!__failure) {{\n{sync[0]}\n{self.sync_outputs(variable)}}}\n{cleanup[0]}"
                    f"Py_XDECREF(py_{name});\n",
                    sync[1] if sync[0] else cleanup[1],
                ),
            )
        )

    def add_struct_variable(self, variable: Variable) -> None:
        """A constant (extracted once, from the orphans) or an intermediate
        result (storage kept between calls)."""
        name, block = self.names[id(variable)], self.new_id()
        sub = self.type_sub(name, block, fail_init(block))
        check = self.check_for_variable(variable)
        declare = self.type_code(variable, "c_declare", sub, check_input=check)
        if isinstance(variable, Constant):
            self.orphans.append(variable.data)
            setup = f"py_{name} = __orphans[{len(self.orphans) - 1}];\nPy_INCREF(py_{name});\n"
            body = self.type_code(variable, "c_extract", sub, check_input=check)
        else:
            setup = f"py_{name} = Py_None;\nPy_INCREF(py_{name});\n"
            body = self.type_code(variable, "c_init", sub)
        cleanup = self.type_code(variable, "c_cleanup", sub)
        self.struct_blocks.append(
            (
                block,
                (f"PyObject* py_{name};\n" + declare[0], declare[1]),
                (setup + body[0], body[1]),
                (cleanup[0] + f"Py_XDECREF(py_{name});\n", cleanup[1]),
            )
        )
        if isinstance(variable, Constant) and id(variable) in self.output_slots:
            self.run_blocks.append(
                (self.new_id(), ("", -1), (self.sync_outputs(variable), -1), ("", -1))
            )

    def add_node(self, index: int, node: Apply) -> None:
        op, name = node.op, f"node_{index}"
        what = f"node {index} ({op})"
        inputs = [self.literal(v) or self.names[id(v)] for v in node.inputs]
        outputs = [self.names[id(v)] for v in node.outputs]
        block = self.new_id()
        self.block_names[block] = what
        sub = {"fail": fail_run(block), "id": str(block), "failure_var": "__failure"}
        params = self.params.get(id(node))
        if params is not None:
            sub["params"] = self.names[id(params)]
        try:
            code = op.c_code(node, name, inputs, outputs, sub)
        except (NotImplementedError, MethodNotDefined) as error:
            raise MissingCCode(
                f"{what} has no C implementation ({error}); run the graph with "
                f"mode='py', or give {type(op).__name__} a c_code method"
            ) from error
        cleanup = call_hook(op, "c_code_cleanup", node, name, inputs, outputs, sub, default="")
        self.run_blocks.append(
            (
                block,
                ("", _NO_ORIGIN),
                self.fragment(code, f"{what} c_code"),
                self.fragment(cleanup, f"{what} c_code_cleanup"),
            )
        )
        struct_id = self.new_id()
        struct_sub = {"fail": fail_init(struct_id), "id": str(struct_id)}
        if params is not None:
            struct_sub["params"] = sub["params"]
        members = call_hook(op, "c_support_code_struct", node, name, default="")
        init = call_hook(op, "c_init_code_struct", node, name, struct_sub, default="")
        release = call_hook(op, "c_cleanup_code_struct", node, name, default="")
        if members or init or release:
            self.struct_blocks.append(
                (
                    struct_id,
                    self.fragment(members, f"{what} c_support_code_struct"),
                    self.fragment(init, f"{what} c_init_code_struct"),
                    self.fragment(release, f"{what} c_cleanup_code_struct"),
                )
            )

    # --- module-level code ---------------------------------------------------

    def objects(self) -> list[Any]:
        seen: dict[int, Any] = {}
        for variable in self.variables:
            seen.setdefault(id(variable.type), variable.type)
        for node in self.nodes:
            seen.setdefault(id(node.op), node.op)
        return list(seen.values())

    def module_code(self, objects: list[Any]) -> dict[str, Any]:
        kw = {"c_compiler": self.compiler}
        headers: list[str] = []
        support: list[tuple[str, int]] = []
        init: list[tuple[str, int]] = []
        for obj in objects:
            label = type(obj).__name__
            headers.extend(call_hook(obj, "c_headers", default=[], **kw) or [])
            for text in as_code_list(
                call_hook(obj, "c_support_code", **kw), f"{label}.c_support_code"
            ):
                support.append(self.fragment(text, f"{label} c_support_code"))
            for text in as_code_list(call_hook(obj, "c_init_code", **kw), f"{label}.c_init_code"):
                init.append(self.fragment(text, f"{label} c_init_code"))
        init_apply: list[tuple[str, int]] = []
        for index, node in enumerate(self.nodes):
            what, name = f"node {index} ({node.op})", f"node_{index}"
            text = call_hook(node.op, "c_support_code_apply", node, name, default="")
            support.append(self.fragment(text, f"{what} c_support_code_apply"))
            text = call_hook(node.op, "c_init_code_apply", node, name, default="")
            init_apply.append(self.fragment(text, f"{what} c_init_code_apply"))
        return {
            "headers": [str(h) for h in headers],
            "support_code": support,
            "init_code": init,
            "init_code_apply": init_apply,
        }

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
                    f"node {index} ({node.op}) has no C implementation: "
                    f"{type(node.op).__name__} defines no c_code; run the graph with mode='py'"
                )

    def build(self) -> GraphSpec:
        self.name_variables()
        self.check_c_support()
        for position, variable in enumerate(self.fgraph.inputs):
            self.add_input(position, variable)
        inputs = {id(v) for v in self.fgraph.inputs}
        for node in self.nodes:
            for variable in node.outputs:
                if id(variable) in self.output_slots:
                    self.add_output(variable)
        for variable in self.variables:
            if id(variable) in inputs or (variable.owner and id(variable) in self.output_slots):
                continue
            if self.literal(variable) is None:
                self.add_struct_variable(variable)
        for index, node in enumerate(self.nodes):
            self.add_node(index, node)
        objects = self.objects()
        spec = self.module_code(objects)
        spec.update(
            origins=self.origins,
            struct_blocks=self.struct_blocks,
            run_blocks=self.run_blocks,
            n_inputs=len(self.fgraph.inputs),
            n_outputs=len(self.fgraph.outputs),
            n_orphans=len(self.orphans),
        )
        origins = [o[0] for o in self.origins]
        return GraphSpec(spec, self.orphans, origins, objects, self.block_names, self.output_blocks)


def build_spec(fgraph: FunctionGraph, compiler: Any = None) -> GraphSpec:
    """The module spec of ``fgraph``. Raises :class:`MissingCCode` if an op or
    type has no C code."""
    return _Builder(fgraph, compiler).build()

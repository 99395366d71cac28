"""Node code: one C++ struct per distinct node code.

A node's op is asked for its code under names that do not depend on where
the node sits in the graph: inputs ``V_in0, V_in1, ...`` (or a constant's
literal), outputs ``V_out0, ...``, params ``V_params``, and the node name
``opweave_node`` (or, when the op's code uses the name, ``node_<hash>`` of
that code, so that two different codes never define the same names). The
code becomes a struct::

    struct op_<hash> {
        <c_support_code_struct>          // per-node state, if any
        int init(cell_P& params);        // c_init_code_struct
        void cleanup();                  // c_cleanup_code_struct
        int run(cell_A& in0, ..., cell_Z& out0, ..., cell_P& params);
    };
    int op_<hash>::run(...) { ... }      // out of line: it may go to a unit

``run`` copies each cell's C value into a local declared by the variable's
type, runs ``c_code`` then ``c_code_cleanup``, and copies the outputs back.
Nodes whose code is identical share the struct; each keeps its own instance
when the op has struct-level state. Without state, ``run`` is static.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from opweave._namedtuple import NamedTuple
from opweave.graph.basic import Apply, Variable
from opweave.graph.utils import not_defined_errors
from opweave.link.c._cells import Cells, Fragment, Fragmenter, code_hash, step_function
from opweave.link.c.hooks import call_hook, call_optional_hook, get_hook, has_hook
from opweave.link.c.kernels import code_op

__all__ = ["MissingCCode", "NodeStructs", "OpStruct", "check_c_support", "first_positions"]

PLACEHOLDER = "opweave_node"
PARAMS = "V_params"
_SUB = {"fail": "OPWEAVE_FAIL(1)", "id": "1", "failure_var": "__failure"}
_STRUCT_SUB = {"fail": "OPWEAVE_FAIL_INIT(1)", "id": "1"}
_NODE_HOOKS = (
    "c_code",
    "c_code_cleanup",
    "c_support_code_struct",
    "c_init_code_struct",
    "c_cleanup_code_struct",
    "c_support_code_apply",
    "c_init_code_apply",
)


class MissingCCode(NotImplementedError):
    """An op or type of the graph has no C implementation."""


# What a MissingCCode message suggests: the modes that run such a node.
RUN_IN_PYTHON = (
    "mode='FAST_RUN' (the default) runs it in Python and the other nodes in C; "
    "mode='py' runs every node in Python"
)


class OpStruct(NamedTuple):
    """The struct running a node's code."""

    name: str
    stateful: bool  # has struct-level state: one instance per node


class StructCode(NamedTuple):
    """The text of an op struct, in the two parts a compile unit splits."""

    struct: OpStruct
    declaration: list[Fragment]  # the struct, run() declared
    body: list[Fragment]  # run() defined
    cells: list[str]  # the cell structs run() takes, in order
    ops: list[Any]  # the ops whose nodes run it (their support code goes with it)
    support_apply: Fragment  # the node's c_support_code_apply
    init_apply: Fragment  # the node's c_init_code_apply


class NodeArgs(NamedTuple):
    """What a node's run() is given."""

    inputs: Sequence[str | None]  # per input: its cell, or None for a literal
    literals: Sequence[str | None]  # per input: its literal, or None
    outputs: Sequence[str]  # per output: its cell
    params: str | None  # the params' cell
    # per input: the first position of the same variable (its own if first);
    # an input is named after that position, and the op's code may replace
    # its value (``Py_XDECREF(x); x = copy;``), which goes back to its cell
    same: Sequence[int] = ()
    # per input: the type of a literal input (declared as a local V_in<k> set
    # to the literal, since ops may paste an input's name into identifiers,
    # as PyTensor's ScalarLoop does), or None
    literal_types: Sequence[Any] = ()


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{what} must return a string, got {type(value).__name__}")
    return value


def first_positions(variables: Sequence[Any]) -> list[int]:
    """Per variable, the position where the same variable first appears."""
    first: dict[int, int] = {}
    return [first.setdefault(id(v), k) for k, v in enumerate(variables)]


class NodeStructs:
    """The op structs of one module, each defined once, and the module-level
    code of each (apply-specific support and init code)."""

    def __init__(self, fragment: Fragmenter, cells: Cells) -> None:
        self.fragment = fragment
        self.cells = cells
        self.counts: dict[str, int] = {}  # stateful struct -> instances in the graph
        self.functions: list[list[Fragment]] = []  # the step functions
        self.structs: dict[str, OpStruct] = {}  # key text -> struct
        self.codes: list[StructCode] = []  # one per struct, in order of first use
        self.order: dict[str, int] = {}  # struct name -> its index in codes
        self.op_ids: dict[str, set[int]] = {}  # struct name -> ids of the ops in its code

    def hook_texts(self, node: Apply, name: str, args: NodeArgs, what: str) -> list[str]:
        """The texts of the node hooks, under node name ``name``."""
        op: Any = code_op(node)  # its C hooks are looked up by name (ops are duck-typed)
        # The same variable twice among the inputs has one name, that of its
        # first position (PyTensor's Elemwise asserts one name per variable).
        inputs = [f"V_in{first}" for first in args.same]
        outputs = [f"V_out{k}" for k in range(len(args.outputs))]
        sub, struct_sub = dict(_SUB), dict(_STRUCT_SUB)
        if args.params is not None:
            sub["params"] = struct_sub["params"] = PARAMS
        try:
            code = op.c_code(node, name, inputs, outputs, sub)
        except not_defined_errors(NotImplementedError) as error:
            raise MissingCCode(
                f"{what} has no C implementation ({error}); {RUN_IN_PYTHON}, or give "
                f"{type(op).__name__} a c_code method"
            ) from error
        calls: list[Callable[[], Any]] = [
            lambda: code,
            lambda: call_optional_hook(op, "c_code_cleanup", node, name, inputs, outputs, sub),
            lambda: call_optional_hook(op, "c_support_code_struct", node, name),
            lambda: call_optional_hook(op, "c_init_code_struct", node, name, struct_sub),
            lambda: call_optional_hook(op, "c_cleanup_code_struct", node, name),
            lambda: call_optional_hook(op, "c_support_code_apply", node, name),
            lambda: call_optional_hook(op, "c_init_code_apply", node, name),
        ]
        return [
            _text(call(), f"{what} {hook}") for hook, call in zip(_NODE_HOOKS, calls, strict=True)
        ]

    def struct(self, node: Apply, args: NodeArgs, what: str) -> OpStruct:
        """The struct for ``node`` (``what`` names it in errors), defined on
        first use."""
        cells = [
            c or f"literal {literal}" for c, literal in zip(args.inputs, args.literals, strict=True)
        ] + [*args.outputs, args.params or ""]
        texts = self.hook_texts(node, PLACEHOLDER, args, what)
        if any(PLACEHOLDER in text for text in texts):
            texts = self.hook_texts(node, f"node_{code_hash(*texts, *cells)}", args, what)
        key = "\0".join([*texts, *cells])
        found = self.structs.get(key)
        op = code_op(node)
        if found is not None:
            op_ids = self.op_ids[found.name]
            if id(op) not in op_ids:
                op_ids.add(id(op))
                self.codes[self.order[found.name]].ops.append(op)
            return found
        found = OpStruct(f"op_{code_hash(*texts, *cells)}", any(texts[2:5]))
        self.structs[key] = found
        parts = [
            self.fragment(text, f"{what} {hook}")
            for hook, text in zip(_NODE_HOOKS, texts, strict=True)
        ]
        declaration, body = self._define(found, args, parts)
        used = [c for c in [*args.inputs, *args.outputs, args.params] if c is not None]
        self.order[found.name] = len(self.codes)
        self.op_ids[found.name] = {id(op)}
        self.codes.append(StructCode(found, declaration, body, used, [op], parts[5], parts[6]))
        self.functions.append([(self._step_functions(found, args), -1)])
        return found

    def place(self, struct: OpStruct) -> int:
        """A new instance of a stateful ``struct`` in the graph (its index in
        the array ``<name>_v``)."""
        index = self.counts.get(struct.name, 0)
        self.counts[struct.name] = index + 1
        return index

    def table_steps(
        self, names: set[str]
    ) -> tuple[list[list[Fragment]], str, dict[str, tuple[str, int]]]:
        """Step functions for the stateless structs in ``names`` (those whose
        run() is in a unit): one per run() signature, calling run() through
        the table ``opweave_node_fns``, so that the module's own code does
        not grow with them, nor names them. Returns the functions (after the
        table's declaration), the table's definition, and per struct its
        step function and index in the table (the step's last argument)."""
        table: list[str] = []
        shared: dict[str, str] = {}  # signature -> step function
        functions: list[list[Fragment]] = []
        calls: dict[str, tuple[str, int]] = {}
        for code in self.codes:
            if code.struct.name not in names or code.struct.stateful:
                continue
            signature = ", ".join(f"{cell}&" for cell in code.cells)
            name = shared.get(signature)
            if name is None:
                name = shared[signature] = f"node_sig_{code_hash(signature)}"
                n = len(code.cells)
                values = ", ".join(f"g->{cell}_v[a[{k}]]" for k, cell in enumerate(code.cells))
                body = (
                    f"(void)v;\n(void)o;\ntypedef int (*run_fn)({signature});\n"
                    f"return reinterpret_cast<run_fn>(opweave_node_fns[a[{n}]])({values});\n"
                )
                functions.append([(step_function(name, body), -1)])
            calls[code.struct.name] = (name, len(table))
            table.append(f"reinterpret_cast<opweave_any_fn>(&{code.struct.name}::run)")
        # void (*)(void): the one function type compilers let any other be
        # cast to and from without a warning (-Wcast-function-type).
        any_fn = "typedef void (*opweave_any_fn)(void);\n"
        head = any_fn + "extern const opweave_any_fn opweave_node_fns[];\n"
        definition = (
            f"{any_fn}extern const opweave_any_fn opweave_node_fns[] = {{\n"
            + ",\n".join(table)
            + "\n};\n"
        )
        return [[(head, -1)], *functions], definition, calls

    def members(self) -> list[Fragment]:
        """The graph struct's arrays of per-node state."""
        return [(f"{name} {name}_v[{count}];\n", -1) for name, count in self.counts.items()]

    @staticmethod
    def _step_functions(struct: OpStruct, args: NodeArgs) -> str:
        """``node_<op>`` (runs the node) and, with state, ``init_<op>`` and
        ``cleanup_<op>``; their ``args`` are the cells' indices (inputs,
        outputs, params) then the instance's."""
        cells = [c for c in args.inputs if c is not None] + [*args.outputs]
        if args.params is not None:
            cells.append(args.params)
        values = ", ".join(f"g->{cell}_v[a[{k}]]" for k, cell in enumerate(cells))
        name, n = struct.name, len(cells)
        instance = f"g->{name}_v[a[{n}]]"
        if not struct.stateful:
            return step_function(
                f"node_{name}", f"(void)v;\n(void)o;\nreturn {name}::run({values});\n"
            )
        params = f"g->{args.params}_v[a[{n - 1}]]" if args.params is not None else ""
        return (
            step_function(f"node_{name}", f"(void)v;\n(void)o;\nreturn {instance}.run({values});\n")
            + step_function(
                f"init_{name}", f"(void)v;\n(void)o;\nreturn {instance}.init({params});\n"
            )
            + step_function(
                f"cleanup_{name}",
                f"(void)failure;\n(void)o;\n{instance}.cleanup();\nreturn 0;\n",
                True,
            )
        )

    def _local(self, cell: str, name: str, source: str) -> list[Fragment]:
        """A local ``name`` declared by ``cell``'s type and set from ``source``."""
        kind, check = self.cells.types[cell]
        declare = call_hook(kind, "c_declare", name, dict(_SUB), default="", check_input=check)
        return [
            (f"PyObject*& py_{name} = {source}.py_V;\n", -1),
            self.fragment(declare, f"type {kind} c_declare"),
            (f"{name} = {source}.V;\n", -1),
        ]

    def _literal_local(
        self, kind: Any, name: str, literal: str | None, python: bool = False
    ) -> list[Fragment]:
        """A local ``name`` declared by type ``kind`` and set to ``literal``;
        with ``python`` (the node's code uses ``py_<name>``), also its Python
        object, built by the type's ``c_sync`` and released when run() returns."""
        declare = call_hook(kind, "c_declare", name, dict(_SUB), default="", check_input=False)
        local = [self.fragment(declare, f"type {kind} c_declare"), (f"{name} = {literal};\n", -1)]
        if not python:
            return local
        sync = call_hook(kind, "c_sync", name, {**_SUB, "fail": "return 1;"}, default="")
        holder = (
            f"PyObject* py_{name} = NULL;\n"
            f"struct {name}_ref {{\nPyObject*& p;\n~{name}_ref() {{ Py_XDECREF(p); }}\n}} "
            f"{name}_owner{{py_{name}}};\n"
        )
        return [*local, (holder, -1), self.fragment(sync, f"type {kind} c_sync"), ("\n", -1)]

    def _python_objects(self, args: NodeArgs, *code: Fragment) -> list[Fragment]:
        """Makes ``py_V_in<k>`` valid before the node's code runs, for each
        input whose Python object ``code`` uses: the cell's ``sync()`` (its
        type's ``c_sync``), which points it at the array (or builds the
        object) that the C value holds. An intermediate result has only its
        C value until then. A failure returns with the Python error set."""
        text = "".join(fragment[0] for fragment in code)
        return [
            (f"if (__i{k}.sync() != 0) {{\nreturn 1;\n}}\n", -1)
            for k, cell in enumerate(args.inputs)
            if cell in self.cells.synced and re.search(rf"\bpy_V_in{k}\b", text)
        ]

    def _define(
        self, struct: OpStruct, args: NodeArgs, parts: list[Fragment]
    ) -> tuple[list[Fragment], list[Fragment]]:
        """The struct with run() declared, and run()'s definition."""
        code, cleanup, members, init, release = parts[:5]
        params: list[str] = []
        locals_: list[Fragment] = []
        if args.params is not None:
            params = [f"{args.params}& __p"]
            locals_ = self._local(args.params, PARAMS, "__p")
        out: list[Fragment] = [(f"struct {struct.name} {{\n", -1), members]
        if struct.stateful:
            out += [(f"int init({', '.join(params)}) {{\n", -1), *locals_, ("{\n", -1), init]
            out += [("}\nreturn 0;\n}\nvoid cleanup() {\n", -1), release, ("}\n", -1)]
        signature: list[str] = []
        body: list[Fragment] = []
        text = code[0] + cleanup[0]
        for k, cell in enumerate(args.inputs):
            if cell is not None:
                signature.append(f"{cell}& __i{k}")
                body += self._local(cell, f"V_in{k}", f"__i{k}")
            elif args.same[k] == k:
                python = re.search(rf"\bpy_V_in{k}\b", text) is not None
                kind, literal = args.literal_types[k], args.literals[k]
                body += self._literal_local(kind, f"V_in{k}", literal, python)
        for k, cell in enumerate(args.outputs):
            signature.append(f"{cell}& __o{k}")
            body += self._local(cell, f"V_out{k}", f"__o{k}")
        static = "" if struct.stateful else "static "
        run = f"run({', '.join([*signature, *params])})"
        out.append((f"{static}int {run};\n}};\n", -1))
        head = f"int {struct.name}::{run} {{\nint __failure = 0;\n"
        definition = [(head, -1), *body, *self._python_objects(args, code, cleanup), *locals_]
        definition += [("{\n", -1), code]
        # The cells own their values: an input the code replaced goes back too.
        copy_back = "".join(
            f"__i{k}.V = V_in{k};\n"
            for k, cell in enumerate(args.inputs)
            if cell is not None and args.same[k] == k
        )
        copy_back += "".join(f"__o{k}.V = V_out{k};\n" for k in range(len(args.outputs)))
        definition += [
            ("__label_1: ;\n", -1),
            cleanup,
            (f"}}\n{copy_back}return __failure;\n}}\n", -1),
        ]
        return out, definition


_TYPE_HOOKS = ("c_declare", "c_init", "c_extract", "c_sync")


def check_c_support(
    variables: Sequence[Variable], nodes: Sequence[Apply], label: Callable[[int, Apply], str]
) -> None:
    """Raises MissingCCode for the first of ``variables`` (those not written
    as literals) whose type, or of ``nodes`` whose op, has no C code;
    ``label(index, node)`` names a node."""
    for variable in variables:
        if not all(has_hook(variable.type, hook) for hook in _TYPE_HOOKS):
            raise MissingCCode(
                f"type {variable.type} of {variable} has no C implementation "
                f"(it needs c_declare, c_init, c_extract and c_sync); {RUN_IN_PYTHON}"
            )
    for index, node in enumerate(nodes):
        if get_hook(code_op(node), "c_code") is None:
            raise MissingCCode(
                f"{label(index, node)} has no C implementation: "
                f"{type(node.op).__name__} defines no c_code; {RUN_IN_PYTHON}"
            )

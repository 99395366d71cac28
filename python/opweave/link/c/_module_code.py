"""The module-level code of a graph's module: each op's and type's headers,
support code and init code, the definitions of the cell and op structs, and,
for a graph cut into compile units (:mod:`._units`), what the module keeps
and what each unit holds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opweave import _core
from opweave._sha256 import sha256_hex
from opweave.link.c._cells import Cells, Fragmenter, StepFields
from opweave.link.c._node_code import NodeStructs, StructCode
from opweave.link.c._unit_reuse import UnitPlan
from opweave.link.c._units import ObjectCode, plan_units, unit_spec
from opweave.link.c.hooks import as_code_list, call_optional_hook

__all__ = ["module_code", "object_code"]


def object_code(obj: Any, compiler: Any, fragment: Fragmenter) -> ObjectCode:
    """The headers, support code and init code of an op or type."""
    kw = {"c_compiler": compiler}
    label = type(obj).__name__
    headers = call_optional_hook(obj, "c_headers", default=[], **kw) or []
    support = call_optional_hook(obj, "c_support_code", **kw)
    init = call_optional_hook(obj, "c_init_code", **kw)
    support = as_code_list(support, f"{label}.c_support_code")
    init = as_code_list(init, f"{label}.c_init_code")
    return ObjectCode(
        [str(h) for h in headers],
        [fragment(text, f"{label} c_support_code") for text in support],
        [fragment(text, f"{label} c_init_code") for text in init],
    )


def _table_step(step: StepFields, calls: dict[str, tuple[str, int]]) -> StepFields:
    """``step``, calling its struct's run() through the table when
    ``calls`` says so (see NodeStructs.table_steps)."""
    ident, run, undo, args = step
    call = calls.get(run[len("node_") :]) if run.startswith("node_") else None
    return step if call is None else (ident, call[0], undo, [*args, call[1]])


def module_code(
    objects: list[Any],
    run_steps: list[StepFields],
    compiler: Any,
    fragment: Fragmenter,
    cells: Cells,
    nodes_code: NodeStructs,
) -> tuple[dict[str, Any], dict[str, Any] | None, UnitPlan | None]:
    """The module-level parts of the spec of a graph of ``objects`` (its ops
    and types) whose ``run_steps`` are laid out, and with units, those of the
    same module as one translation unit (keyword arguments of
    ``_core.ModuleSpec``, which the caller completes: origins, steps,
    counts) and the plan of its units (:mod:`._unit_reuse`)."""
    code = {id(obj): object_code(obj, compiler, fragment) for obj in objects}
    structs = nodes_code.codes
    spec = _translation_unit([code[id(obj)] for obj in objects], structs)
    spec.update(
        definitions=[
            *cells.definitions.values(),
            *([*c.declaration, *c.body] for c in structs),
        ],
        members=[*cells.members(), *nodes_code.members()],
        step_functions=[*cells.step_functions(), *nodes_code.functions],
    )
    groups = plan_units(structs)
    if not groups:
        return spec, None, None

    plan = _unit_plan(groups, cells, code)
    split = _in_units(groups, run_steps, cells, nodes_code, spec, objects, code, plan.spec_of)
    return split, spec, plan


def _unit_plan(
    groups: list[list[StructCode]], cells: Cells, code: dict[int, ObjectCode]
) -> UnitPlan:
    """The plan of the units of ``groups`` (:class:`._unit_reuse.UnitPlan`),
    whose ops' and types' code is ``code`` (by id)."""

    def spec_of(group: Sequence[StructCode]) -> _core.UnitSpec:
        return unit_spec(
            group, cells.definitions, lambda c: cells.types[c][0], lambda o: code[id(o)]
        )

    def own_init(struct: StructCode) -> bool:
        return bool(struct.init_apply[0]) or any(
            text for op in struct.ops for text, _ in code[id(op)].init
        )

    # The digest of each op's or type's code and of each cell's definition,
    # hashed once however many structs use it.
    digests: dict[Any, str] = {}

    def digest(key: Any, texts: Callable[[], list[str]]) -> str:
        found = digests.get(key)
        if found is None:
            found = digests[key] = sha256_hex("\0\0".join(texts()).encode())
        return found

    def object_digest(obj: Any) -> str:
        part = code[id(obj)]
        return digest(
            id(obj),
            lambda: [
                *part.headers,
                "\0support",
                *(text for text, _ in part.support),
                "\0init",
                *(text for text, _ in part.init),
            ],
        )

    def cell_digest(cell: str) -> str:
        return digest(cell, lambda: [text for text, _ in cells.definitions[cell]])

    def alone(struct: StructCode) -> list[str]:
        """What a unit of ``struct`` alone holds, in order (what its struct
        key covers: see _unit_reuse.py): the digests of its cells' types'
        and ops' code and of its cells' definitions, and its own texts."""
        return [
            *(object_digest(o) for o in [*(cells.types[c][0] for c in struct.cells), *struct.ops]),
            "\0definitions",
            *map(cell_digest, struct.cells),
            struct.support_apply[0],
            *(text for text, _ in [*struct.declaration, *struct.body]),
            "\0init",
            struct.init_apply[0],
        ]

    return UnitPlan(groups, spec_of, own_init, alone)


def _in_units(
    groups: list[Any],
    run_steps: list[StepFields],
    cells: Cells,
    nodes_code: NodeStructs,
    spec: dict[str, Any],
    objects: list[Any],
    code: dict[int, ObjectCode],
    spec_of: Callable[[Sequence[StructCode]], _core.UnitSpec],
) -> dict[str, Any]:
    """The module-level parts of a module whose op structs of ``groups`` are
    compiled as units: the module keeps the cells, and the structs that no
    unit holds, and calls the others' run() through a table; ``spec`` is the
    same module as one translation unit."""
    structs = nodes_code.codes
    in_units = {c.struct.name for g in groups for c in g}
    own = [c for c in structs if c.struct.name not in in_units]
    kept = {id(cells.types[cell][0]) for cell in cells.definitions}
    kept.update(id(op) for c in own for op in c.ops)
    split = _translation_unit([code[id(obj)] for obj in objects if id(obj) in kept], own)
    table, table_definition, calls = nodes_code.table_steps(in_units)
    # What names the units' structs goes to the module's own source, so that
    # its body does not change with them (see AssembledModule in
    # include/opweave/module_source.hpp): the cells' and structs'
    # declarations, then the table (last: _node_keys.with_exports).
    used = dict.fromkeys(cell for c in structs if c.struct.name in in_units for cell in c.cells)
    split.update(
        definitions=[
            *cells.definitions.values(),
            *([*c.declaration, *c.body] for c in structs if c.struct.name not in in_units),
        ],
        unit_names=[
            [(f"struct {cell};\n", -1) for cell in used],
            *(c.declaration for c in structs if c.struct.name in in_units),
            [(table_definition, -1)],
        ],
        members=spec["members"],
        step_functions=[
            *cells.step_functions(),
            *(
                f
                for c, f in zip(structs, nodes_code.functions, strict=True)
                if c.struct.name not in calls
            ),
            *table,
        ],
        run_steps=[_table_step(step, calls) for step in run_steps],
        units=[spec_of(group) for group in groups],
    )
    return split


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

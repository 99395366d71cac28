"""Compile units: how a large graph's node code is split into translation
units that are compiled (and cached) on their own, in parallel, and linked.

The op structs (:mod:`._node_code`), in order of first use, are cut into
groups by their content and weight (:func:`plan_units`).

Each unit holds what its structs need and nothing else: the headers,
support code and init code of their ops and of their cells' types, the
cell structs they take, and each struct with its run() defined, so that a
unit's text does not depend on the rest of the graph. The module's own
source only declares the structs (and tables of their run() and of the
units' init functions); its body, a unit of its own, calls them through
those tables, so that its text does not depend on the units' code either
(``AssembledModule`` in include/opweave/module_source.hpp).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.configparser import config
from opweave.link.c._cells import Fragment
from opweave.link.c._context import CONTEXT
from opweave.link.c._node_code import StructCode

__all__ = ["ObjectCode", "group_by_weight", "plan_units", "unit_spec"]

# Measured on kchainA200/kchainB200 (benchmarks/bench_scaling.py, 2 cores):
# each unit costs about 40 ms of compiler start-up, so fewer, larger units
# make a cold compile faster, and smaller ones make an edit cheaper. Units
# are cut by weight (characters of struct text), since compile time grows
# with it: the seed tutorial's structs weigh about 1.4 KB, PyTensor's 1 to
# 80 KB. A unit weighs at least _MIN_WEIGHT, about _AVERAGE_WEIGHT on
# average (about 16 small structs, or two of PyTensor's), and holds at
# most _MAX structs.
_AVERAGE_WEIGHT = 22_000
_MIN_WEIGHT = 16_000
_MAX = 20
# A graph with fewer distinct node codes than the threshold is still cut
# when its code weighs more than the threshold times this.
_WEIGHT_PER_CODE = 4_000
# With two compile jobs or more, a graph whose stateless structs weigh this
# much has units even if they make one (PyTensor's "hier" log-density and
# its gradient weigh 31 KB; the seed tutorial's structs 1.4 KB each).
_SPLIT_WEIGHT = 16_000


class ObjectCode(NamedTuple):
    """The module-level code of one op or type."""

    headers: list[str]
    support: list[Fragment]
    init: list[Fragment]


def weight(code: StructCode) -> int:
    """The characters of ``code``'s text (what its compile time grows with)."""
    fragments = [*code.declaration, *code.body, code.support_apply]
    return sum(len(text) for text, _ in fragments)


def plan_units(codes: Sequence[StructCode]) -> list[list[StructCode]]:
    """The groups of ``codes`` that go to units. None when
    ``config.cmodule__unit_threshold`` is 0; else none for a graph with
    fewer distinct node codes than the threshold that weighs less than that
    many times ``_WEIGHT_PER_CODE``, or whose code would fill only one unit,
    unless compiles run two at a time or more and its code weighs
    ``_SPLIT_WEIGHT``: then the module's body and one unit compile side by
    side, and an edit compiles the unit of what it changed (see
    AssembledModule in include/opweave/module_source.hpp).

    A unit ends after a struct chosen by its own content: its hash, and a
    chance that grows with its weight (content-defined chunking, as backup
    tools split files), once the unit weighs ``_MIN_WEIGHT``; or after
    ``_MAX`` structs. So an edit changes the unit it falls in (and at most
    the next), never the units before it, and the units after it come back
    as soon as the cut points line up again.

    Structs with per-node state stay in the module: the graph struct holds
    their instances, so the module must see their whole definition, and
    their init code must see the statics their code sees."""
    threshold = config.cmodule__unit_threshold
    if threshold == 0:
        return []
    weights = [weight(code) for code in codes]
    kept = [(code, w) for code, w in zip(codes, weights, strict=True) if not code.struct.stateful]
    split = sum(w for _, w in kept) >= _SPLIT_WEIGHT and _jobs() >= 2
    if not split and len(codes) < threshold and sum(weights) < threshold * _WEIGHT_PER_CODE:
        return []

    def ends(code: StructCode, code_weight: int, group_weight: int) -> bool:
        draw = int(code.struct.name.rsplit("_", 1)[-1], 16) % _AVERAGE_WEIGHT
        return draw < code_weight and group_weight >= _MIN_WEIGHT

    groups = _cut(kept, ends)
    return groups if len(groups) >= 2 or (groups and split) else []


def _jobs() -> int:
    """The compiles a build runs at once (``_core.compile_jobs``, which
    reads the CPU affinity and cgroup files: once per setting)."""
    requested = config.compile__jobs
    jobs = CONTEXT.compile_jobs.get(requested)
    if jobs is None:
        jobs = CONTEXT.compile_jobs[requested] = _core.compile_jobs(requested)
    return jobs


def group_by_weight(codes: Sequence[StructCode]) -> list[list[StructCode]]:
    """``codes`` in groups of about ``_AVERAGE_WEIGHT`` (at most ``_MAX``),
    in order: the new units of an edit (:mod:`._unit_reuse`), which are
    compiled now, whatever their content."""
    return _cut([(code, weight(code)) for code in codes], lambda _c, _w, g: g >= _AVERAGE_WEIGHT)


def _cut(
    weighed: Sequence[tuple[StructCode, int]], ends: Callable[[StructCode, int, int], bool]
) -> list[list[StructCode]]:
    """The structs of ``weighed`` ((struct, weight), in order) in groups,
    each ending after a struct for which ``ends(struct, its weight, the
    group's weight with it)`` holds, or after ``_MAX`` structs."""
    groups: list[list[StructCode]] = []
    current: list[StructCode] = []
    current_weight = 0
    for code, code_weight in weighed:
        current.append(code)
        current_weight += code_weight
        if ends(code, code_weight, current_weight) or len(current) >= _MAX:
            groups.append(current)
            current, current_weight = [], 0
    if current:
        groups.append(current)
    return groups


def unit_spec(
    group: Sequence[StructCode],
    cell_definitions: dict[str, list[Fragment]],
    cell_type: Callable[[str], Any],
    object_code: Callable[[Any], ObjectCode],
) -> _core.UnitSpec:
    """The spec of the unit holding ``group`` (see ``UnitSpec`` in
    include/opweave/module_source.hpp): the code of its nodes, their
    apply-specific support code, and the support code and init code of
    their ops and of their cells' types; the unit's init function runs that
    init code, then the nodes' ``c_init_code_apply``."""
    cells = list(dict.fromkeys(cell for code in group for cell in code.cells))
    ops = [op for code in group for op in code.ops]
    objects = list({id(o): o for o in [*map(cell_type, cells), *ops]}.values())
    parts = [object_code(obj) for obj in objects]
    return _core.UnitSpec(
        headers=[h for part in parts for h in part.headers],
        support_code=[
            *(s for part in parts for s in part.support),
            *(code.support_apply for code in group),
        ],
        definitions=[
            *(cell_definitions[cell] for cell in cells),
            *([*code.declaration, *code.body] for code in group),
        ],
        init_code=[i for part in parts for i in part.init],
        init_code_apply=[code.init_apply for code in group],
    )

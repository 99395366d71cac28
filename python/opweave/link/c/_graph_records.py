"""The records of a graph's way to its module: ``GraphSpec``, its module's
spec and what compiling and calling it needs (made by :mod:`.spec`), and
``CompiledGraph``, its compiled module and what calling it needs, as the
whole-graph linker makes it (:mod:`.basic`), the process memo keeps it
(:mod:`._graph_memo`) and the graph index records it (:mod:`._graph_index`)."""

from __future__ import annotations

from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.link.c._export import NodePlan

__all__ = ["CompiledGraph", "GraphSpec"]


class CompiledGraph(NamedTuple):
    """A compiled graph module and what was needed to build it."""

    module: Any
    library: str
    source: str
    outcome: str  # "hit", "built" or "built_by_other"
    orphans: list[Any]
    block_names: dict[int, str]
    output_blocks: dict[int, int]  # run block id of an output -> its output position
    # Wall seconds per phase: "hooks" (asking the ops and types for code),
    # "assembly" (laying out the module, its compile job and key), then
    # cmodule's "lookup", "compile" and "load".
    seconds: dict[str, float] | None = None
    # When built from units: each unit's (outcome, compile seconds).
    units: tuple[tuple[str, float], ...] = ()
    # Why a graph planned in units was compiled as one ("" when it was not).
    whole_because: str = ""
    # run block id of a node -> the node's number (``error.failed_node``)
    node_blocks: dict[int, int] | None = None
    # Where each orphan comes from (GraphSpec.orphan_sources).
    orphan_sources: tuple[tuple[str, Any], ...] = ()


class GraphSpec(NamedTuple):
    """The module spec (for assemble_module) plus what the linker needs to
    compile and call it."""

    spec: _core.ModuleSpec
    orphans: list[Any]
    origins: list[str]
    objects: list[Any]  # the ops and types, in order
    block_names: dict[int, str]  # run block id -> what it runs
    output_blocks: dict[int, int]  # run block id of an output -> its output position
    # With units: the same module as one translation unit (what a failed
    # compile of the units falls back to). Without: None.
    whole: _core.ModuleSpec | None = None
    # run block id of a node -> the node's number (as in block_names)
    node_blocks: dict[int, int] | None = None
    # The name each of spec.definitions defines (a cell or op struct).
    definition_names: tuple[str, ...] = ()
    # A graph of one node: how its export runs it (see _export.py).
    node_plan: NodePlan | None = None
    # Per orphan, where it comes from: ("const", the constant variable) or
    # ("params", the position of the first node run whose params it is).
    orphan_sources: tuple[tuple[str, Any], ...] = ()
    # With units: their structs, for reusing cached units (_unit_reuse.py).
    unit_plan: Any = None

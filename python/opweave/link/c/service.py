"""The compile service: a graph in, a loaded compiled module out.

Every module opweave compiles comes from here, whoever asks: the whole
graph of the C linker, the regions of the per-node linker, a single node
(:func:`node_thunk`, for ``COp.make_c_thunk``, constant folding, DebugMode
and ``DualLinker``) and a node's code key (:func:`node_code`, for the
exports). For a graph (:class:`GraphBuild`) the service owns each step: the
memo and graph-index lookups (:mod:`._graph_lookup`), the spec from the
ops' and types' code (:mod:`.spec`), the assembly and the request
(``_core``), the build and load through the module cache (:mod:`.cmodule`)
and the exports of its nodes (:mod:`._node_keys`, :mod:`._export_lookup`).
Linkers order the nodes, hold storage and make the call; they ask here for
modules.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Sequence
from typing import Any

from opweave import _core
from opweave._logs import get_logger
from opweave.errors import CompileError
from opweave.graph.basic import Apply, Variable, graph_variables, is_constant
from opweave.graph.destroy import ordered_nodes
from opweave.graph.fg import FunctionGraph
from opweave.link.basic import NodeThunk
from opweave.link.c import cmodule
from opweave.link.c._compile_errors import explained, first_error
from opweave.link.c._compile_job import chosen_compiler, compile_job, key_extra
from opweave.link.c._dep_window import Recording, paused
from opweave.link.c._export import node_block
from opweave.link.c._export_lookup import remember_exports
from opweave.link.c._graph_lookup import compiled_graph
from opweave.link.c._graph_records import CompiledGraph
from opweave.link.c._node_keys import (
    NodeCode,
    export_parts,
    job_signature,
    single_node_graph,
    with_exports,
)
from opweave.link.c._node_memo import computed_together
from opweave.link.c._node_memo import node_code as _remembered_code
from opweave.link.c._requests import compiled_texts
from opweave.link.c._steps import can_run_in_c
from opweave.link.c._unit_reuse import built_reusing, recipe_of
from opweave.link.c.hooks import call_optional_hook
from opweave.link.c.kernels import code_op
from opweave.link.c.spec import GraphSpec, MissingCCode, build_spec
from opweave.link.callable import InputBinding, compiled_function
from opweave.link.thunk import bind_graph

__all__ = ["GraphBuild", "node_code", "node_thunk"]

_log = get_logger(__name__)

# How many op names a module's label shows.
_LABEL_OPS = 6


class GraphBuild:
    """One graph to compile: ``fgraph``, its nodes in ``order`` (default:
    a topological order honouring its destroy orderings), ``numbers``
    (id(node) -> its number in messages, for a region of a larger graph),
    the ``no_recycling`` variables its module never keeps between calls,
    and whether its module exports the code of each of its nodes
    (``export_nodes``, for the per-node linker to reuse)."""

    def __init__(
        self,
        fgraph: FunctionGraph,
        order: Sequence[Apply],
        numbers: dict[int, int] | None = None,
        no_recycling: Sequence[Variable] = (),
        export_nodes: bool = False,
    ) -> None:
        self.fgraph = fgraph
        self.nodes = list(order)
        self.numbers = numbers
        self.no_recycling = list(no_recycling)
        self.export_nodes = export_nodes

    @classmethod
    def of(
        cls,
        fgraph: FunctionGraph,
        order: Sequence[Apply] | None = None,
        numbers: dict[int, int] | None = None,
        no_recycling: Sequence[Variable] = (),
        export_nodes: bool = False,
    ) -> GraphBuild:
        """The build of ``fgraph`` bound as linkers bind graphs
        (:func:`~opweave.link.thunk.bind_graph`: destroyed outputs copied,
        ``no_recycling`` completed), its nodes in ``order`` (checked) or
        else in a topological order honouring its destroy orderings."""
        bound, kept = bind_graph(fgraph, list(no_recycling) or None)
        schedule = None if order is None else (lambda _: list(order))
        return cls(bound, ordered_nodes(bound, schedule), numbers, kept, export_nodes)

    # What the memo lookup (_graph_lookup) reads.
    def bound_graph(self) -> FunctionGraph:
        """The graph."""
        return self.fgraph

    def order(self) -> list[Apply]:
        """Its nodes in the order they run."""
        return list(self.nodes)

    # --- compiler and flags --------------------------------------------------

    def objects(self) -> list[Any]:
        """The types and ops (or their kernels) that write the graph's code."""
        objects: dict[int, Any] = {}
        for variable in graph_variables(self.fgraph, self.nodes):
            objects.setdefault(id(variable.type), variable.type)
        for node in self.nodes:
            op = code_op(node)
            objects.setdefault(id(op), op)
        return list(objects.values())

    def compiler(self) -> _core.SystemCompiler:
        """The compiler: the one ops or types ask for (``c_compiler()``), else
        ``config.cxx``. Two different requests are an error."""
        return chosen_compiler(self.objects())

    def label(self) -> str:
        """What the graph's module holds, for listings and logs: its op names
        in topological order, each once."""
        names = list(dict.fromkeys(type(node.op).__name__ for node in self.fgraph.toposort()))
        shown = names[:_LABEL_OPS]
        if len(names) > _LABEL_OPS:
            shown.append(f"+{len(names) - _LABEL_OPS} more")
        return ", ".join(shown)

    def graph_spec(self, compiler: Any = None) -> GraphSpec:
        """The module spec of the graph."""
        return build_spec(
            self.fgraph,
            compiler,
            self.numbers,
            no_recycling={id(v) for v in self.no_recycling},
            order=self.order(),
        )

    def source(self) -> str:
        """The C++ source of the graph's module, as one translation unit (a
        large graph is compiled in units, but reads as one)."""
        graph = self.graph_spec(self.compiler())
        return _core.assemble_module(graph.whole or graph.spec).text

    def key(self) -> tuple[Any, ...]:
        """``(versions, module key, inputs)`` (see ``CLinker.cmodule_key``)."""
        compiler, graph, job, own = self._planned()
        request = self._request(graph, graph.spec, job, compiler, own)[0]
        versions = tuple(
            (type(obj).__qualname__, call_optional_hook(obj, "c_code_cache_version", default=()))
            for obj in graph.objects
        )
        inputs = tuple(
            (str(v.type), repr(v.data)) if is_constant(v) else None for v in self.fgraph.inputs
        )
        return (versions, _core.request_key(compiler, request), inputs)

    # --- building ------------------------------------------------------------

    def compile(self) -> CompiledGraph:
        """Builds (or finds in the cache) and imports the graph's module.

        A large graph is compiled as several units (see
        ``config.cmodule__unit_threshold``); if they fail to compile or
        link, the graph is compiled again as one unit, whose errors name the
        node, hook and line. A graph compiled before, in this process or
        (through the graph index) in another, is found without asking its
        ops for code while the dependency list of that code holds."""
        return compiled_graph(self, self._compile)

    def _planned(self) -> tuple[Any, GraphSpec, _core.CompileJob, bool]:
        """The compiler, the graph's spec (with its nodes' exports when the
        module exports them), its compile job, and whether the graph is its
        one node's code (:meth:`_is_own_node_graph`: its module is that
        export)."""
        compiler = self.compiler()
        graph = self.graph_spec(compiler)
        job = compile_job(graph.objects, compiler)
        own = self._is_own_node_graph()
        if self.export_nodes and not own:
            graph = self._with_exports(graph, job)
        return compiler, graph, job, own

    def _compile(
        self, start: float, seen: Recording | None = None
    ) -> tuple[CompiledGraph, cmodule.CompiledModule, list[Any]]:
        """compile() past its memo: the graph, its module, and the ops and
        types that wrote its code. With ``seen``, the recording open around
        this call: it is paused while the module is compiled and loaded, so
        that it holds what the ops' and types' hooks read, not what the
        build does."""
        compiler, graph, job, own = self._planned()
        hooks = time.perf_counter()
        plan, exports, recipe = graph.unit_plan, None, ""
        if plan is not None:  # how its units are compiled, as struct keys hold it
            recipe = recipe_of(compiler, key_extra(graph.objects), job_signature(job))
            exports = [plan.exports(group, recipe) for group in plan.groups]
        request = self._request(graph, graph.spec, job, compiler, own, exports)
        whole_because = ""
        with paused() if seen is not None else contextlib.nullcontext():
            reused = self._reusing(graph, job, compiler, own, request[0], recipe)
            try:
                compiled, assembly = reused or self._load(graph, graph.spec, compiler, request)
            except CompileError as error:
                if graph.whole is None:
                    raise
                whole_because = f"its units did not compile or link: {first_error(error)}"
                _log.info("%s is compiled as one unit: %s", self.label(), whole_because)
                whole = self._request(graph, graph.whole, job, compiler, own)
                compiled, assembly = self._load(graph, graph.whole, compiler, whole)
        seconds = {"hooks": hooks - start, "assembly": assembly, **(compiled.seconds or {})}
        found = CompiledGraph(
            compiled.module,
            compiled.library_file,
            compiled.source_file,
            compiled.outcome,
            graph.orphans,
            graph.block_names,
            graph.output_blocks,
            seconds,
            compiled.units,
            whole_because,
            node_blocks=graph.node_blocks,
            orphan_sources=graph.orphan_sources,
        )
        return found, compiled, graph.objects

    def _reusing(
        self,
        graph: GraphSpec,
        job: _core.CompileJob,
        compiler: Any,
        own: bool,
        request: _core.ModuleRequest,
        recipe: str,
    ) -> tuple[cmodule.CompiledModule, float] | None:
        """The module of ``graph`` (whose units ``request`` asks for) with
        cached units reused, or None (:func:`._unit_reuse.built_reusing`)."""
        if graph.unit_plan is None:
            return None

        def load(spec: _core.ModuleSpec, exports: Any) -> Any:
            made = self._request(graph, spec, job, compiler, own, exports)
            return self._load(graph, spec, compiler, made)

        plan, label = graph.unit_plan, self.label()
        return built_reusing(plan, graph.spec, request, recipe, compiler, load, label)

    def _is_own_node_graph(self) -> bool:
        """Whether the graph is the graph of its one node's code (see
        _node_keys.single_node_graph): one node, its distinct variable inputs
        as the graph's inputs and its outputs as the graph's outputs. Its
        module's key is then that node's code key: the module exports its
        own graph, with no code added, whoever asks."""
        if len(self.nodes) != 1:
            return False
        node = self.nodes[0]
        variables = {id(v): v for v in node.inputs if not is_constant(v)}
        return [id(v) for v in self.fgraph.inputs] == list(variables) and [
            id(v) for v in self.fgraph.outputs
        ] == [id(v) for v in node.outputs]

    def _with_exports(self, graph: GraphSpec, job: _core.CompileJob) -> GraphSpec:
        """``graph`` exporting the code of each of its nodes that compiles
        with ``job`` (see :mod:`._node_keys`)."""
        wanted = job_signature(job)
        given = {id(v) for v in self.fgraph.inputs}
        codes = []
        with computed_together():
            for node in self.nodes:
                try:
                    code = node_code(node, given)
                except MissingCCode:
                    continue  # compile() raises it for the whole graph
                if code.job == wanted:
                    codes.append(code)
        names = graph.definition_names
        spec = with_exports(graph.spec, names, codes)
        whole = None if graph.whole is None else with_exports(graph.whole, names, codes)
        return graph._replace(spec=spec, whole=whole)

    def _request(
        self,
        graph: GraphSpec,
        spec: _core.ModuleSpec,
        job: _core.CompileJob,
        compiler: Any,
        own: bool = False,
        unit_exports: Sequence[Sequence[str]] | None = None,
    ) -> tuple[_core.ModuleRequest, _core.AssembledModule, float]:
        """The request of the module of ``spec`` (one of ``graph``'s), its
        assembly, and the seconds they took; ``own``: the graph is its one
        node's code; ``unit_exports``: what each of its units exports."""
        start = time.perf_counter()
        assembled = _core.assemble_module(spec)
        request = cmodule.module_request(
            assembled.text,
            job,
            key_extra(graph.objects),
            label=self.label(),
            prelude=cmodule.prelude_request(compiled_texts(assembled), job),
            units=[unit.text for unit in assembled.units],
            unit_exports=unit_exports,
            body=assembled.body.text,
        )
        request.exports = [graph.key for graph in spec.exports]
        if own and not assembled.units:
            request.exports = [_core.request_key(compiler, request)]
        if assembled.units:  # what several units may hold (see ModuleRequest)
            parts: list[_core.ModuleSpec | _core.UnitSpec] = [spec, *spec.units]
            shared = (text for part in parts for text, _ in part.support_code)
            request.shared_code = list(dict.fromkeys(shared))
        return request, assembled, time.perf_counter() - start

    def _load(
        self,
        graph: GraphSpec,
        spec: _core.ModuleSpec,
        compiler: Any,
        request: tuple[_core.ModuleRequest, _core.AssembledModule, float],
    ) -> tuple[cmodule.CompiledModule, float]:
        """The module of ``spec`` (one of ``graph``'s) from its ``request``
        (:meth:`_request`), built by ``compiler``, and the seconds its
        assembly took."""
        made, assembled, assembly = request
        try:
            compiled = cmodule.load_module(made, _core.GRAPH_MODULE_NAME, compiler)
            remember_exports(compiled)
            return compiled, assembly
        except CompileError as error:
            if assembled.units:
                raise
            raise explained(error, assembled, graph.origins, spec) from None


def _computed_code(node: Apply, given: Collection[int] = ()) -> NodeCode:
    """The code of ``node`` computed now (see :func:`node_code`)."""
    fgraph, positions = single_node_graph(node, given)
    build = GraphBuild.of(fgraph)
    compiler = build.compiler()
    graph = build.graph_spec(compiler)
    if graph.whole is not None:  # a unit threshold of 1: the graph as one unit
        graph = graph._replace(spec=graph.whole, whole=None)
    job = compile_job(graph.objects, compiler)
    assembled = _core.assemble_module(graph.spec)
    request = cmodule.module_request(assembled.text, job, key_extra(graph.objects))
    assert graph.node_plan is not None
    key = _core.request_key(compiler, request)
    return NodeCode(
        key,
        tuple(positions),
        graph.orphans,
        export_parts(graph, key),
        job_signature(job),
        node_block(graph.node_plan),
    )


def node_code(node: Apply, given: Collection[int] = ()) -> NodeCode:
    """The code of ``node`` (see :mod:`._node_keys`): its one-node graph's
    spec, compile job and module key, ``given`` the ids of the constants it
    takes as inputs; remembered while its dependencies hold
    (:mod:`._node_memo`). MissingCCode if it has no C code."""
    return _remembered_code(node, _computed_code, given)


def node_thunk(node: Apply) -> NodeThunk | None:
    """A thunk running ``node``'s own compiled module (its one-node graph:
    fresh variables for its variable inputs, constants kept, so every node
    applying an equal op to the same types shares it through the cache), or
    None if the node has no usable C code."""
    if not can_run_in_c(node):
        return None
    fgraph, positions = single_node_graph(node, ())
    try:
        compiled = GraphBuild.of(fgraph).compile()
    except MissingCCode:  # an op or type of the node has no C code
        return None
    binding = InputBinding(fgraph.inputs, f"the C code of {node.op}")
    function = compiled_function(compiled, binding, single=False)

    def run(values: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
        inputs = [values[p] for p in positions]
        if outputs is None:
            return function(*inputs)  # inexact values go through the fallback
        return function.call_with_outputs(inputs, outputs)

    run.function = function  # type: ignore[attr-defined]  # keeps it alive
    run.outcome = compiled.outcome  # type: ignore[attr-defined]
    return run

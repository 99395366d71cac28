"""The whole-graph C linker: one compiled module per graph.

:class:`CLinker` asks every op and type of a graph for its C code
(:mod:`opweave.link.c.spec`), has the C++ core lay it out as one module,
compiles it through the module cache (or finds it there) and returns a
:class:`opweave._core.Function` that runs the graph in one C call.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from opweave import _core
from opweave.errors import CompileError, OpweaveError
from opweave.graph.basic import Apply, graph_variables, is_constant
from opweave.graph.fg import FunctionGraph
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
from opweave.link.c._node_memo import computed_together, node_code
from opweave.link.c.hooks import call_optional_hook
from opweave.link.c.kernels import code_op
from opweave.link.c.opwise import OpWiseCLinker, can_run_in_c
from opweave.link.c.spec import GraphSpec, MissingCCode, build_spec
from opweave.link.callable import InputBinding, compiled_function
from opweave.link.thunk import Linker

if TYPE_CHECKING:
    from opweave.link.c.dual import DualLinker

__all__ = [
    "CLinker",
    "CompiledGraph",
    "DualLinker",
    "MissingCCode",
    "OpWiseCLinker",
    "compute_node_code",
]

_log = logging.getLogger(__name__)

# How many op names a module's label shows.
_LABEL_OPS = 6


class CLinker(Linker):
    """Compiles a whole :class:`~opweave.graph.fg.FunctionGraph` into one
    module, which keeps its intermediate storage between calls (but
    ``no_recycling``). With ``python_fallback`` (the default mode's), a
    graph with nodes that have no C code is linked by
    :class:`~opweave.link.c.opwise.OpWiseCLinker` instead, as PyTensor's
    default mode would run them."""

    kind = "c"

    def __init__(
        self,
        schedule: Any = None,
        numbers: dict[int, int] | None = None,
        python_fallback: bool = False,
        export_nodes: bool = False,
    ) -> None:
        self.fgraph: FunctionGraph | None = None
        self.schedule = schedule
        # Whether the module also exports the graph of each of its nodes
        # (see opweave.link.c._node_keys), for the per-node linker to reuse.
        self.export_nodes = export_nodes
        # id(node) -> its number in messages, for a graph taken from a larger one
        self.numbers = numbers
        self.python_fallback = python_fallback

    def for_graph(self, fgraph: FunctionGraph) -> Linker:
        """An unbound copy of this linker, or, with ``python_fallback`` and a
        node without C code, an OpWiseCLinker with the same schedule."""
        if self.python_fallback and not all(can_run_in_c(n) for n in fgraph.apply_nodes):
            return OpWiseCLinker(schedule=self.schedule)
        return super().for_graph(fgraph)

    # --- compiler and flags --------------------------------------------------

    def _objects(self) -> list[Any]:
        objects: dict[int, Any] = {}
        nodes = self.order()  # from the graph's inputs and outputs: any library's has them
        for variable in graph_variables(self.fgraph, nodes):
            objects.setdefault(id(variable.type), variable.type)
        for node in nodes:
            op = code_op(node)
            objects.setdefault(id(op), op)
        return list(objects.values())

    def compiler(self) -> _core.SystemCompiler:
        """The compiler: the one ops or types ask for (``c_compiler()``), else
        ``config.cxx``. Two different requests are an error."""
        return chosen_compiler(self._objects())

    def compile_job(self, objects: Sequence[Any], compiler: Any) -> _core.CompileJob:
        """The compile job of a graph of ``objects`` (see
        :func:`._compile_job.compile_job`)."""
        return compile_job(objects, compiler)

    def key_extra(self, objects: Sequence[Any]) -> str:
        """Key material beyond the source and the compile job: the Python and
        NumPy ABIs and the ops' and types' declared code versions."""
        return key_extra(objects)

    def label(self) -> str:
        """What the graph's module holds, for listings and logs: its op names
        in topological order, each once."""
        assert self.fgraph is not None
        names = list(dict.fromkeys(type(node.op).__name__ for node in self.fgraph.toposort()))
        shown = names[:_LABEL_OPS]
        if len(names) > _LABEL_OPS:
            shown.append(f"+{len(names) - _LABEL_OPS} more")
        return ", ".join(shown)

    # --- building ------------------------------------------------------------

    def graph_spec(self, compiler: Any = None) -> GraphSpec:
        """The module spec of the bound graph."""
        if self.fgraph is None:
            raise OpweaveError("CLinker.accept(fgraph) must be called first")
        return build_spec(
            self.fgraph,
            compiler,
            self.numbers,
            no_recycling={id(v) for v in self.no_recycling},
            order=self.order(),
        )

    def make_function(self, binding: InputBinding, single: bool) -> Any:
        """The graph's compiled module, called through vectorcall. With
        ``python_fallback``, a graph whose C code turns out to be missing
        (a ``c_code`` that raises NotImplementedError for some node) is
        linked node by node instead."""
        try:
            return compiled_function(self.compile(), binding, single)
        except MissingCCode:
            if not self.python_fallback:
                raise
        opwise = OpWiseCLinker(schedule=lambda _: self.order())
        return opwise.accept(self.bound_graph(), self.no_recycling).make_function(binding, single)

    def cmodule_key(self) -> tuple[Any, ...]:
        """What identifies the bound graph's compiled code, as a tuple:
        ``(versions, module key, inputs)``. ``versions`` holds each op's and
        type's ``(name, c_code_cache_version)``; the module key is the one
        its cache entry is filed under; ``inputs``, per input, the value of a
        constant given as an input (its code is the same for every value:
        the caller passes it) or None."""
        compiler, graph, job, own = self._planned()
        request = self._request(graph, graph.spec, job, compiler, own)[0]
        versions = tuple(
            (type(obj).__qualname__, call_optional_hook(obj, "c_code_cache_version", default=()))
            for obj in graph.objects
        )
        inputs = tuple(
            (str(v.type), repr(v.data)) if is_constant(v) else None
            for v in self.bound_graph().inputs
        )
        return (versions, _core.request_key(compiler, request), inputs)

    def code_gen(self) -> str:
        """The module's C++ source (PyTensor's name for :meth:`get_src_code`)."""
        return self.get_src_code()

    def get_src_code(self) -> str:
        """The C++ source of the bound graph's module, as one translation
        unit (a large graph is compiled in units, but reads as one)."""
        return _whole_source(self.graph_spec(self.compiler()))

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
        linker exports them), its compile job, and whether the graph is its
        one node's code (_is_own_node_graph: its module is that export)."""
        compiler = self.compiler()
        graph = self.graph_spec(compiler)
        job = self.compile_job(graph.objects, compiler)
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
        request = self._request(graph, graph.spec, job, compiler, own)
        whole_because = ""
        with paused() if seen is not None else contextlib.nullcontext():
            try:
                compiled, assembly = self._load(graph, graph.spec, job, compiler, own, request)
            except CompileError as error:
                if graph.whole is None:
                    raise
                whole_because = f"its units did not compile or link: {first_error(error)}"
                _log.info("%s is compiled as one unit: %s", self.label(), whole_because)
                compiled, assembly = self._load(graph, graph.whole, job, compiler, own)
        seconds = {"hooks": hooks - start, "assembly": assembly, **(compiled.seconds or {})}
        compiled_graph = CompiledGraph(
            compiled.module,
            str(compiled.library),
            str(compiled.source),
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
        return compiled_graph, compiled, graph.objects

    def _is_own_node_graph(self) -> bool:
        """Whether the bound graph is the graph of its one node's code (see
        _node_keys.single_node_graph): one node, its distinct variable inputs
        as the graph's inputs and its outputs as the graph's outputs. Its
        module's key is then that node's code key: the module exports its
        own graph, with no code added, whatever the linker."""
        nodes = self.order()
        if len(nodes) != 1:
            return False
        node, fgraph = nodes[0], self.bound_graph()
        variables = {id(v): v for v in node.inputs if not is_constant(v)}
        return [id(v) for v in fgraph.inputs] == list(variables) and [
            id(v) for v in fgraph.outputs
        ] == [id(v) for v in node.outputs]

    def _with_exports(self, graph: GraphSpec, job: _core.CompileJob) -> GraphSpec:
        """``graph`` exporting the code of each of its nodes that compiles
        with ``job`` (see :mod:`._node_keys`)."""
        wanted = job_signature(job)
        given = {id(v) for v in self.bound_graph().inputs}
        codes = []
        with computed_together():
            for node in self.order():
                try:
                    code = node_code(node, compute_node_code, given)
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
    ) -> tuple[_core.ModuleRequest, _core.AssembledModule, float]:
        """The request of the module of ``spec`` (one of ``graph``'s), its
        assembly, and the seconds they took; ``own``: the graph is its one
        node's code."""
        start = time.perf_counter()
        assembled = _core.assemble_module(spec)
        request = cmodule.module_request(
            assembled.text,
            job,
            self.key_extra(graph.objects),
            label=self.label(),
            prelude=cmodule.prelude_request(spec.headers, job),
            units=[unit.text for unit in assembled.units],
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
        job: _core.CompileJob,
        compiler: Any,
        own: bool = False,
        request: tuple[_core.ModuleRequest, _core.AssembledModule, float] | None = None,
    ) -> tuple[cmodule.CompiledModule, float]:
        """The module of ``spec``, and the seconds its assembly took;
        ``own``: the graph is its one node's code (_is_own_node_graph);
        ``request``: the request of ``spec``, when it is made already
        (:meth:`_request`)."""
        made, assembled, assembly = request or self._request(graph, spec, job, compiler, own)
        try:
            compiled = cmodule.load_module(made, _core.GRAPH_MODULE_NAME, compiler)
            remember_exports(compiled)
            return compiled, assembly
        except CompileError as error:
            if assembled.units:
                raise
            raise explained(error, assembled, graph.origins, spec) from None


def compute_node_code(node: Apply, given: Collection[int] = ()) -> NodeCode:
    """The code of ``node`` (see :mod:`._node_keys`): its one-node graph's
    spec, compile job and module key, ``given`` the ids of the constants it
    takes as inputs. MissingCCode if it has no C code."""
    fgraph, positions = single_node_graph(node, given)
    linker = CLinker().accept(fgraph)
    compiler = linker.compiler()
    graph = linker.graph_spec(compiler)
    if graph.whole is not None:  # a unit threshold of 1: the graph as one unit
        graph = graph._replace(spec=graph.whole, whole=None)
    job = linker.compile_job(graph.objects, compiler)
    assembled = _core.assemble_module(graph.spec)
    request = cmodule.module_request(assembled.text, job, linker.key_extra(graph.objects))
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


def _whole_source(graph: GraphSpec) -> str:
    """The module's source as one translation unit."""
    return _core.assemble_module(graph.whole or graph.spec).text


def __getattr__(name: str) -> Any:
    # PyTensor imports DualLinker from here; it is loaded on first use.
    if name == "DualLinker":
        from opweave.link.c.dual import DualLinker

        return DualLinker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

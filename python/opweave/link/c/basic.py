"""The whole-graph C linker: one compiled module per graph.

:class:`CLinker` orders a graph's nodes and asks the compile service
(:mod:`opweave.link.c.service`) for the graph's module, which runs the
graph in one C call (:class:`opweave._core.Function`). Whether a graph is
one module or is linked node by node follows one rule
(:mod:`opweave.link.c._layout`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opweave import _core
from opweave.errors import OpweaveError
from opweave.graph.fg import FunctionGraph
from opweave.link.c._compile_job import compile_job, key_extra
from opweave.link.c._graph_records import CompiledGraph
from opweave.link.c._layout import linked_function, links_node_by_node
from opweave.link.c.opwise import OpWiseCLinker
from opweave.link.c.service import GraphBuild
from opweave.link.c.spec import GraphSpec, MissingCCode
from opweave.link.callable import InputBinding
from opweave.link.thunk import Linker

if TYPE_CHECKING:
    from opweave.link.c.dual import DualLinker

__all__ = [
    "CLinker",
    "CompiledGraph",
    "DualLinker",
    "MissingCCode",
    "OpWiseCLinker",
]


class CLinker(Linker):
    """Compiles a whole :class:`~opweave.graph.fg.FunctionGraph` into one
    module, which keeps its intermediate storage between calls (but
    ``no_recycling``). With ``python_fallback`` (the default mode's), a
    graph with nodes that have no C code is linked node by node instead, as
    PyTensor's default mode would run them (:mod:`._layout`)."""

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
        """An unbound copy of this linker, or an OpWiseCLinker with the same
        schedule when the graph is linked node by node from the start
        (:func:`._layout.links_node_by_node`)."""
        if links_node_by_node(fgraph.apply_nodes, self.python_fallback):
            return OpWiseCLinker(schedule=self.schedule)
        return super().for_graph(fgraph)

    def build(self) -> GraphBuild:
        """The bound graph as the compile service builds it."""
        if self.fgraph is None:
            raise OpweaveError("CLinker.accept(fgraph) must be called first")
        return GraphBuild(
            self.fgraph, self.order(), self.numbers, self.no_recycling, self.export_nodes
        )

    def make_function(self, binding: InputBinding, single: bool) -> Any:
        """The graph's compiled module, called through vectorcall (or, with
        ``python_fallback``, node by node when its C code turns out to be
        missing: :mod:`._layout`)."""
        return linked_function(self.build(), binding, single, False, self.python_fallback)

    def compile(self) -> CompiledGraph:
        """Builds (or finds in the cache) and imports the graph's module
        (:meth:`opweave.link.c.service.GraphBuild.compile`)."""
        return self.build().compile()

    # --- what the service knows of the bound graph ---------------------------

    def compiler(self) -> _core.SystemCompiler:
        """The compiler: the one ops or types ask for (``c_compiler()``), else
        ``config.cxx``. Two different requests are an error."""
        return self.build().compiler()

    def _objects(self) -> list[Any]:
        return self.build().objects()

    def compile_job(self, objects: Sequence[Any], compiler: Any) -> _core.CompileJob:
        """The compile job of a graph of ``objects`` (see
        :func:`._compile_job.compile_job`)."""
        return compile_job(objects, compiler)

    def key_extra(self, objects: Sequence[Any]) -> str:
        """Key material beyond the source and the compile job: the Python and
        NumPy ABIs and the ops' and types' declared code versions."""
        return key_extra(objects)

    def label(self) -> str:
        """What the graph's module holds, for listings and logs."""
        return self.build().label()

    def graph_spec(self, compiler: Any = None) -> GraphSpec:
        """The module spec of the bound graph."""
        return self.build().graph_spec(compiler)

    def cmodule_key(self) -> tuple[Any, ...]:
        """What identifies the bound graph's compiled code, as a tuple:
        ``(versions, module key, inputs)``. ``versions`` holds each op's and
        type's ``(name, c_code_cache_version)``; the module key is the one
        its cache entry is filed under; ``inputs``, per input, the value of a
        constant given as an input (its code is the same for every value:
        the caller passes it) or None."""
        return self.build().key()

    def code_gen(self) -> str:
        """The module's C++ source (PyTensor's name for :meth:`get_src_code`)."""
        return self.get_src_code()

    def get_src_code(self) -> str:
        """The C++ source of the bound graph's module, as one translation
        unit (a large graph is compiled in units, but reads as one)."""
        return self.build().source()


def __getattr__(name: str) -> Any:
    # PyTensor imports DualLinker from here; it is loaded on first use.
    if name == "DualLinker":
        from opweave.link.c.dual import DualLinker

        return DualLinker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

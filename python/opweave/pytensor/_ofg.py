# mypy: disable-error-code="import-not-found"
# (PyTensor is optional: opweave[pytensor]; without it, its modules are Any.)
"""``OpFromGraph`` under ``"OPWEAVE"``: a node whose inner graph is all C
code is inlined into the outer graph, after PyTensor's rewrites have
rewritten that inner graph (``ofg_inner_graph``, with the C linker's
rewrites), so that the whole graph is one compiled module, not an inner
function that PyTensor links with its own ``cvm`` and caches in its own
compiledir. The rewrite is in PyTensor's ``optdb`` under the tag
``"opweave"``, which only opweave's mode includes."""

from __future__ import annotations

from typing import Any

from pytensor.compile.builders import OpFromGraph
from pytensor.compile.mode import optdb
from pytensor.compile.rewriting import inline_ofg_node
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.rewriting.basic import dfs_rewriter, node_rewriter
from pytensor.link.c.interface import CLinkerOp
from pytensor.tensor.blockwise import Blockwise

from opweave.link.c.kernels import KERNEL_CLASSES, code_op

__all__ = ["TAG", "inline_c_op_from_graph"]

TAG = "opweave"
# After ofg_inner_graph (49.6), which rewrites inner graphs, and before the
# in-place rewrites (50 and later), which then see the inlined nodes; and
# again after local_useless_unbatched_blockwise (60), which unwraps ops
# such as AllocDiag from a Blockwise, before local_inplace_AdvancedIncSubtensor
# (70.6), which makes their inlined updates in place.
_POSITIONS = {"opweave_inline_ofg": 49.65, "opweave_inline_ofg_late": 65.0}
# Before ofg_inner_graph (49.6), which rewrites inner graphs in place.
_VECTORIZE_POSITION = 49.55


def _has_c_code(node: Any) -> bool:
    """Whether ``node``'s op defines C code (not CLinkerOp's raising
    default), or opweave's kernel registry gives the node some."""
    op = node.op
    if type(op) in KERNEL_CLASSES and code_op(node) is not op:
        return True
    return isinstance(op, CLinkerOp) and type(op).c_code is not CLinkerOp.c_code


@node_rewriter([OpFromGraph])
def inline_c_op_from_graph(fgraph: Any, node: Any) -> Any:
    """The outputs of ``node``'s inner graph on its inputs, when every inner
    node has C code; else False (the node stays an OpFromGraph)."""
    return inline_ofg_node(node) if _all_c(node.op) else False


@node_rewriter([Blockwise])
def vectorize_c_op_from_graph(fgraph: Any, node: Any) -> Any:
    """A ``Blockwise`` of an OpFromGraph whose inner nodes all have C code
    (AllocDiag of a batch of vectors, in a batched Cholesky's gradient):
    the inner graph vectorised on the batched inputs; else False. Before
    PyTensor rewrites inner graphs (in place, which vectorising refuses)."""
    core = node.op.core_op
    if not isinstance(core, OpFromGraph) or not _all_c(core):
        return False
    inner = core.fgraph.unfreeze() if hasattr(core.fgraph, "unfreeze") else core.fgraph
    replace = dict(zip(inner.inputs, node.inputs, strict=True))
    try:
        return vectorize_graph(list(inner.outputs), replace=replace)
    except (NotImplementedError, ValueError, TypeError):  # not vectorisable: as it is
        return False


def _all_c(op: Any) -> bool:
    """Whether every node of ``op``'s inner graph has C code."""
    return all(_has_c_code(inner) for inner in op.fgraph.toposort())


for _name, _position in _POSITIONS.items():
    if _name not in optdb:
        optdb.register(_name, dfs_rewriter(inline_c_op_from_graph), TAG, position=_position)
if "opweave_vectorize_ofg" not in optdb:
    optdb.register(
        "opweave_vectorize_ofg",
        dfs_rewriter(vectorize_c_op_from_graph),
        TAG,
        position=_VECTORIZE_POSITION,
    )

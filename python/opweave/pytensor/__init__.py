# mypy: disable-error-code="import-not-found"
# (PyTensor is optional: opweave[pytensor]; without it, its modules are Any.)
"""opweave as PyTensor's C back end.

``import opweave.pytensor`` registers the PyTensor linkers ``"opweave"``
(the whole graph in one compiled module) and ``"opweave_c|py"`` (node by
node, reusing compiled node code), and the mode ``"OPWEAVE"`` (PyTensor's
``fast_run`` rewrites, then the ``"opweave"`` linker). See
``docs/pytensor-backend.md``.
"""

from __future__ import annotations

import re
import sys
import warnings

try:
    import pytensor
except ModuleNotFoundError as error:
    if error.name != "pytensor":
        raise
    raise ImportError(
        "opweave.pytensor needs PyTensor 3.3 (pip install 'opweave[pytensor]'), which needs "
        f"Python 3.12 or later; this is Python {sys.version_info[0]}.{sys.version_info[1]}"
        + ("" if sys.version_info >= (3, 12) else ", so pip left PyTensor out")
    ) from error
from pytensor.compile import mode as _pt_mode
from pytensor.compile.inner_function import HasInnerFunction
from pytensor.graph.op import Op as _PtOp
from pytensor.graph.utils import MethodNotDefined as _PtMethodNotDefined
from pytensor.link.c.op import COp as _PtCOp

from opweave._logs import get_logger
from opweave.configparser import config as _ow_config
from opweave.graph.perform import PERFORM, register_own_thunk
from opweave.graph.utils import register_not_defined
from opweave.link.c._node_keys import register_snapshot
from opweave.pytensor._kernels import register_all as _register_kernels
from opweave.pytensor._linker import OpweaveLinker
from opweave.pytensor._ofg import TAG as _OFG_TAG

__all__ = ["SUPPORTED_PYTENSOR", "OpweaveLinker", "check_version", "use"]

_log = get_logger(__name__)

# The PyTensor versions opweave's CI runs PyTensor's graphs with (as the
# extra opweave[pytensor] requires them).
SUPPORTED_PYTENSOR = ((3, 3), (3, 4))


def check_version(version: str) -> bool:
    """Whether ``version`` of PyTensor is one opweave is tested with
    (:data:`SUPPORTED_PYTENSOR`: at least the first, below the second);
    warns, and returns False, when it is not."""
    found = re.match(r"(\d+)\.(\d+)", version)
    release = (int(found[1]), int(found[2])) if found else (0, 0)
    low, high = SUPPORTED_PYTENSOR
    if low <= release < high:
        return True
    warnings.warn(
        f"opweave.pytensor is not tested with PyTensor {version} (tested: "
        f">={low[0]}.{low[1]},<{high[0]}.{high[1]}); it may still work",
        UserWarning,
        stacklevel=2,
    )
    return False


check_version(pytensor.__version__)

# PyTensor compiles its modules for the CPU it runs on; so do opweave's,
# under opweave.pytensor, unless cmodule__march is given (docs/pytensor-backend.md).
if not _ow_config.is_set("cmodule__march"):
    _ow_config.cmodule__march = "native"

register_not_defined(_PtMethodNotDefined)
# PyTensor's flags that its ops' C code reads (floatX, the BLAS flags, ...):
# part of the key of opweave's memos of node and graph code.
register_snapshot(pytensor.config.get_config_hash)


def _own_thunk(op: object) -> object:
    """The ops that run through their own ``make_thunk`` where they run in
    Python: an op with an inner function (Scan, OpFromGraph), whose thunk
    runs that function (linked by opweave, :func:`_inner_on_opweave`), and
    an op whose class makes its own thunk instead of a ``perform`` (IfElse)."""
    if isinstance(op, HasInnerFunction):
        return "c"
    makes_own = isinstance(op, _PtOp) and type(op).make_thunk is not _PtOp.make_thunk
    return None if makes_own and not isinstance(op, _PtCOp) else PERFORM


def _inner_on_opweave(op: object) -> object:
    """For an op with an inner function (Scan, OpFromGraph), a copy whose
    inner function opweave links (``OpweaveLinker``, no rewrites: the inner
    graph was rewritten with the outer one) and caches, never PyTensor's
    ``cvm`` and its compiledir; the op itself, shared with other back ends,
    is left as it is. Other ops as they are."""
    if not isinstance(op, HasInnerFunction):
        return op
    import copy

    from pytensor.compile.inner_function import link_only_mode

    mine = copy.copy(op)
    allow_gc = getattr(op, "allow_gc", None)
    mine._fn = mine.compile_fn(link_only_mode(OpweaveLinker("c", allow_gc=allow_gc)))
    return mine


register_own_thunk(_own_thunk, _inner_on_opweave)


def _inner_graph_rewrites_as_c() -> None:
    """PyTensor rewrites the inner graphs of OpFromGraph, Scan and its
    optimize ops per linker class (``singledispatch`` on the linker): the
    opweave linkers take PyTensor's C linker's rewrites, since they run the
    same C code."""
    from pytensor.compile.rewriting import rewrite_ofg_inner_graph
    from pytensor.link.c.basic import CLinker as _PtCLinker
    from pytensor.scan.rewriting.inner_graph import rewrite_scan_inner_graph
    from pytensor.tensor.rewriting.optimize import rewrite_optimize_inner_graph

    for dispatcher in (
        rewrite_ofg_inner_graph,
        rewrite_scan_inner_graph,
        rewrite_optimize_inner_graph,
    ):
        dispatcher.register(OpweaveLinker, dispatcher.dispatch(_PtCLinker))


_inner_graph_rewrites_as_c()
_register_kernels()

if "opweave" not in _pt_mode.predefined_linkers:
    _pt_mode.register_linker("opweave", OpweaveLinker("c"))
    _pt_mode.register_linker("opweave_c|py", OpweaveLinker("c|py"))
    _pt_mode.register_linker("opweave_py", OpweaveLinker("py"))
if "OPWEAVE" not in _pt_mode.predefined_modes:
    # fast_run, and OpFromGraph nodes of C code inlined (_ofg.py)
    _fast_run = _pt_mode.predefined_optimizers["fast_run"].including(_OFG_TAG)
    _pt_mode.register_mode("OPWEAVE", _pt_mode.Mode(linker="opweave", optimizer=_fast_run))


def _accept_registered_modes() -> None:
    """Lets ``pytensor.config.mode`` take the name of a registered mode
    (``"OPWEAVE"``): PyTensor's own check knows only its built-in names."""
    param = pytensor.config._config_var_dict["mode"]
    check = param._apply
    if getattr(check, "opweave", False):
        return

    def accept(value: object) -> object:
        if isinstance(value, str) and value.upper() in _pt_mode.predefined_modes:
            return value
        return check(value)

    accept.opweave = True  # type: ignore[attr-defined]
    param._apply = accept


_accept_registered_modes()


def use() -> None:
    """Makes opweave PyTensor's back end for every function PyTensor
    compiles from now on, PyMC's included: ``pytensor.config.mode`` becomes
    ``"OPWEAVE"``, and PyTensor's ``FAST_COMPILE`` mode, which PyMC asks for
    by name for one-off functions (initial points, shapes), runs each node's
    ``perform`` through opweave's Python linker (``"opweave_py"``, with
    ``fast_compile`` rewrites), so that nothing is linked by Numba or
    PyTensor's ``vm``, and nothing is written to PyTensor's compiledir.
    Calling it again does nothing more."""
    fast_compile = _pt_mode.Mode(linker="opweave_py", optimizer="fast_compile")
    _pt_mode.FAST_COMPILE = fast_compile
    _pt_mode.predefined_modes["FAST_COMPILE"] = fast_compile
    pytensor.config.mode = "OPWEAVE"

"""DebugMode: run every node in Python and in C, and check what each does.

``opweave.function(..., mode="DebugMode")`` (or ``mode=DebugMode(...)``)
runs the graph node by node. For each node, in topological order, its
``perform`` and its own compiled C module each run on a copy of the inputs;
the value passed on (and returned) is the C result when the node has C code,
else ``perform``'s. Each mistake raises its own subclass of
:class:`DebugModeError`:

- :class:`BadThunkOutput`: ``perform`` and C disagree (the output type's
  ``values_eq_approx``), or a run with a preallocated output differs;
- :class:`BadDestroyMap`: an input changed that ``destroy_map`` does not
  declare;
- :class:`BadViewMap`: an output shares memory with an input without a
  ``view_map`` entry, or with another output when both are read by later
  nodes and neither is a declared view of an input (PyTensor's rule);
- :class:`InvalidValueError`: a value its type rejects, or (with
  ``check_isfinite``) a NaN or an infinity;
- :class:`BadRefcount`: the C code leaked or over-released a reference.
"""

from __future__ import annotations

from typing import Any

from opweave.compile._debug_prealloc import KINDS, parse_kinds
from opweave.compile._mode import Mode
from opweave.graph.fg import FunctionGraph
from opweave.link._debug_errors import (
    BadDestroyMap,
    BadRefcount,
    BadThunkOutput,
    BadViewMap,
    DebugModeError,
    InvalidValueError,
)
from opweave.link.callable import InputBinding
from opweave.link.thunk import Linker

__all__ = [
    "KINDS",
    "BadDestroyMap",
    "BadRefcount",
    "BadThunkOutput",
    "BadViewMap",
    "DebugLinker",
    "DebugMode",
    "DebugModeError",
    "InvalidValueError",
    "debug_function",
]


def _flag(value: bool | None, default: bool) -> bool:
    return default if value is None else bool(value)


class DebugMode(Mode):
    """The mode that checks every node (see the module's docstring).

    - ``check_c_code`` / ``check_py_code``: run the nodes' C code / their
      ``perform`` (both by default; a node with only one runs that one);
    - ``check_isfinite``: a NaN or an infinity in a float output is an error;
    - ``check_preallocated_output``: the kinds of preallocated outputs to run
      each thunk with (``previous``, ``c_contiguous``, ``f_contiguous``,
      ``strided``, ``wrong_size``, or ``["ALL"]``); none by default;
    - ``check_refcounts``: check the C code's reference counts and
      allocations (new in opweave; on by default).

    ``stability_patience``, ``require_matching_strides`` and ``linker`` are
    accepted for PyTensor's signature and ignored. ``optimizer=None`` turns
    constant folding off, as in :class:`Mode`.
    """

    def __init__(
        self,
        optimizer: Any = "fast_run",
        stability_patience: int | None = None,
        check_c_code: bool | None = None,
        check_py_code: bool | None = None,
        check_isfinite: bool | None = None,
        check_preallocated_output: Any = None,
        require_matching_strides: Any = None,
        linker: Any = None,
        check_refcounts: bool | None = None,
    ) -> None:
        self.linker = DebugLinker(self)
        self.optimizer = optimizer
        self.stability_patience = stability_patience
        self.require_matching_strides = require_matching_strides
        self.check_c_code = _flag(check_c_code, True)
        self.check_py_code = _flag(check_py_code, True)
        if not (self.check_c_code or self.check_py_code):
            raise ValueError("DebugMode needs check_c_code or check_py_code (or both)")
        self.check_isfinite = _flag(check_isfinite, True)
        self.check_refcounts = _flag(check_refcounts, True)
        self.check_preallocated_output = parse_kinds(check_preallocated_output)

    @property
    def linker_name(self) -> str:
        """``"debug"``."""
        return "debug"

    def _options(self) -> tuple[Any, ...]:
        return (
            self.folds_constants,
            self.check_c_code,
            self.check_py_code,
            self.check_isfinite,
            self.check_refcounts,
            self.check_preallocated_output,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DebugMode) and other._options() == self._options()

    def __hash__(self) -> int:
        return hash(("DebugMode", self._options()))

    def __repr__(self) -> str:
        return (
            f"DebugMode(check_c_code={self.check_c_code}, check_py_code={self.check_py_code}, "
            f"check_isfinite={self.check_isfinite}, "
            f"check_preallocated_output={list(self.check_preallocated_output)}, "
            f"check_refcounts={self.check_refcounts})"
        )


class DebugLinker(Linker):
    """DebugMode's linker: the graph node by node, each node checked by
    :func:`debug_function` under the options of ``mode``. Graphs are
    prepared (folded, protected) as for the per-node linker."""

    kind = "c|py"

    def __init__(self, mode: DebugMode, schedule: Any = None) -> None:
        self.fgraph = None
        self.mode = mode
        self.schedule = schedule

    def make_function(self, binding: InputBinding, single: bool) -> Any:
        """The checking loop of the bound graph (see :func:`debug_function`)."""
        return debug_function(self.bound_graph(), binding, single, self.mode)


def debug_function(
    fgraph: FunctionGraph, binding: InputBinding, single: bool, mode: DebugMode
) -> Any:
    """The callable of ``fgraph`` under ``mode``: a Python loop over the
    nodes, each one checked by a :class:`~opweave.compile._debug_node.NodeCheck`."""
    from opweave import _core
    from opweave.compile._debug_node import NodeCheck
    from opweave.link.runner import NodeRunner, node_steps

    nodes = fgraph.toposort()
    read = {id(v) for node in nodes for v in node.inputs}  # by a node, not as an output
    checks = [
        NodeCheck(node, index, mode, [id(v) in read for v in node.outputs])
        for index, node in enumerate(nodes)
    ]
    steps = node_steps(nodes, [check.run for check in checks])
    fn: Any = _core.Function(
        impl=NodeRunner(fgraph, binding, single, steps).run, unpack_single=single
    )
    fn.node_checks = checks
    return fn

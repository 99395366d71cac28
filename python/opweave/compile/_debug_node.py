"""DebugMode's work on one node: run its thunks and check what they did.

For every call, :meth:`NodeCheck.run` runs ``perform`` and the node's own C
module, each on its own copy of the inputs, and checks each run: the outputs
are valid (and finite, with ``check_isfinite``), inputs outside
``destroy_map`` are unchanged, and outputs share memory only as ``view_map``
says. The two runs must agree. Each thunk then runs again with preallocated
outputs of every asked kind, and the C code's reference counts are checked
around every call of it (:mod:`opweave.compile._debug_refcount`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from opweave.compile._debug_prealloc import offered_outputs
from opweave.compile._debug_refcount import call_counted, check_blocks
from opweave.graph.basic import Apply
from opweave.link._debug_errors import (
    BadDestroyMap,
    BadThunkOutput,
    BadViewMap,
    DebugModeError,
    InvalidValueError,
    describe_node,
)
from opweave.link.basic import NodeThunk, has_perform, perform_thunk
from opweave.link.c.service import node_thunk
from opweave.link.c.spec import MissingCCode
from opweave.link.callable import add_note

__all__ = ["NodeCheck"]

_PERFORM, _C = "perform", "c_code"


def _may_share_memory(variable: Any, a: Any, b: Any) -> bool:
    """Whether two values of a variable's type may share memory: the type's
    own ``may_share_memory`` if it has one, else overlapping ndarrays, or one
    mutable object."""
    own = getattr(variable.type, "may_share_memory", None)
    if own is not None:
        return bool(own(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    if isinstance(a, (np.generic, int, float, complex, str, bytes, tuple, frozenset)):
        return False
    return a is b and a is not None


def _declared(mapping: Any, output: int) -> set[int]:
    return set((mapping or {}).get(output, ()))


class NodeCheck:
    """The thunks of one node and the checks DebugMode makes on them."""

    def __init__(
        self, node: Apply, index: int, mode: Any, used: Sequence[bool] | None = None
    ) -> None:
        self.node, self.index, self.mode = node, index, mode
        # Per output: whether another node reads it (being a graph output
        # does not count). None: as if every output were read.
        self.used = [True] * len(node.outputs) if used is None else list(used)
        op = node.op
        self.thunks: dict[str, NodeThunk] = {}
        if mode.check_py_code and has_perform(op):
            self.thunks[_PERFORM] = perform_thunk(node)
        if mode.check_c_code:
            thunk = node_thunk(node)
            if thunk is not None:
                self.thunks[_C] = thunk
        if not self.thunks:
            raise MissingCCode(
                f"DebugMode can run node {index} ({op}) neither in C (no usable C code, or "
                f"check_c_code=False) nor in Python ({type(op).__name__} defines no "
                "perform, or check_py_code=False)"
            )
        self.destroyed = {
            i for ins in (getattr(op, "destroy_map", None) or {}).values() for i in ins
        }
        self.previous: dict[str, list[Any] | None] = {name: None for name in self.thunks}

    # --- one run ---------------------------------------------------------------

    def call(
        self, name: str, values: Sequence[Any], offered: list[Any] | None
    ) -> tuple[list[Any], list[Any]]:
        """Runs thunk ``name`` on copies of ``values``; returns its outputs
        and the copies, as the thunk left them."""
        copies = [copy.deepcopy(v) for v in values]
        thunk = self.thunks[name]
        try:
            if name == _C and self.mode.check_refcounts:
                positions = range(len(copies))
                return call_counted(thunk, self.node, copies, offered, positions), copies
            return thunk(copies, offered), copies
        except (TypeError, ValueError) as error:
            position = getattr(error, "failed_output", None)
            if position is None:
                raise
            variable = self.node.outputs[position]
            raise InvalidValueError(
                variable,
                None,
                self.node,
                hint=f"{name} made a value its type rejects",
                specific_hint=str(error),
                value_seen=False,
            ) from error

    def check_run(
        self, name: str, values: Sequence[Any], copies: Sequence[Any], outputs: Sequence[Any]
    ) -> None:
        """The checks of one run: valid outputs, destroyed inputs, views."""
        self.check_values(name, outputs)
        self.check_destroyed(name, values, copies)
        self.check_views(name, outputs, copies)

    def check_values(self, name: str, outputs: Sequence[Any]) -> None:
        """InvalidValueError for a value its type rejects, or a non-finite
        float with ``check_isfinite``."""
        for variable, value in zip(self.node.outputs, outputs, strict=True):
            try:
                variable.type.filter(value, strict=True)
            except (TypeError, ValueError) as error:
                raise InvalidValueError(
                    variable,
                    value,
                    self.node,
                    hint=f"{name} returned a value of the wrong type",
                    specific_hint=str(error),
                ) from None
            if self.mode.check_isfinite and _has_non_finite(value):
                raise InvalidValueError(
                    variable,
                    value,
                    self.node,
                    hint=f"{name} returned NaN or Inf",
                    specific_hint="check_isfinite is on",
                )

    def check_destroyed(self, name: str, values: Sequence[Any], copies: Sequence[Any]) -> None:
        """BadDestroyMap for an input changed but not in ``destroy_map``."""
        for position, (variable, old, new) in enumerate(
            zip(self.node.inputs, values, copies, strict=True)
        ):
            if position in self.destroyed:
                continue
            if not variable.type.values_eq(old, new):
                raise BadDestroyMap(self.node, position, old, new, name)

    def check_views(self, name: str, outputs: Sequence[Any], copies: Sequence[Any]) -> None:
        """BadViewMap for an output sharing memory with an input that
        ``view_map``/``destroy_map`` does not declare for it, or with another
        output, as PyTensor's ``_check_viewmap`` rules: two outputs may alias
        each other when one of them is a declared view of an input, or when
        one of them is read by no other node (returning both is fine)."""
        op = self.node.op
        view_map, destroy_map = getattr(op, "view_map", None), getattr(op, "destroy_map", None)
        views_input = []
        for i, (variable, value) in enumerate(zip(self.node.outputs, outputs, strict=True)):
            allowed = _declared(view_map, i) | _declared(destroy_map, i)
            shared = [j for j, own in enumerate(copies) if _may_share_memory(variable, value, own)]
            for j in shared:
                if j not in allowed:
                    raise BadViewMap(self.node, i, value, in_alias_idx=j, thunk=name)
            views_input.append(bool(shared))
        for i, (variable, value) in enumerate(zip(self.node.outputs, outputs, strict=True)):
            if views_input[i] or not self.used[i]:
                continue
            for k, other in enumerate(outputs):
                if k != i and self.used[k] and _may_share_memory(variable, value, other):
                    raise BadViewMap(self.node, i, value, out_alias_idx=k, thunk=name)

    # --- a call ---------------------------------------------------------------

    def run(self, values: Sequence[Any]) -> list[Any]:
        """Every check of one call; returns the C result when the node has C
        code, else ``perform``'s."""
        results = {}
        for name in self.thunks:
            outputs, copies = self.call(name, values, None)
            self.check_run(name, values, copies, outputs)
            results[name] = outputs
        reference_name = _C if _C in results else _PERFORM
        reference = results[reference_name]
        if len(results) == 2:
            self.compare(_PERFORM, results[_PERFORM], _C, reference, values)
        for name in self.thunks:
            self.check_preallocated(name, values, reference_name, reference)
            if "previous" in self.mode.check_preallocated_output:
                self.previous[name] = copy.deepcopy(results[name])
        if _C in self.thunks and self.mode.check_refcounts:
            self.check_leaks(values)
        return reference

    def compare(
        self, name1: str, out1: Sequence[Any], name2: str, out2: Sequence[Any], values: Any
    ) -> None:
        """BadThunkOutput where two runs' outputs differ."""
        for variable, a, b in zip(self.node.outputs, out1, out2, strict=True):
            if not values_eq_approx(variable)(a, b):
                raise BadThunkOutput(variable, name1, a, name2, b, values)

    def check_preallocated(
        self, name: str, values: Sequence[Any], reference_name: str, reference: list[Any]
    ) -> None:
        """Runs thunk ``name`` with each asked kind of preallocated output;
        each result must equal the reference."""
        kinds = self.mode.check_preallocated_output
        for label, offered in offered_outputs(
            kinds, reference, self.node.outputs, self.previous[name]
        ):
            what = f"{name} with preallocated {label} output"
            try:
                outputs, copies = self.call(name, values, offered)
                # A wrong value first: a buffer assumed zeroed may hold NaN.
                self.compare(reference_name, reference, what, outputs, values)
                self.check_run(what, values, copies, outputs)
            except DebugModeError:
                raise
            except Exception as error:
                add_note(error, f"(while running {what})")
                raise

    def check_leaks(self, values: Sequence[Any]) -> None:
        """BadRefcount when repeated calls of the C code leave allocated
        blocks behind, or when any of them gets a reference count wrong (a
        mistake made only on some calls shows here)."""
        thunk, node = self.thunks[_C], self.node
        copies = [copy.deepcopy(v) for v in values]
        positions = range(len(copies))
        check_blocks(node, lambda: call_counted(thunk, node, copies, None, positions))

    def __repr__(self) -> str:
        return f"NodeCheck({describe_node(self.node)})"


def _has_non_finite(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return False
    return not bool(np.all(np.isfinite(value)))


def values_eq_approx(variable: Any) -> Any:
    """How two values of ``variable`` are compared: its tag's
    ``values_eq_approx`` when its op set one (as PyTensor's ``AllocEmpty``
    does, whose values are any), else its type's."""
    tag = getattr(variable, "tag", None)
    return getattr(tag, "values_eq_approx", None) or variable.type.values_eq_approx

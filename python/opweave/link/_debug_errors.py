"""The errors DebugMode raises, all subclasses of :class:`DebugModeError`.

Each message names the op, the node and its inputs; the values involved are
kept as attributes. The constructors take PyTensor's arguments.
"""

from __future__ import annotations

from typing import Any

from opweave.errors import OpweaveError

__all__ = [
    "BadDestroyMap",
    "BadRefcount",
    "BadThunkOutput",
    "BadViewMap",
    "DebugModeError",
    "InvalidValueError",
    "describe_node",
]

_MAX_VALUE_TEXT = 600


def describe_node(node: Any) -> str:
    """``op <op>, node <op>(<name>: <type>, ...)`` (unnamed inputs show
    their type only)."""
    if node is None:
        return "a graph input"
    inputs = ", ".join(f"{v.name}: {v.type}" if v.name else str(v.type) for v in node.inputs)
    return f"op {node.op}, node {node.op}({inputs})"


def _show(value: Any) -> str:
    text = repr(value)
    if len(text) > _MAX_VALUE_TEXT:
        text = text[: _MAX_VALUE_TEXT // 2] + " ... " + text[-_MAX_VALUE_TEXT // 2 :]
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    kind = f" (shape {shape}, dtype {dtype})" if shape is not None and dtype is not None else ""
    return text + kind


class DebugModeError(OpweaveError):
    """An op broke one of the rules DebugMode checks."""


class BadThunkOutput(DebugModeError):
    """Two runs of one node disagree, by the output type's
    ``values_eq_approx``: ``perform`` and the C code, or a run with a
    preallocated output and the reference run."""

    def __init__(
        self,
        r: Any,
        thunk1: str = "perform",
        val1: Any = None,
        thunk2: str = "c_code",
        val2: Any = None,
        inputs_val: Any = (),
    ) -> None:
        self.r, self.thunk1, self.val1, self.thunk2, self.val2 = r, thunk1, val1, thunk2, val2
        self.inputs_val = list(inputs_val)
        node = getattr(r, "owner", None)
        position = node.outputs.index(r) if node is not None else 0
        lines = [
            f"{thunk1} and {thunk2} disagree on output {position} ({r}: {r.type}) of "
            f"{describe_node(node)}",
            f"  {thunk1}: {_show(val1)}",
            f"  {thunk2}: {_show(val2)}",
        ]
        for index, value in enumerate(self.inputs_val):
            lines.append(f"  input {index}: {_show(value)}")
        super().__init__("\n".join(lines))


class BadDestroyMap(DebugModeError):
    """A thunk modified an input that its op's ``destroy_map`` does not
    declare."""

    def __init__(
        self, node: Any, idx: int, old_val: Any, new_val: Any, perform: str = "c_code"
    ) -> None:
        self.node, self.idx, self.old_val, self.new_val, self.perform = (
            node,
            idx,
            old_val,
            new_val,
            perform,
        )
        variable = node.inputs[idx]
        super().__init__(
            f"{perform} of {describe_node(node)} modified input {idx} ({variable}), which "
            f"{type(node.op).__name__}.destroy_map does not declare "
            f"(destroy_map = {getattr(node.op, 'destroy_map', {})})\n"
            f"  before: {_show(old_val)}\n  after:  {_show(new_val)}"
        )


class BadViewMap(DebugModeError):
    """An output shares memory with an input, or with another output,
    without a ``view_map`` (or ``destroy_map``) entry that says so."""

    def __init__(
        self,
        node: Any,
        output_idx: int,
        out_storage: Any,
        in_alias_idx: int | None = None,
        out_alias_idx: int | None = None,
        thunk: str = "c_code",
    ) -> None:
        self.node, self.output_idx, self.out_storage = node, output_idx, out_storage
        self.in_alias_idx, self.out_alias_idx, self.thunk = in_alias_idx, out_alias_idx, thunk
        if in_alias_idx is not None:
            other = f"input {in_alias_idx} ({node.inputs[in_alias_idx]})"
        else:
            other = f"output {out_alias_idx} ({node.outputs[out_alias_idx]})"
        super().__init__(
            f"output {output_idx} ({node.outputs[output_idx]}) of {thunk} of "
            f"{describe_node(node)} shares memory with {other}, which "
            f"{type(node.op).__name__}.view_map does not declare "
            f"(view_map = {getattr(node.op, 'view_map', {})})"
        )


class InvalidValueError(DebugModeError):
    """A value its type rejects (wrong type, dtype or number of dimensions),
    or, with ``check_isfinite``, a NaN or an infinity in a float output."""

    def __init__(
        self,
        r: Any,
        v: Any = None,
        client_node: Any = None,
        hint: str = "none",
        specific_hint: str = "none",
        *,
        value_seen: bool = True,
    ) -> None:
        self.r, self.v, self.client_node = r, v, client_node
        self.hint, self.specific_hint = hint, specific_hint
        node = getattr(r, "owner", None) or client_node
        # A value the output type's C code refused never reaches Python:
        # the reason above is all there is to show.
        shown = _show(v) if value_seen else "not seen (refused in C, before it reached Python)"
        super().__init__(
            f"invalid value for {r} ({r.type}), from {describe_node(node)}: {hint}"
            + (f" ({specific_hint})" if specific_hint != "none" else "")
            + f"\n  value: {shown}"
        )


class BadRefcount(DebugModeError):
    """The C code of a node leaked or over-released a Python reference:
    an input's count did not come back, an output holds references other
    than its storage's, or the interpreter's allocated blocks grow with the
    number of calls."""

    def __init__(self, node: Any, variable: Any, problem: str, thunk: str = "c_code") -> None:
        self.node, self.variable, self.problem, self.thunk = node, variable, problem, thunk
        named = f" {variable}" if variable is not None else ""
        super().__init__(f"{thunk} of {describe_node(node)}:{named} {problem}")

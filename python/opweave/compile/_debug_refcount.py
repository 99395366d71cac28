"""DebugMode's reference-count checks around a node's C code.

Around every call of a C thunk, :func:`call_counted` holds a few extra
references to each input and each offered output, so that C code which
releases a reference it did not own (an over-release) cannot free an object
the caller still uses; the deficit is repaired before the error is raised.
After the call:

- each output must be held only by the list of results (and by outputs that
  are views of it), plus whatever held it before if it is an input;
- each input's count must be what it was, plus the references the outputs
  hold to it (being it, or a view whose ``base`` it is).

:func:`check_blocks` calls a thunk repeatedly and fails when
``sys.getallocatedblocks()`` grows with the number of calls: a leak inside
the C code (a temporary that is never released) shows there, even when it
happens only on every other call. DebugMode makes each of those calls
through :func:`call_counted`, so that a reference leaked or over-released
only on some calls (a static toggle) is seen, on every call of the
function, and an over-release never frees an object.

Objects whose counts are not real are left out: immortal objects, and on
Python versions without immortality the interpreter's shared singletons
(None, booleans, small integers, empty strings and tuples, types).
"""

from __future__ import annotations

import ctypes
import gc
import sys
from collections.abc import Callable, Sequence
from typing import Any

from opweave.link._debug_errors import BadRefcount

__all__ = ["call_counted", "check_blocks", "has_real_refcount"]

_GUARD_REFERENCES = 4
_IMMORTAL_FLOOR = 1 << 29  # immortal objects have counts far above this
_BLOCK_WINDOW = 16
_BLOCK_WINDOWS = 3
# A leak of one block every this many calls is caught (every call, every
# other call, ...): each window must grow by at least _BLOCK_WINDOW / this.
_BLOCK_PERIOD = 4
_BLOCK_WARMUP = 3


def has_real_refcount(value: Any) -> bool:
    """False for objects whose reference count means nothing to compare."""
    if value is None or value is Ellipsis or value is NotImplemented:
        return False
    if isinstance(value, (bool, type)):
        return False
    if type(value) is int and -5 <= value <= 256:
        return False
    if type(value) in (str, bytes, tuple) and len(value) <= 1:
        return False
    is_immortal = getattr(sys, "_is_immortal", None)
    if is_immortal is not None and is_immortal(value):
        return False
    return sys.getrefcount(value) < _IMMORTAL_FLOOR


def _repair(value: Any, missing: int) -> None:
    """Gives ``value`` back the ``missing`` references C code released."""
    for _ in range(missing):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(value))


def _held_by(value: Any, outputs: Sequence[Any]) -> int:
    """References ``outputs`` hold to ``value``: slots holding it, and
    outputs whose ``base`` it is."""
    return sum(1 for o in outputs if o is value) + sum(
        1 for o in outputs if getattr(o, "base", None) is value and o is not value
    )


def call_counted(
    thunk: Callable[..., list[Any]],
    node: Any,
    inputs: list[Any],
    offered: list[Any] | None,
    positions: Sequence[int],
) -> list[Any]:
    """``thunk(inputs, offered)`` with its reference counts checked.
    ``positions`` maps each of ``inputs`` to the node input it stands for."""
    watched = [v for v in [*inputs, *(offered or ())] if has_real_refcount(v)]
    guard = [list(watched) for _ in range(_GUARD_REFERENCES)]  # held across the call
    # Each count below includes the loop variable and getrefcount's argument.
    before = {id(v): sys.getrefcount(v) for v in watched}
    outputs = thunk(inputs, offered)
    for index in range(len(outputs)):  # not enumerate: its cached tuple holds a reference
        value = outputs[index]
        if not has_real_refcount(value):
            continue
        expected = _held_by(value, outputs) + before.get(id(value), 2)
        actual = sys.getrefcount(value)
        if actual != expected:
            _raise(node, node.outputs[index], value, actual - expected, "output")
    for value in watched:
        expected = before[id(value)] + _held_by(value, outputs)
        actual = sys.getrefcount(value)
        if actual != expected:
            what = _input_name(node, value, inputs, positions)
            _raise(node, what, value, actual - expected, "input")
    del guard
    return outputs


def _input_name(node: Any, value: Any, inputs: list[Any], positions: Sequence[int]) -> Any:
    for own, position in zip(inputs, positions, strict=False):
        if own is value:
            return node.inputs[position]
    return None  # an offered output


def _raise(node: Any, variable: Any, value: Any, excess: int, role: str) -> None:
    if excess < 0:
        _repair(value, -excess)
        problem = (
            f"(an {role}) lost {-excess} reference(s) it did not give away: the C code "
            "released a reference it did not own (a Py_DECREF of a borrowed reference?)"
        )
    elif role == "output":
        problem = (
            f"(an output) holds {excess} reference(s) besides its storage: the C code "
            "leaked a reference to it (a Py_INCREF too many, or a new reference stored "
            "twice?)"
        )
    else:
        problem = (
            f"(an input) holds {excess} more reference(s) after the call: the C code "
            "leaked a reference to it (a Py_INCREF without its Py_DECREF?)"
        )
    raise BadRefcount(node, variable, problem)


def check_blocks(node: Any, call: Callable[[], Any]) -> None:
    """Fails when ``call()`` keeps leaving allocated blocks behind: every one
    of a few windows of calls grows by at least one block per
    ``_BLOCK_PERIOD`` calls, so that C code leaking on every call, or only on
    every other call, is caught, while a correct op's counts settle after the
    first calls."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(_BLOCK_WARMUP):
            call()
        growth = []
        for _ in range(_BLOCK_WINDOWS):
            start = sys.getallocatedblocks()
            for _ in range(_BLOCK_WINDOW):
                call()
            growth.append(sys.getallocatedblocks() - start)
    finally:
        if enabled:
            gc.enable()
    if min(growth) * _BLOCK_PERIOD >= _BLOCK_WINDOW:
        per_call = min(growth) / _BLOCK_WINDOW  # the steady rate, past any first growth
        runs = ", ".join(str(g) for g in growth)
        raise BadRefcount(
            node,
            None,
            f"leaks memory: the interpreter's allocated blocks grow by {per_call:.2f} per call "
            f"({runs} over {_BLOCK_WINDOWS} runs of {_BLOCK_WINDOW} calls); the C code "
            "creates Python objects it never releases",
        )

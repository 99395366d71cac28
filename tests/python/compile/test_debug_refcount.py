"""DebugMode's reference-count and leak checks (compile/_debug_refcount.py)
on C code that gets it wrong only on some calls: a static counter in the
op's code makes the mistake on every other call, whatever the phase the
counter is in when the function is called."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest
from support.debug_ops import DOUBLE_REUSING, FRESH_COPY, COnlyOp, vector

import opweave
import opweave.tensor as pt
from opweave.compile.debugmode import BadRefcount, DebugMode


def _every_other_call(statement: str) -> str:
    """C running ``statement`` on every second call (a static toggle)."""
    return "{ static int calls = 0; if ((++calls & 1) == 0) { " + statement + " } }\n"


def _function(label, body, **options):
    x = pt.dvector("x")
    return opweave.function([x], COnlyOp(label, body)(x), mode=DebugMode(**options))


LEAKS_INPUT = FRESH_COPY + _every_other_call("Py_INCREF(%(x)s);")
LEAKS_TEMPORARY = FRESH_COPY + _every_other_call(
    "PyObject* leaked = PyLong_FromLong(1000000 + PyArray_SIZE(%(x)s)); (void)leaked;"
)
OVER_RELEASES = FRESH_COPY + _every_other_call("Py_DECREF(%(x)s);")


@pytest.mark.parametrize("calls", [1, 2, 3])
def test_a_reference_leaked_on_every_other_call_is_caught_on_any_call(calls):
    # Each function is checked from a different phase of the toggle (the
    # module, and its static, is shared by the functions of one process).
    for _ in range(calls - 1):
        _function("LeaksInputSometimes", LEAKS_INPUT, check_refcounts=False)(vector([1]))
    f = _function("LeaksInputSometimes", LEAKS_INPUT)
    for _ in range(2):
        with pytest.raises(BadRefcount) as caught:
            f(vector([1, 2]))
        assert "holds 1 more reference" in str(caught.value)
        assert "LeaksInputSometimes" in str(caught.value)


def test_a_temporary_leaked_on_every_other_call_grows_the_blocks():
    f = _function("LeaksTemporarySometimes", LEAKS_TEMPORARY)
    with pytest.raises(BadRefcount, match=r"allocated blocks grow by 0\.50 per call") as caught:
        f(vector([1, 2]))
    assert caught.value.variable is None
    # Without the check, the (leaky) op still computes.
    unchecked = _function("LeaksTemporarySometimes", LEAKS_TEMPORARY, check_refcounts=False)
    np.testing.assert_array_equal(unchecked(vector([1, 2])), [1, 2])


def test_an_over_release_on_every_other_call_is_caught_and_repaired():
    values = vector([5, 6])
    count = sys.getrefcount(values)
    f = _function("OverReleasesSometimes", OVER_RELEASES)
    for _ in range(3):
        with pytest.raises(BadRefcount, match="lost 1 reference"):
            f(values)
    gc.collect()
    assert sys.getrefcount(values) == count
    np.testing.assert_array_equal(values + 1, [6, 7])


def test_correct_ops_pass_the_repeated_checks():
    for label, body, expected in (
        ("FreshCopy", FRESH_COPY, [1, 2, 3]),
        ("DoubleReusing", DOUBLE_REUSING, [2, 4, 6]),
    ):
        f = _function(label, body, check_preallocated_output=["ALL"])
        for _ in range(3):
            np.testing.assert_array_equal(f(vector([1, 2, 3])), expected)


@pytest.mark.parametrize(
    ("period", "rate"), [(1, "1.00"), (2, "0.50"), (3, "0.31"), (4, "0.25"), (1000, None)]
)
def test_check_blocks_catches_one_block_kept_every_few_calls(period, rate):
    import itertools

    from opweave.compile._debug_refcount import check_blocks

    node = COnlyOp("Probe", FRESH_COPY)(pt.dvector("x")).owner
    kept: list[object] = []
    counter = itertools.count()

    def call() -> None:
        if next(counter) % period == 0:
            kept.append(object())

    if rate is not None:
        with pytest.raises(BadRefcount, match=f"grow by {rate} per call"):
            check_blocks(node, call)
    else:
        check_blocks(node, call)

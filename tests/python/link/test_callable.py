"""opweave.link.callable and graph ABI v2: a compiled Function offered
output storage (a preallocated output) reuses it; the one fallback path."""

from __future__ import annotations

import numpy as np
import pytest
from support.debug_ops import DOUBLE_REUSING, FRESH_COPY, COnlyOp

import opweave
import opweave.tensor as pt
from opweave.link.basic import PerformLinker
from opweave.link.callable import InputBinding


def compiled(body: str, label: str):
    x = pt.dvector("x")
    return opweave.function([x], [COnlyOp(label, body)(x)], name=label)


def test_an_offered_output_that_fits_is_written_in_place():
    f = compiled(DOUBLE_REUSING, "ReusesOffered")
    offered = np.full(3, np.nan)
    (result,) = f.call_with_outputs([np.arange(3.0)], [offered])
    assert result is offered
    np.testing.assert_array_equal(offered, [0, 2, 4])


def test_an_offered_output_that_does_not_fit_is_replaced_and_released():
    import sys

    f = compiled(DOUBLE_REUSING, "ReplacesOffered")
    offered = np.zeros(5)
    count = sys.getrefcount(offered)
    (result,) = f.call_with_outputs([np.arange(3.0)], [offered])
    assert result is not offered and sys.getrefcount(offered) == count
    np.testing.assert_array_equal(result, [0, 2, 4])
    np.testing.assert_array_equal(offered, np.zeros(5))


def test_none_offers_nothing_and_ordinary_calls_never_share_outputs():
    f = compiled(FRESH_COPY, "FreshEachCall")
    (a,) = f.call_with_outputs([np.arange(2.0)], [None])
    (b,), (c,) = f(np.arange(2.0)), f(np.arange(2.0))
    assert b is not c
    np.testing.assert_array_equal(a, [0, 1])


def test_call_with_outputs_checks_its_arguments():
    f = compiled(FRESH_COPY, "Checked")
    with pytest.raises(TypeError, match="expected 1 outputs, got 2"):
        f.call_with_outputs([np.arange(2.0)], [None, None])
    with pytest.raises(TypeError, match="expected 1 inputs, got 0"):
        f.call_with_outputs([], [None])
    with pytest.raises(TypeError, match="2 arguments"):
        f.call_with_outputs([np.arange(2.0)])


def test_input_binding_names_the_inputs():
    x, y = pt.dvector("x"), pt.dvector("y")
    binding = InputBinding([x, y], "function 'f'")
    assert binding.bind([1], {"y": 2}) == [1, 2]
    with pytest.raises(TypeError, match="has no input named 'z'; its inputs: x, y"):
        binding.bind([], {"z": 1})
    with pytest.raises(TypeError, match=r"bad argument for input 1 \('y'\)"):
        binding.filter([[1.0], "text"])


def test_the_perform_linker_is_mode_py():
    from support.debug_ops import DebugOp, double_perform

    from opweave.compile.mode import Mode

    x = pt.dvector("x")
    op = DebugOp("PerformTwice", None, double_perform)
    fn = opweave.function([x], op(x), mode=Mode(PerformLinker()))
    assert fn.mode.linker_name == "py"
    np.testing.assert_array_equal(fn(np.arange(3.0)), [0, 2, 4])
    with pytest.raises(Exception, match="defines no perform"):
        opweave.function([x], COnlyOp("NoPerform", FRESH_COPY)(x), mode="py")

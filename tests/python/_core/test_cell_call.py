"""opweave._core.CellCall: a function bound to storage cells, as PyTensor's
Function calls its virtual machine; and Function.free()."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest
from opweave.examples.vector_times_scalar import VectorTimesScalar
from opweave.examples.vector_times_vector import VectorTimesVector

from opweave import _core, function
from opweave.tensor import dscalar, dvector


def test_reads_the_input_cells_and_writes_the_output_cells() -> None:
    inputs, outputs = ([1],), ([None], [None])
    call = _core.CellCall(lambda a: [a + 1, a * 2], inputs, outputs)
    assert call() == [2, 2]
    inputs[0][0] = 5
    assert call() == [6, 10]
    assert outputs[0][0] == 6 and outputs[1][0] == 10
    assert call.position_of_error == -1


def test_a_failure_sets_position_of_error_from_failed_node() -> None:
    def fails(a: int) -> list[int]:
        error = ValueError("bad")
        error.failed_node = 3  # type: ignore[attr-defined]
        raise error

    call = _core.CellCall(fails, ([1],), ([None],))
    with pytest.raises(ValueError, match="bad"):
        call()
    assert call.position_of_error == 3
    call2 = _core.CellCall(lambda a: 1 / 0, ([1],), ([None],))
    with pytest.raises(ZeroDivisionError):
        call2()
    assert call2.position_of_error == -1


def test_bad_cells_and_results_raise() -> None:
    with pytest.raises(TypeError):
        _core.CellCall(len, ([],), ())
    with pytest.raises(TypeError):
        _core.CellCall(len, [[1]], ())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.CellCall(42, ([1],), ())  # type: ignore[arg-type]
    call = _core.CellCall(lambda a: (a,), ([1],), ([None],))
    with pytest.raises(TypeError, match="not a list"):
        call()
    with pytest.raises(TypeError, match="no arguments"):
        call(1)  # type: ignore[call-arg]
    cells = ([1],)
    call = _core.CellCall(lambda a: [a], cells, ([None],))
    cells[0].clear()
    with pytest.raises(TypeError, match="no longer a list"):
        call()


def test_many_inputs_and_attributes_and_no_leak() -> None:
    values = [np.arange(3.0) + k for k in range(40)]
    cells = tuple([v] for v in values)
    call = _core.CellCall(lambda *a: [sum(a)], cells, ([None],))
    call.nodes = ["n"]  # instances take attributes
    before = [sys.getrefcount(v) for v in values]
    for _ in range(10):
        result = call()
    del result
    gc.collect()
    assert [sys.getrefcount(v) for v in values] == before
    assert call.nodes == ["n"]


def test_a_compiled_function_bound_to_cells() -> None:
    x, a = dvector("x"), dscalar("a")
    fn = function([x, a], [VectorTimesScalar()(x, a), VectorTimesVector()(x, x)])
    cells = ([np.arange(3.0)], [np.float64(2.0)])
    out = ([None], [None])
    call = _core.CellCall(fn, cells, out)
    got = call()
    np.testing.assert_array_equal(got[0], [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(out[1][0], [0.0, 1.0, 4.0])


def test_free_recreates_the_graph_and_keeps_its_results() -> None:
    x, a = dvector("x"), dscalar("a")
    inner = VectorTimesVector()(x, x)  # an intermediate the module keeps between calls
    fn = function([x, a], VectorTimesScalar()(inner, a))
    np.testing.assert_array_equal(fn(np.arange(3.0), 2.0), [0.0, 2.0, 8.0])
    for _ in range(3):
        fn.free()
        np.testing.assert_array_equal(fn(np.ones(2), 3.0), [3.0, 3.0])
    assert function([x, a], VectorTimesScalar()(x, a), mode="py").free() is None


def test_updates_feed_outputs_back_into_input_cells_after_the_call() -> None:
    inputs, outputs = ([1], [10]), ([None], [None])
    call = _core.CellCall(lambda a, b: [a + b, b * 2], inputs, outputs, ((1, 1),))
    assert call.updates == ((1, 1),)
    assert call() == [11, 20]  # the outputs are those of the call, before the update
    assert inputs[1][0] == 20 and inputs[0][0] == 1
    assert call() == [21, 40] and inputs[1][0] == 40
    cases = [(((2, 0),), ValueError), ((("1", 0),), TypeError), ([(0, 0)], TypeError)]
    for bad, error in cases:
        with pytest.raises(error):
            _core.CellCall(lambda a, b: [a, b], inputs, outputs, bad)

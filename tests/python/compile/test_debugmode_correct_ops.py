"""Every correct op of the examples and of the package passes DebugMode,
with every preallocated kind, and returns the values the C mode returns."""

from __future__ import annotations

import numpy as np
import pytest

import opweave
import opweave.tensor as pt
from opweave.compile.debugmode import DebugMode

ALL = DebugMode(check_preallocated_output=["ALL"])


def same_results(inputs, outputs, *values, calls=2):
    """Runs the graph in C mode and in DebugMode (twice, so that
    ``previous`` offers real previous outputs) and compares."""
    expected = opweave.function(inputs, outputs)(*values)
    checked = opweave.function(inputs, outputs, mode=ALL)
    for _ in range(calls):
        got = checked(*values)
        if isinstance(expected, list):
            assert len(got) == len(expected)
            for a, b in zip(got, expected, strict=True):
                np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_array_equal(got, expected)


def test_vector_times_vector_examples():
    from opweave.examples.vector_times_vector import build

    a, b = np.arange(3.0), np.array([2.0, 4.0, 6.0])
    single, mixed, chained = build(ALL)
    np.testing.assert_array_equal(single(a, b), a * b)
    ints, floats = np.array([1, 2, 3], dtype="int32"), np.array([0.5, 1, 2], dtype="float32")
    first, second = mixed(ints, floats, a, b)
    np.testing.assert_allclose(first, ints * floats)
    np.testing.assert_array_equal(second, a * b)
    np.testing.assert_array_equal(chained(a, b, a), a * b * a)


def test_external_vector_times_vector_example():
    from opweave.examples.external_vector_times_vector import VectorTimesVector

    x, y = pt.fvector("x"), pt.vector("y", dtype="int16")
    same_results(
        [x, y],
        VectorTimesVector()(x, y),
        np.arange(4, dtype="float32"),
        np.arange(4, dtype="int16"),
    )


def test_vector_times_scalar_example():
    from opweave.examples.vector_times_scalar import VectorTimesScalar

    x, y = pt.dvector("x"), pt.dscalar("y")
    same_results([x, y], VectorTimesScalar()(x, y), np.array([1.0, 2.0, 3.0]), 2.0)


@pytest.mark.parametrize("name", ["Quadratic", "QuadraticExternal"])
def test_quadratic_examples_with_params(name):
    from opweave.examples import quadratic

    op_class = getattr(quadratic, name)
    x = pt.dmatrix("x")
    outputs = [op_class(1, 0, 0)(x), op_class(0, 2, -1)(x)]
    same_results([x], outputs, np.arange(6.0).reshape(2, 3))


def test_double_ops_example_with_its_own_type():
    from opweave.examples.double_ops import build

    f, g = build(ALL)
    assert f(1.0, 2.0, 3.0) == 9.0
    assert g(5.0, 1.0) == 4.0 / 7.0


def test_builtin_shape_view_and_deep_copy_ops():
    from opweave.compile.ops import deep_copy_op, view_op
    from opweave.tensor.shape import shape, shape_i

    x = pt.dmatrix("x")
    value = np.arange(6.0).reshape(3, 2)
    same_results([x], [shape(x), shape_i(x, 1), view_op(x), deep_copy_op(x)], value)

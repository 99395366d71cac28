"""The params example (examples/quadratic.py): a COp and an ExternalCOp
whose coefficients are params, so one module serves every value."""

from __future__ import annotations

import numpy as np
import pytest
from opweave.examples.quadratic import Quadratic, QuadraticExternal
from support.helpers import compiled_modules

import opweave
from opweave.tensor import dmatrix


@pytest.mark.parametrize("op_class", [Quadratic, QuadraticExternal])
def test_coefficients_are_read_at_run_time_by_one_module(op_class) -> None:
    x = dmatrix("x")
    values = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    results = []
    for a, b, c in [(1.0, 0.0, 0.0), (2.0, -3.0, 0.5), (0.0, 0.0, 7.0)]:
        f = opweave.function([x], op_class(a, b, c)(x))
        np.testing.assert_allclose(f(values), a * values**2 + b * values + c)
        results.append(f.cache_outcome)
    assert results == ["built", "hit", "hit"]
    assert len(compiled_modules()) == 1
    py = opweave.function([x], op_class(2.0, -3.0, 0.5)(x), mode="py")
    np.testing.assert_allclose(py(values), 2.0 * values**2 - 3.0 * values + 0.5)


def test_two_param_values_in_one_graph_and_in_the_per_node_linker() -> None:
    x = dmatrix("x")
    values = np.arange(4.0).reshape(2, 2)
    f = opweave.function([x], [QuadraticExternal(1, 0, 0)(x), Quadratic(0, 1, 1)(x)])
    squares, lines = f(values)
    np.testing.assert_allclose(squares, values**2)
    np.testing.assert_allclose(lines, values + 1)
    g = opweave.function([x], QuadraticExternal(0, 0, 2)(QuadraticExternal(1, 1, 0)(x)), "c|py")
    np.testing.assert_allclose(g(values), np.full((2, 2), 2.0))
    # Params are data, not code: the module of one QuadraticExternal node on
    # float64 matrices serves every params value.
    opweave.function([x], QuadraticExternal(5, 5, 5)(x), mode="c|py")
    before = len(compiled_modules())
    h = opweave.function([x], QuadraticExternal(0, 2, 0)(x), mode="c|py")
    assert len(compiled_modules()) == before and h.node_outcomes == ["hit"]
    np.testing.assert_allclose(h(values), 2 * values)

"""The infer_shape rewrite: shapes of an op's outputs without running it."""

from __future__ import annotations

import numpy as np
import pytest

from opweave.compile.function import function
from opweave.compile.mode import Mode
from opweave.compile.ops import wrap_py
from opweave.tensor import dmatrix, dvector
from opweave.tensor.shape import Shape_i, shape, shape_i

calls: list[str] = []


def _same_as_second(node, input_shapes):
    return [input_shapes[1]]


@wrap_py([dmatrix, dvector], dvector, _same_as_second)
def flat_plus(x, y):
    calls.append("flat_plus")
    return np.ravel(x) + y


@wrap_py(dvector, dvector, lambda node, shapes: [shapes[0]])
def doubled(v):
    calls.append("doubled")
    return v * 2


@wrap_py(dvector, dvector)
def no_infer_shape(v):
    calls.append("no_infer_shape")
    return v


@wrap_py(dvector, dvector, lambda node, shapes: [(7,)])
def seven(v):
    calls.append("seven")
    return np.zeros(7)


@pytest.fixture(autouse=True)
def _clear_calls():
    calls.clear()


@pytest.mark.parametrize("mode", [None, "c|py", "py"])
def test_the_shape_of_an_output_is_computed_without_the_op(mode) -> None:
    x, y = dmatrix("x"), dvector("y")
    out = flat_plus(x, y)
    f = function([x, y], [shape(out), shape_i(out, 0)], mode=mode)
    whole, first = f(np.ones((2, 2)), np.ones(4))
    assert whole.tolist() == [4] and int(first) == 4
    assert calls == []
    assert not any(node.op is flat_plus for node in f.fgraph.apply_nodes)


def test_a_chain_of_shape_keeping_ops_resolves_to_the_first_input() -> None:
    v = dvector("v")
    f = function([v], [shape(doubled(doubled(v))), Shape_i(0)(doubled(v))])
    whole, first = f(np.ones(3))
    assert whole.tolist() == [3] and int(first) == 3 and calls == []


def test_static_lengths_become_constants() -> None:
    v = dvector("v")
    f = function([v], shape(seven(v)))
    assert f(np.ones(2)).tolist() == [7] and calls == []


def test_an_op_without_infer_shape_still_runs() -> None:
    v = dvector("v")
    f = function([v], shape(no_infer_shape(v)))
    assert f(np.ones(5)).tolist() == [5] and calls == ["no_infer_shape"]


def test_the_rewrite_is_off_without_rewrites_and_keeps_values() -> None:
    v = dvector("v")
    f = function([v], [doubled(v), shape(doubled(v))], mode=Mode("c|py", optimizer=None))
    value, whole = f(np.ones(2))
    assert value.tolist() == [2.0, 2.0] and whole.tolist() == [2]
    assert calls == ["doubled", "doubled"]


def test_a_wrong_number_of_dimensions_is_an_error() -> None:
    @wrap_py(dvector, dvector, lambda node, shapes: [(1, 2)])
    def bad(v):
        return v

    v = dvector("v")
    with pytest.raises(ValueError, match="gave 2 dimensions"):
        function([v], shape(bad(v)))

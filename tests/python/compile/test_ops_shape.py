"""The built-in shape ops in every mode: Shape (the whole shape, an int64
vector) and Shape_i (one dimension), their checks, params and folding, and
one compiled module for every Shape_i index."""

from __future__ import annotations

import numpy as np
import pytest

import opweave
import opweave.scalar as ps
from opweave.compile.ops import (
    deep_copy_op,
    view_op,
)
from opweave.link.c.cmodule import get_module_cache
from opweave.tensor import TensorType, constant, dmatrix, dtensor3, dvector
from opweave.tensor.shape import (
    Shape,
    Shape_i,
    shape,
)

from .test_ops import MODES, TENSOR_IDS, TENSOR_VALUES, LyingOutput, run


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tensor_type", "value"),
    [*TENSOR_VALUES, (dtensor3, np.zeros((2, 0, 5)))],
    ids=[*TENSOR_IDS, "dtensor3"],
)
def test_shape_is_an_int64_vector_of_the_dims(mode, tensor_type, value) -> None:
    x = tensor_type("x")
    result = run([x], shape(x), mode, value)
    assert result.dtype == np.int64
    np.testing.assert_array_equal(result, value.shape)
    assert result.shape == (value.ndim,)


@pytest.mark.parametrize("mode", MODES)
def test_shape_of_an_intermediate_changes_with_the_input(mode) -> None:
    x = dmatrix("x")
    f = opweave.function([x], view_op(shape(deep_copy_op(x))), mode=mode)
    first = f(np.zeros((2, 3)))
    second = f(np.zeros((4, 1)))
    np.testing.assert_array_equal(first, [2, 3])
    np.testing.assert_array_equal(second, [4, 1])


def test_shape_make_node() -> None:
    node = shape.make_node(dtensor3("x"))
    assert node.outputs[0].type == TensorType("int64", shape=(3,))
    constant_node = Shape().make_node(np.zeros((2, 5)))
    assert constant_node.inputs[0].data.shape == (2, 5)
    assert Shape.check_input is False


def test_folding_a_shape_of_a_constant_compiles_nothing_for_it() -> None:
    f = opweave.function([], shape(constant(np.zeros((2, 3)))), mode="c")
    np.testing.assert_array_equal(f(), [2, 3])
    # Only the function's own module was built: the fold ran perform.
    assert len([e for e in get_module_cache().list() if e.kind == "module"]) == 1
    for op in (view_op, deep_copy_op, shape, Shape_i(0)):
        assert op.python_constant_folding(None) is True


@pytest.mark.parametrize("mode", MODES)
def test_shape_i_gives_each_dimension(mode) -> None:
    x = dtensor3("x")
    f = opweave.function([x], [Shape_i(i)(x) for i in range(3)], mode=mode)
    for value in (np.zeros((2, 3, 4)), np.zeros((5, 0, 1))):
        results = f(value)
        for i, result in enumerate(results):
            assert isinstance(result, np.ndarray)
            assert result.dtype == np.int64 and result.shape == ()
            assert int(result) == value.shape[i]


def test_shape_i_out_of_range_is_refused_by_make_node() -> None:
    with pytest.raises(IndexError, match="has 2 dimension"):
        Shape_i(2)(dmatrix("x"))
    with pytest.raises(IndexError, match="has 0 dimension"):
        Shape_i(0)(ps.float64("s"))


def test_c_shape_i_checks_the_input_ndim_at_run_time() -> None:
    # The graph's input is checked, but an intermediate is not: a 1-d array
    # posing as a matrix reaches Shape_i's C code, whose check part raises.
    x = dmatrix("x")
    f = opweave.function([x], Shape_i(1)(LyingOutput("ravel")(x)), mode="c")
    with pytest.raises(IndexError, match="dimension 1 asked of an input with 1 dimension"):
        f(np.zeros((3, 7)))
    g = opweave.function([x], Shape_i(0)(LyingOutput("ravel")(x)), mode="c")
    assert int(g(np.zeros((3, 7)))) == 21


def test_shape_i_perform_out_of_range() -> None:
    node = Shape_i(1).make_node(dmatrix("x"))
    with pytest.raises(IndexError, match="no dimension 1"):
        Shape_i(1).perform(node, [np.zeros(3)], [[None]])


def test_shape_i_props_and_arguments() -> None:
    assert Shape_i(1) == Shape_i(np.int64(1)) and hash(Shape_i(1)) == hash(Shape_i(1))
    assert Shape_i(1) != Shape_i(2)
    assert Shape_i.__props__ == ("i",)
    with pytest.raises(ValueError, match="non-negative"):
        Shape_i(-1)
    with pytest.raises(TypeError, match="integer"):
        Shape_i(1.5)
    node = Shape_i(0).make_node(dvector("x"))
    assert node.outputs[0].type == TensorType("int64", shape=())


def test_shape_i_params_type_holds_i_as_int64() -> None:
    from opweave.link.c.params_type import ParamsType

    op = Shape_i(2)
    assert isinstance(op.params_type, ParamsType)
    assert op.params_type == ParamsType(i=ps.int64)
    params = op.get_params(op.make_node(dtensor3("x")))
    assert params.i == 2 and type(params.i) is np.int64


def test_one_compiled_module_serves_every_shape_i_index() -> None:
    # i is data (the node's params), not part of the code.
    x = dtensor3("x")
    first = opweave.function([x], Shape_i(0)(x), mode="c")
    second = opweave.function([x], Shape_i(2)(x), mode="c")
    assert first.cache_outcome == "built" and second.cache_outcome == "hit"
    assert int(second(np.zeros((2, 3, 4)))) == 4


def test_shape_i_helper_uses_the_static_shape_or_the_op() -> None:
    from opweave.graph.basic import Constant
    from opweave.tensor.shape import shape_i

    x = TensorType("float64", shape=(3, None))("x")
    known = shape_i(x, 0)
    assert isinstance(known, Constant) and int(known.data) == 3
    unknown = shape_i(x, 1)
    assert isinstance(unknown.owner.op, Shape_i) and unknown.owner.op.i == 1
    f = opweave.function([x], [known, unknown])
    assert [int(v) for v in f(np.ones((3, 7)))] == [3, 7]

"""wrap_py and as_op: Python functions as ops."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from support.api_ops import elementwise_product, split_signs

from opweave.compile.function import function
from opweave.compile.ops import FromFunctionOp, as_op, wrap_py
from opweave.graph.basic import Apply
from opweave.tensor import dmatrix, dvector


def test_a_wrapped_function_runs_in_every_mode() -> None:
    @wrap_py(dmatrix, dvector)
    def flat_cumsum(x):
        return np.cumsum(x)

    x = dmatrix("x")
    for mode in (None, "c|py", "py", "DebugMode"):
        f = function([x], flat_cumsum(x), mode=mode)
        np.testing.assert_array_equal(f([[1.0, 2.0], [3.0, 4.0]]), [1.0, 3.0, 6.0, 10.0])
    with pytest.raises(Exception, match="no C implementation"):
        function([x], flat_cumsum(x), mode="C")


def test_several_inputs_and_outputs() -> None:
    a, b, v = dmatrix("a"), dmatrix("b"), dvector("v")
    f = function([a, b], elementwise_product(a, b))
    np.testing.assert_array_equal(f([[2.0]], [[3.0]]), [[6.0]])
    g = function([v], split_signs(v))
    positive, negative = g(np.array([-1.0, 2.0]))
    np.testing.assert_array_equal(positive, [0.0, 2.0])
    np.testing.assert_array_equal(negative, [-1.0, 0.0])


def test_inputs_are_checked_against_itypes() -> None:
    with pytest.raises(TypeError, match="input 0 must be of type"):
        elementwise_product(dvector("x"), dmatrix("y"))


def test_as_op_is_the_deprecated_spelling() -> None:
    with pytest.warns(FutureWarning, match="wrap_py"):

        @as_op(dvector, dvector)
        def negate(x):
            return -x

    assert isinstance(negate, FromFunctionOp)
    x = dvector("x")
    np.testing.assert_array_equal(function([x], negate(x))(np.array([1.0])), [-1.0])


def test_module_level_ops_and_their_graphs_pickle() -> None:
    a, b = dmatrix("a"), dmatrix("b")
    product = elementwise_product(a, b)
    assert pickle.loads(pickle.dumps(elementwise_product)) is elementwise_product
    again = pickle.loads(pickle.dumps(product))
    assert again.owner.op == product.owner.op
    assert [v.type for v in again.owner.inputs] == [dmatrix, dmatrix]


def test_a_local_op_does_not_pickle() -> None:
    @wrap_py(dvector, dvector)
    def local(x):
        return x

    with pytest.raises(pickle.PicklingError, match="top level of a module"):
        pickle.dumps(local)


def test_infer_shape_is_the_one_given() -> None:
    def shapes(node, input_shapes):
        return [input_shapes[1]]

    @wrap_py([dmatrix, dvector], dvector, shapes)
    def offset(x, y):
        return np.cumsum(x) + y

    node = offset(dmatrix("x"), dvector("y")).owner
    assert isinstance(node, Apply)
    assert offset.infer_shape(None, node, [(2, 2), (4,)]) == [(4,)]
    assert offset == offset and hash(offset) == hash(offset)
    with pytest.raises(NotImplementedError):
        elementwise_product.infer_shape(None, node, [])

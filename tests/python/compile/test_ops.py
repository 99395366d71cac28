"""The built-in ops DeepCopyOp and ViewOp, run compiled ("c") and in Python
("py"); Shape and Shape_i are in test_ops_shape.py, the per-type C-code
registries in test_ops_registries.py."""

from __future__ import annotations

import numpy as np
import pytest

import opweave
import opweave.scalar as ps
from opweave.compile.ops import (
    DeepCopyOp,
    ViewOp,
    deep_copy_op,
    view_op,
)
from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.tensor import dmatrix, dscalar, dvector, ivector
from opweave.tensor.shape import (
    Shape_i,
    shape,
)

MODES = ["c", "c|py", "py"]
TENSOR_VALUES = [
    (dvector, np.array([1.5, -2.0, 3.25])),
    (dmatrix, np.arange(6.0).reshape(2, 3)),
    (ivector, np.array([7, -8, 9], dtype=np.int32)),
    (dscalar, np.array(4.5)),
]
TENSOR_IDS = ["dvector", "dmatrix", "ivector", "dscalar"]


class LyingOutput(COp):
    """A buggy op: its output claims its input's type, but its C code leaves
    it NULL ("null") or makes it a flattened 1-d copy ("ravel")."""

    __props__ = ("how",)

    def __init__(self, how: str) -> None:
        self.how = how

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        if self.how == "null":
            return f"Py_XDECREF({z});\n{z} = NULL;\n"
        return (
            f"Py_XDECREF({z});\n"
            f"{z} = (PyArrayObject*)PyArray_Ravel({x}, NPY_CORDER);\n"
            f"if (!{z}) {{ {sub['fail']} }}\n"
        )

    def c_code_cache_version(self):
        return (1,)


def run(inputs, outputs, mode, *args):
    return opweave.function(inputs, outputs, mode=mode)(*args)


# --- DeepCopyOp ----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("tensor_type", "value"), TENSOR_VALUES, ids=TENSOR_IDS)
def test_deep_copy_of_a_tensor_is_an_equal_unshared_array(mode, tensor_type, value) -> None:
    x = tensor_type("x")
    result = run([x], deep_copy_op(x), mode, value)
    assert isinstance(result, np.ndarray)
    assert result.dtype == value.dtype and result.shape == value.shape
    np.testing.assert_array_equal(result, value)
    assert result is not value
    assert not np.shares_memory(result, value)
    result[...] = 0  # the input is untouched by writes to the copy
    assert np.any(value != 0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scalar_type", [ps.float64, ps.int32, ps.complex128], ids=str)
def test_deep_copy_of_a_c_scalar(mode, scalar_type) -> None:
    s = scalar_type("s")
    value = scalar_type.numpy_dtype.type(-3)
    result = run([s], deep_copy_op(s), mode, value)
    assert type(result) is type(value)
    assert result == value


@pytest.mark.parametrize("mode", MODES)
def test_deep_copy_of_strided_and_fortran_inputs(mode) -> None:
    x = dmatrix("x")
    f = opweave.function([x], deep_copy_op(x), mode=mode)
    base = np.arange(24.0).reshape(4, 6)
    for value in (base[::2, 1::2], np.asfortranarray(base), base.T):
        result = f(value)
        np.testing.assert_array_equal(result, value)
        assert not np.shares_memory(result, base)


def test_c_deep_copy_reuses_its_output_across_calls_and_shape_changes() -> None:
    # The inner copy is an intermediate result: compiled code keeps its array
    # between calls and copies into it when the shape allows.
    x = dmatrix("x")
    f = opweave.function([x], deep_copy_op(deep_copy_op(x)), mode="c")
    rng = np.random.default_rng(0)
    for shape_ in [(2, 3), (2, 3), (3, 2), (1, 6), (0, 4), (4, 5), (4, 5)]:
        value = rng.standard_normal(shape_)
        result = f(value)
        assert result.shape == shape_
        np.testing.assert_array_equal(result, value)
        assert not np.shares_memory(result, value)


@pytest.mark.parametrize("mode", MODES)
def test_a_returned_view_of_a_copy_is_not_overwritten_by_the_next_call(mode) -> None:
    x = dvector("x")
    f = opweave.function([x], view_op(deep_copy_op(x)), mode=mode)
    first = f(np.array([1.0, 2.0]))
    second = f(np.array([3.0, 4.0]))
    third = f(np.array([5.0, 6.0, 7.0]))
    np.testing.assert_array_equal(first, [1.0, 2.0])
    np.testing.assert_array_equal(second, [3.0, 4.0])
    np.testing.assert_array_equal(third, [5.0, 6.0, 7.0])


@pytest.mark.parametrize("mode", MODES)
def test_deep_copy_converts_inexact_inputs_like_any_function(mode) -> None:
    x = dvector("x")
    f = opweave.function([x], deep_copy_op(x), mode=mode)
    result = f([1.0, 2.0])
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, [1.0, 2.0])
    with pytest.raises(TypeError, match="input 0"):
        f(None)


@pytest.mark.parametrize("op", [deep_copy_op, shape, Shape_i(0)], ids=str)
def test_c_code_of_a_bad_intermediate_is_a_type_error_not_a_crash(op) -> None:
    x = dvector("x")
    f = opweave.function([x], op(LyingOutput("null")(x)), mode="c")
    with pytest.raises(TypeError, match="expected an ndarray input"):
        f(np.zeros(2))


def test_deep_copy_perform_uses_copy_or_deepcopy() -> None:
    class Box:
        def __init__(self, items):
            self.items = items

    node = deep_copy_op.make_node(dvector())
    out = [[None]]
    nested = [[1, 2], [3]]
    deep_copy_op.perform(node, [nested], out)  # a list has copy(): a shallow copy
    assert out[0][0] == nested and out[0][0] is not nested and out[0][0][0] is nested[0]
    box = Box([1, 2])
    deep_copy_op.perform(node, [box], out)  # no copy(): copy.deepcopy
    assert isinstance(out[0][0], Box) and out[0][0] is not box
    assert out[0][0].items == [1, 2] and out[0][0].items is not box.items


# --- ViewOp --------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("tensor_type", "value"), TENSOR_VALUES, ids=TENSOR_IDS)
def test_view_of_a_tensor_is_returned_as_a_copy(mode, tensor_type, value) -> None:
    # The view is the input array itself; function() copies an output that
    # is a view of an input, so the caller never gets its own array back.
    x = tensor_type("x")
    f = opweave.function([x], view_op(x), mode=mode)
    assert [type(n.op).__name__ for n in f.fgraph.toposort()] == ["ViewOp", "DeepCopyOp"]
    result = f(value)
    np.testing.assert_array_equal(result, value)
    assert result.dtype == value.dtype
    assert not np.shares_memory(result, value)
    cell = [[None]]
    view_op.perform(view_op.make_node(x), [value], cell)
    assert cell[0][0] is value


@pytest.mark.parametrize("mode", MODES)
def test_view_of_a_c_scalar(mode) -> None:
    s = ps.int64("s")
    assert run([s], view_op(s), mode, np.int64(-12)) == -12


def test_view_op_and_deep_copy_op_properties() -> None:
    assert ViewOp.view_map == {0: [0]} and ViewOp._f16_ok is True
    assert DeepCopyOp.check_input is False
    assert ViewOp() == view_op and hash(ViewOp()) == hash(view_op)
    assert DeepCopyOp() == deep_copy_op and deep_copy_op != view_op
    x = dmatrix("x")
    for op in (view_op, deep_copy_op):
        node = op.make_node(x)
        assert node.inputs == [x] and node.outputs[0].type == dmatrix
        with pytest.raises(TypeError, match="graph variable"):
            op.make_node(np.zeros(2))

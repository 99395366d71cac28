"""The built-in ops (ViewOp, DeepCopyOp, Shape, Shape_i) and their per-type
C-code registries, run compiled ("c") and in Python ("py")."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from opweave.examples.double_ops import Double, double

import opweave
import opweave.scalar as ps
from opweave.compile.ops import (
    DeepCopyOp,
    ViewOp,
    deep_copy_op,
    register_deep_copy_op_c_code,
    register_view_op_c_code,
    view_op,
)
from opweave.graph.basic import Apply
from opweave.link.c.basic import MissingCCode
from opweave.link.c.cmodule import get_module_cache
from opweave.link.c.op import COp
from opweave.scalar.basic import ScalarType
from opweave.tensor import TensorType, constant, dmatrix, dscalar, dtensor3, dvector, ivector
from opweave.tensor.shape import (
    Shape,
    Shape_i,
    register_shape_c_code,
    register_shape_i_c_code,
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
REGISTRIES = [
    ViewOp.c_code_and_version,
    DeepCopyOp.c_code_and_version,
    Shape.c_code_and_version,
    Shape_i.c_code_and_version,
]


@pytest.fixture
def restore_registries() -> Iterator[None]:
    """Puts every registry back as it was, whatever the test registered."""
    saved = [dict(registry) for registry in REGISTRIES]
    try:
        yield
    finally:
        for registry, before in zip(REGISTRIES, saved, strict=True):
            registry.clear()
            registry.update(before)


class SubTensorType(TensorType):
    """A TensorType subclass that registers no C code of its own."""


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


# --- Shape ---------------------------------------------------------------------


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


# --- Shape_i -------------------------------------------------------------------


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


# --- the registries ------------------------------------------------------------


@pytest.mark.usefixtures("restore_registries")
@pytest.mark.parametrize("mode", MODES)
def test_code_registered_for_a_custom_type_is_used(mode) -> None:
    # A recognisable "copy" that adds 1000, so the test sees whose code ran.
    register_deep_copy_op_c_code(Double, "%(oname)s = %(iname)s + 1000.0;", version=(1,))
    register_view_op_c_code(Double, "%(oname)s = %(iname)s - 1000.0;", version=(1,))
    d = double("d")
    copied, viewed = run([d], [deep_copy_op(d), view_op(d)], mode, 1.5)
    if mode in ("c", "c|py"):
        # The view's code (-1000), then the copy that protects an output
        # viewing an input (+1000).
        assert (copied, viewed) == (1001.5, 1.5)
    else:
        assert (copied, viewed) == (1.5, 1.5)


def test_a_type_without_code_runs_in_python_only() -> None:
    d = double("d")
    with pytest.raises(MissingCCode, match="DeepCopyOp has no C code for type Double"):
        opweave.function([d], deep_copy_op(d), mode="c")
    assert run([d], deep_copy_op(d), "py", 2.5) == 2.5


def test_view_op_looks_up_the_mro_and_the_others_the_exact_class() -> None:
    x = SubTensorType("float64", shape=(None,))("x")
    view_code = view_op.c_code(view_op.make_node(x), "node_0", ["V1"], ["V2"], {"fail": "F;"})
    assert "V2 = V1;" in view_code and "Py_XINCREF(V2);" in view_code
    for op in (deep_copy_op, shape, Shape_i(0)):
        node = op.make_node(x)
        with pytest.raises(NotImplementedError, match="no C code for type SubTensorType"):
            op.c_code(node, "node_0", ["V1"], ["V2"], {"fail": "F;", "params": "P"})
    value = np.array([1.0, 2.0])
    np.testing.assert_array_equal(run([x], view_op(x), "c", value), value)
    with pytest.raises(MissingCCode, match="SubTensorType"):
        opweave.function([x], deep_copy_op(x), mode="c")
    for mode in ("c|py", "py"):  # these run perform for a node without C code
        result = run([x], deep_copy_op(x), mode, value)
        np.testing.assert_array_equal(result, value)
        assert not np.shares_memory(result, value)


@pytest.mark.usefixtures("restore_registries")
def test_a_subclass_registration_takes_precedence() -> None:
    register_view_op_c_code(SubTensorType, "/* sub view */ %(oname)s = NULL; %(fail)s")
    register_deep_copy_op_c_code(SubTensorType, "/* sub copy */")
    x = SubTensorType("float64", shape=(None,))("x")
    sub = {"fail": "F;"}
    assert view_op.c_code(view_op.make_node(x), "n", ["V1"], ["V2"], sub).startswith(
        "/* sub view */ V2 = NULL; F;"
    )
    assert deep_copy_op.c_code(deep_copy_op.make_node(x), "n", ["V1"], ["V2"], sub) == (
        "/* sub copy */"
    )
    # The base class keeps its own code.
    plain = view_op.c_code(view_op.make_node(dvector()), "n", ["V1"], ["V2"], sub)
    assert "sub view" not in plain


@pytest.mark.usefixtures("restore_registries")
def test_shape_codes_are_filled_with_names_and_params() -> None:
    register_shape_c_code(Double, "%(oname)s <- shape(%(iname)s) or %(fail)s")
    register_shape_i_c_code(Double, "%(oname)s <- %(iname)s[%(i)s];", "check(%(i)s) %(fail)s\n")
    d = double("d")
    sub = {"fail": "FAIL;", "params": "P7"}
    node = Shape().make_node(d)
    assert shape.c_code(node, "n", ["V1"], ["V2"], sub) == "V2 <- shape(V1) or FAIL;"
    op = Shape_i(4)
    node = Apply(op, [d], [TensorType("int64", shape=())()])
    assert op.c_code(node, "n", ["V1"], ["V2"], sub) == "check(P7->i) FAIL;\nV2 <- V1[P7->i];"


@pytest.mark.usefixtures("restore_registries")
def test_a_code_with_an_unknown_key_is_a_clear_error() -> None:
    register_deep_copy_op_c_code(Double, "%(output)s = %(input)s;", version=(1,))
    node = deep_copy_op.make_node(double("d"))
    with pytest.raises(ValueError, match=r"DeepCopyOp on type Double.*'output'"):
        deep_copy_op.c_code(node, "n", ["V1"], ["V2"], {"fail": "F;"})


def test_registering_needs_a_type_class() -> None:
    with pytest.raises(TypeError, match="type class"):
        register_view_op_c_code(dvector, "%(oname)s = %(iname)s;", version=(1,))
    with pytest.raises(TypeError, match="type class"):
        register_shape_i_c_code(dvector, "", "", version=(1,))


# --- versions ------------------------------------------------------------------


def test_builtin_versions() -> None:
    scalar, tensor = str(ScalarType), str(TensorType)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert view_op.c_code_cache_version() == ((scalar, (1,)), (tensor, (1,)))
        assert deep_copy_op.c_code_cache_version() == ((scalar, (1,)), (tensor, (1,)), 1)
        assert shape.c_code_cache_version() == ((tensor, (1,)), 1)
        assert Shape_i(0).c_code_cache_version() == ((tensor, (1,)), 2)


@pytest.mark.usefixtures("restore_registries")
def test_versions_are_sorted_by_type_name() -> None:
    # "<class 'opweave.examples..." sorts before "<class 'opweave.scalar...".
    register_deep_copy_op_c_code(Double, "%(oname)s = %(iname)s;", version=(7, "a"))
    register_shape_i_c_code(Double, "", "", version=(3,))
    register_view_op_c_code(SubTensorType, "", version=(5,))
    assert str(Double) < str(ScalarType) < str(TensorType) < str(SubTensorType)
    assert deep_copy_op.c_code_cache_version() == (
        (str(Double), (7, "a")),
        (str(ScalarType), (1,)),
        (str(TensorType), (1,)),
        1,
    )
    assert Shape_i(1).c_code_cache_version() == (
        (str(Double), (3,)),
        (str(TensorType), (1,)),
        2,
    )
    assert view_op.c_code_cache_version()[-1] == (str(SubTensorType), (5,))


@pytest.mark.usefixtures("restore_registries")
@pytest.mark.parametrize(
    ("op", "register"),
    [
        (view_op, lambda: register_view_op_c_code(Double, "")),
        (deep_copy_op, lambda: register_deep_copy_op_c_code(Double, "")),
        (shape, lambda: register_shape_c_code(Double, "")),
        (Shape_i(0), lambda: register_shape_i_c_code(Double, "", "")),
    ],
    ids=["ViewOp", "DeepCopyOp", "Shape", "Shape_i"],
)
def test_one_unversioned_registration_unversions_the_op(op, register) -> None:
    assert op.c_code_cache_version() != ()
    register()
    with pytest.warns(
        UserWarning, match=f"{type(op).__name__} has C code for Double .*unversioned"
    ):
        assert op.c_code_cache_version() == ()


def test_importing_the_modules_registers_the_builtin_types() -> None:
    import subprocess
    import sys

    code = (
        "import opweave.compile.ops as o\n"
        "import opweave.tensor.shape as s\n"
        "from opweave.tensor.type import TensorType\n"
        "from opweave.scalar.basic import ScalarType\n"
        "assert set(o.ViewOp.c_code_and_version) == {TensorType, ScalarType}\n"
        "assert set(o.DeepCopyOp.c_code_and_version) == {TensorType, ScalarType}\n"
        "assert set(s.Shape.c_code_and_version) == {TensorType}\n"
        "assert set(s.Shape_i.c_code_and_version) == {TensorType}\n"
    )
    for first in ("opweave.compile.ops", "opweave.tensor.shape", "opweave.compile"):
        result = subprocess.run(
            [sys.executable, "-c", f"import {first}\n{code}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr


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

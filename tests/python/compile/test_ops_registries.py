"""The C-code registries of the built-in ops: code registered for a type (by
class, up the MRO for ViewOp), filled with names and params, and the ops'
versions, which follow every registration."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from opweave.examples.double_ops import Double, double

import opweave
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
from opweave.scalar.basic import ScalarType
from opweave.tensor import TensorType, dvector
from opweave.tensor.shape import (
    Shape,
    Shape_i,
    register_shape_c_code,
    register_shape_i_c_code,
    shape,
)

from .test_ops import MODES, run

REGISTRIES = [
    ViewOp.c_code_and_version,
    DeepCopyOp.c_code_and_version,
    Shape.c_code_and_version,
    Shape_i.c_code_and_version,
]


class SubTensorType(TensorType):
    """A TensorType subclass that registers no C code of its own."""


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

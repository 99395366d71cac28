"""The seed tutorials' examples through opweave.function, in C and Python
modes: values, dtypes, strided inputs, errors, wrong inputs and aliasing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from opweave.examples.double_ops import BinaryDoubleOp, add, div, double, mul, sub
from opweave.examples.vector_times_scalar import VectorTimesScalar
from opweave.examples.vector_times_vector import VectorTimesVector

import opweave
from opweave.tensor import dscalar, dvector, tensor

MODES = ("C", "py")
DTYPES = ("int8", "int32", "int64", "uint16", "float32", "float64")


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache") / "opweave"


@pytest.fixture(autouse=True)
def isolated_cache(module_cache: Path) -> Iterator[Path]:
    # One cache for the whole module: the same graphs in several tests are
    # compiled once.
    with opweave.config.change_flags(compiledir=str(module_cache)):
        yield module_cache


def vtv(mode: str, dtype_x: str = "float64", dtype_y: str = "float64"):
    x = tensor(dtype=dtype_x, shape=(None,), name="x")
    y = tensor(dtype=dtype_y, shape=(None,), name="y")
    return opweave.function([x, y], VectorTimesVector()(x, y), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_vector_times_scalar(mode: str) -> None:
    x, y = dvector("x"), dscalar("y")
    f = opweave.function([x, y], VectorTimesScalar()(x, y), mode=mode)
    values = np.array([1.0, -2.0, 3.5])
    np.testing.assert_array_equal(f(values, np.array(2.0)), values * 2.0)
    np.testing.assert_array_equal(f(values, 3), values * 3)  # converted by filter
    np.testing.assert_array_equal(f(values[::-1], 0.5), values[::-1] * 0.5)


@pytest.mark.parametrize("dtype_x", DTYPES)
@pytest.mark.parametrize("dtype_y", ["int16", "float32", "float64"])
def test_vector_times_vector_dtypes_agree_in_c_and_python(dtype_x: str, dtype_y: str) -> None:
    a = (np.arange(5) + 1).astype(dtype_x)
    b = (np.arange(5) - 2).astype(dtype_y)
    expected = (a * b).astype(opweave.scalar.upcast(dtype_x, dtype_y))
    results = [vtv(mode, dtype_x, dtype_y)(a, b) for mode in MODES]
    for result in results:
        assert result.dtype == expected.dtype
        np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("mode", MODES)
def test_strided_and_reversed_inputs(mode: str) -> None:
    f = vtv(mode)
    data = np.arange(12.0)
    x, y = data[::3], data[1::3][::-1]
    assert not x.flags.c_contiguous
    np.testing.assert_array_equal(f(x, y), x * y)
    column = np.arange(8.0).reshape(4, 2)[:, 1]
    np.testing.assert_array_equal(f(column, column), column * column)


def test_two_applies_of_one_op_with_different_dtypes_in_one_graph() -> None:
    op = VectorTimesVector()
    i, f32 = tensor("int32", shape=(None,), name="i"), tensor("float32", shape=(None,), name="f")
    x, y = dvector("x"), dvector("y")
    outputs = [op(i, f32), op(x, y), op(op(x, y), x)]
    ints, floats = np.array([1, 2, 3], dtype="int32"), np.array([0.5, 0.25, 2.0], dtype="float32")
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    results = {
        mode: opweave.function([i, f32, x, y], outputs, mode=mode)(ints, floats, a, b)
        for mode in MODES
    }
    for result in results.values():
        assert [r.dtype for r in result] == ["float64"] * 3
        np.testing.assert_array_equal(result[0], ints * floats)
        np.testing.assert_array_equal(result[1], a * b)
        np.testing.assert_array_equal(result[2], a * b * a)


@pytest.mark.parametrize("mode", MODES)
def test_shape_mismatch_raises_value_error_and_function_stays_usable(mode: str) -> None:
    f = vtv(mode)
    with pytest.raises(ValueError, match="Shape mismatch"):
        f(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 3.0)), [3.0, 3.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.ones((2, 2)), "Wrong number of dimensions"),
        ("text", "input 0 \\('x'\\)"),
        (None, "input 0 \\('x'\\)"),
        (np.array([1.5 + 1j, 2.5]), "input 0 \\('x'\\)"),
    ],
)
def test_wrong_inputs_raise_type_error_naming_the_input(
    mode: str, bad: object, message: str
) -> None:
    f = vtv(mode)
    with pytest.raises(TypeError, match=message):
        f(bad, np.ones(2))


@pytest.mark.parametrize("mode", MODES)
def test_argument_count_and_keywords(mode: str) -> None:
    f = vtv(mode)
    with pytest.raises(TypeError, match="missing input 1 \\('y'\\)"):
        f(np.ones(2))
    with pytest.raises(TypeError, match="takes 2 inputs"):
        f(np.ones(2), np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="no input named 'w'"):
        f(np.ones(2), w=np.ones(2))
    np.testing.assert_array_equal(f(y=np.full(2, 2.0), x=np.full(2, 3.0)), [6.0, 6.0])


@pytest.mark.parametrize("mode", MODES)
def test_inexact_inputs_are_converted_and_downcasts_refused(mode: str) -> None:
    f = vtv(mode)
    np.testing.assert_array_equal(f([1, 2], np.array([3, 4], dtype="int32")), [3.0, 8.0])
    g = vtv(mode, "float32", "float32")
    with pytest.raises(TypeError, match="input 0"):
        g(np.array([1.5, 2.5]), np.ones(2, dtype="float32"))


def test_exact_inputs_skip_python_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    f = vtv("C")
    calls = []
    original = opweave.tensor.TensorType.filter

    def counting_filter(self, *args, **kwargs):
        calls.append(args)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(opweave.tensor.TensorType, "filter", counting_filter)
    f(np.ones(3), np.ones(3))
    assert calls == []
    f([1.0, 2.0, 3.0], np.ones(3))
    assert len(calls) == 2


def test_trust_input_skips_conversion() -> None:
    x, y = dvector("x"), dvector("y")
    f = opweave.function([x, y], VectorTimesVector()(x, y), trust_input=True)
    assert f.trust_input
    with pytest.raises(TypeError, match="expected an ndarray, got list"):
        f([1.0], np.ones(1))
    f.trust_input = False
    np.testing.assert_array_equal(f([2.0], np.ones(1)), [2.0])


@pytest.mark.parametrize("mode", MODES)
def test_outputs_are_never_aliased_between_calls_or_with_inputs(mode: str) -> None:
    f = vtv(mode)
    a, b = np.arange(4.0), np.arange(4.0)
    first, second = f(a, b), f(a, b)
    assert first is not second
    assert not np.shares_memory(first, second)
    assert not np.shares_memory(first, a)
    second[:] = -1
    np.testing.assert_array_equal(first, a * b)


@pytest.mark.parametrize("mode", MODES)
def test_double_type_and_binary_double_ops(mode: str) -> None:
    x, y, z = double("x"), double("y"), double("z")
    f = opweave.function([x, y, z], mul(add(x, y), z), mode=mode)
    assert f(1.0, 2.0, 3.0) == 9.0
    assert f(1, 2, 3) == 9.0  # filter turns the ints into floats
    g = opweave.function([x, y], [div(sub(x, y), add(x, 2)), sub(y, 0.5)], mode=mode)
    assert g(5.0, 1.0) == [4.0 / 7.0, 0.5]


def test_binary_double_op_props() -> None:
    assert add == BinaryDoubleOp(add.name, add.fn, add.ccode)
    assert add != mul and hash(add) == hash(BinaryDoubleOp(add.name, add.fn, add.ccode))
    assert str(add) == "add"


def test_theano_style_plain_op_with_c_code_attribute() -> None:
    # "Implementing the arithmetic Ops in C": a plain Op given c_code.
    class Mul(opweave.graph.op.Op):
        def make_node(self, x, y):
            return opweave.graph.basic.Apply(self, [x, y], [double()])

    mul_op = Mul()

    def c_code(node, name, input_names, output_names, sub):
        x_name, y_name = input_names[0], input_names[1]
        output_name = output_names[0]
        return f"{output_name} = {x_name} * {y_name};"

    mul_op.c_code = c_code
    x, y = double("x"), double("y")
    f = opweave.function([x, y], mul_op(x, y))
    assert f(3.0, 4.0) == 12.0


@pytest.mark.parametrize("mode", MODES)
def test_outputs_that_are_inputs_constants_or_repeated_are_copies(mode: str) -> None:
    x, y = dvector("x"), dvector("y")
    product = VectorTimesVector()(x, y)
    const = opweave.tensor.constant(np.array([7.0, 8.0]))
    f = opweave.function([x, y], [x, product, product, const], mode=mode)
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    same_x, first, second, c = f(a, b)
    np.testing.assert_array_equal(same_x, a)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(c, [7.0, 8.0])
    assert not np.shares_memory(same_x, a)
    assert not np.shares_memory(first, second)
    c[:] = 0
    np.testing.assert_array_equal(f(a, b)[3], [7.0, 8.0])


def test_compile_profile_says_where_the_time_went(caplog: pytest.LogCaptureFixture) -> None:
    import logging
    import time

    from support.layout_ops import Increment, chain

    x = dvector("x")
    graph = chain(x, [Increment(limit=float(k)) for k in range(3)])
    start = time.perf_counter()
    with caplog.at_level(logging.INFO, logger="opweave"):
        f = opweave.function([x], graph, name="profiled")
    wall = time.perf_counter() - start
    profile = f.compile_profile
    phases = ("graph", "hooks", "assembly", "lookup", "compile", "load", "dependencies", "other")
    assert all(profile[p] >= 0.0 for p in phases)
    assert sum(profile[p] for p in phases) == pytest.approx(profile["total"])
    assert profile["total"] <= wall
    assert profile["compiled"] == 1 and profile["reused"] == 0
    assert profile["modules"][0]["outcome"] == "built"
    assert 0.0 < profile["compile"] == profile["modules"][0]["compile"] < profile["total"]
    assert any("function 'profiled' ready in" in r.getMessage() for r in caplog.records)
    again = opweave.function([x], graph).compile_profile
    assert again["compiled"] == 0 and again["reused"] == 1 and again["compile"] == 0.0
    # c|py: one module per compiled region.
    from support.layout_ops import AddScaled

    mixed = AddScaled(1.0)(graph, x)
    regions = opweave.function([x], chain(mixed, [Increment()]), mode="c|py").compile_profile
    assert regions["compiled"] + regions["reused"] == 1
    assert opweave.function([x], graph, mode="py").compile_profile["modules"] == []

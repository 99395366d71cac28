"""TensorType (opweave.tensor.type): construction, filter, comparisons, the
constructors, constants, and its C code compiled and run."""

from __future__ import annotations

import numpy as np
import pytest

import opweave
import opweave.tensor as pt
from opweave.graph.basic import Variable
from opweave.scalar import float64 as scalar_float64
from opweave.tensor import TensorConstant, TensorType, TensorVariable

# --- construction -------------------------------------------------------------


def test_shape_and_broadcastable_spellings_agree() -> None:
    by_shape = TensorType("float64", shape=(None, 1))
    by_bcast = TensorType("float64", broadcastable=[False, True])
    by_bools = TensorType("float64", (False, True))  # Theano's positional spelling
    assert by_shape == by_bcast == by_bools
    assert hash(by_shape) == hash(by_bcast)
    assert by_bcast.shape == (None, 1)
    assert by_shape.broadcastable == (False, True)
    assert by_shape.ndim == 2
    assert TensorType("int8", shape=(3, None)).broadcastable == (False, False)


def test_shape_and_broadcastable_together_is_an_error() -> None:
    with pytest.raises(ValueError, match="not both"):
        TensorType("float64", shape=(None,), broadcastable=(False,))


@pytest.mark.parametrize("shape", [(-1,), ("a",), (1.5,)])
def test_bad_static_shape_is_an_error(shape: tuple[object, ...]) -> None:
    with pytest.raises(ValueError, match="non-negative ints"):
        TensorType("float64", shape=shape)  # type: ignore[arg-type]


def test_dtype_spellings() -> None:
    assert TensorType(np.dtype("float32"), shape=()).dtype == "float32"
    assert TensorType(np.int16, shape=()).dtype == "int16"
    with opweave.config.change_flags(floatX="float32"):
        assert TensorType("floatX", shape=()).dtype == "float32"
    with pytest.raises(TypeError, match="valid dtypes: bool, int8"):
        TensorType("float128", shape=())
    with pytest.raises(TypeError, match="unsupported dtype 'str'"):
        TensorType("str", shape=())


def test_attributes_equality_and_str() -> None:
    t = TensorType("float32", shape=(None, 3))
    assert t.numpy_dtype == np.dtype("float32")
    assert str(t) == "TensorType(float32, shape=(None, 3))"
    assert str(TensorType("int8", shape=(None,))) == "TensorType(int8, shape=(None,))"
    assert str(TensorType("int8", shape=(None,), name="ivec")) == "ivec"
    assert TensorType("float32", shape=(None, 3), name="other") == t
    assert t != TensorType("float32", shape=(None, None))
    assert t != TensorType("float64", shape=(None, 3))
    assert len({t, TensorType("float32", shape=(None, 3)), pt.fmatrix}) == 2
    assert t.c_element_type() == "npy_float32"
    assert t.dtype_specs() == (np.float32, "npy_float32", "NPY_FLOAT32")


def test_calling_the_type_makes_variables_and_constants() -> None:
    x = pt.dvector("x")
    assert isinstance(x, TensorVariable)
    assert (x.name, x.type, x.dtype, x.ndim, x.broadcastable) == (
        "x",
        pt.dvector,
        "float64",
        1,
        (False,),
    )
    c = pt.dvector.make_constant([1, 2])
    assert isinstance(c, TensorConstant)
    assert c.data.dtype == np.float64 and c.type is pt.dvector


# --- filter -------------------------------------------------------------------


def test_strict_filter_takes_only_exact_arrays() -> None:
    t = pt.dvector
    a = np.arange(3.0)
    assert t.filter(a, strict=True) is a
    with pytest.raises(TypeError, match=r"expects a numpy\.ndarray, got list"):
        t.filter([1.0, 2.0], strict=True)
    with pytest.raises(TypeError, match="expects dtype float64, got float32"):
        t.filter(a.astype("float32"), strict=True)
    with pytest.raises(TypeError, match="expects dtype float64, got >f8"):
        t.filter(a.astype(">f8"), strict=True)
    with pytest.raises(TypeError, match="Wrong number of dimensions: expected 1, got 0"):
        t.filter(np.float64(1.0), strict=False)
    assert not t.is_valid_value(np.float64(1.0))


def test_filter_keeps_an_exact_array() -> None:
    a = np.arange(4.0).reshape(2, 2)
    assert pt.dmatrix.filter(a) is a


def test_filter_upcasts() -> None:
    out = pt.dvector.filter(np.array([1, 2], dtype="int32"))
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0]
    out = pt.fvector.filter(np.array([1, 2], dtype="int8"))
    assert out.dtype == np.float32


def test_filter_refuses_a_lossy_downcast() -> None:
    with pytest.raises(TypeError, match="cannot store a value of dtype float64 without loss"):
        pt.fvector.filter(np.array([0.1]))
    with pytest.raises(TypeError, match="allow_input_downcast=True"):
        pt.ivector.filter([1.5])
    with pytest.raises(TypeError, match="dtype int64 without loss"):
        pt.bvector.filter([300])
    with pytest.raises(TypeError, match="without loss"):
        pt.lvector.filter([np.nan])  # NaN in an int conversion: refused, no crash


def test_filter_accepts_a_downcast_that_changes_no_value() -> None:
    out = pt.fvector.filter([0.5, 2.0])
    assert out.dtype == np.float32 and out.tolist() == [0.5, 2.0]
    out = pt.bvector.filter([1, -3])
    assert out.dtype == np.int8 and out.tolist() == [1, -3]


def test_filter_refuses_an_array_whose_dtype_does_not_upcast() -> None:
    # An array's dtype, not its values, decides (as in PyTensor).
    with pytest.raises(TypeError, match="cannot store a value of dtype float64"):
        pt.fvector.filter(np.array([0.5, 2.0]))


def test_filter_allow_downcast() -> None:
    out = pt.fvector.filter([0.1], allow_downcast=True)
    assert out.dtype == np.float32 and out[0] == np.float32(0.1)
    assert pt.bvector.filter([300], allow_downcast=True).tolist() == [44]  # wraps, as C does
    assert pt.lvector.filter([np.nan], allow_downcast=True).dtype == np.int64
    with pytest.raises(TypeError, match="cannot store"):
        pt.fscalar.filter(0.1, allow_downcast=False)


def test_python_float_goes_to_floatx() -> None:
    with opweave.config.change_flags(floatX="float32"):
        out = pt.fscalar.filter(0.1)
        assert out.dtype == np.float32 and out == np.float32(0.1)
    with pytest.raises(TypeError, match="without loss"):
        pt.fscalar.filter(0.1)  # floatX is float64: a lossy float is refused
    with pytest.raises(TypeError, match="without loss"):
        pt.fvector.filter([0.1])  # only a bare Python float


def test_filter_checks_ndim_and_static_shape() -> None:
    with pytest.raises(TypeError, match=r"expected 2, got 1 with shape \(3,\)"):
        pt.dmatrix.filter(np.zeros(3))
    col = TensorType("float64", shape=(None, 1))
    assert col.filter(np.zeros((4, 1))).shape == (4, 1)
    with pytest.raises(TypeError, match=r"static shape \(None, 1\) does not match .* \(4, 2\)"):
        col.filter(np.zeros((4, 2)))


def test_filter_copies_byte_swapped_and_unaligned_arrays() -> None:
    swapped = np.arange(3.0).astype(">f8")
    out = pt.dvector.filter(swapped)
    assert out.dtype == np.dtype("<f8") and out.dtype.isnative and out.tolist() == [0, 1, 2]
    raw = np.zeros(3 * 8 + 1, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64)
    unaligned[:] = [1.0, 2.0, 3.0]
    assert not unaligned.flags.aligned
    out = pt.dvector.filter(unaligned)
    assert out.flags.aligned and out.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="aligned array in native byte order"):
        pt.dvector.filter(unaligned, strict=True)


def test_filter_refuses_non_numbers() -> None:
    for bad in (None, "abc", [[1, 2], [3]], {"a": 1}):
        with pytest.raises(TypeError):
            pt.dvector.filter(bad)


# --- value comparisons ----------------------------------------------------------


def test_values_eq() -> None:
    t = pt.dvector
    assert t.values_eq(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert not t.values_eq(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]))
    assert not t.values_eq(np.array([1.0]), np.array([1.0, 1.0]))
    assert not t.values_eq(np.array([1.0]), np.array([1.0], dtype="float32"))


def test_values_eq_approx_uses_the_dtype_tolerance() -> None:
    assert pt.dvector.values_eq_approx(np.array([1.0, np.nan]), np.array([1.0 + 1e-9, np.nan]))
    assert not pt.dvector.values_eq_approx(np.array([1.0]), np.array([1.001]))
    f32 = np.array([1.0], dtype="float32")
    assert pt.fvector.values_eq_approx(f32, f32 + np.float32(5e-5))
    assert not pt.dvector.values_eq_approx(np.array([1.0]), np.array([1.0 + 5e-5]))
    assert not pt.dvector.values_eq_approx(np.array([np.nan]), np.array([1.0]))
    assert not pt.dvector.values_eq_approx(np.array([1.0]), np.array([1.0, 1.0]))
    assert not pt.lvector.values_eq_approx(np.array([1]), np.array([2]))


# --- constructors and constants -----------------------------------------------

SHORTCUTS = {"b": "int8", "w": "int16", "i": "int32", "l": "int64"}
SHORTCUTS |= {"f": "float32", "d": "float64", "c": "complex64", "z": "complex128"}
KINDS = {"scalar": (), "vector": (None,), "matrix": (None, None)}
KINDS |= {"tensor3": (None,) * 3, "tensor4": (None,) * 4, "row": (1, None), "col": (None, 1)}


@pytest.mark.parametrize("kind", KINDS)
def test_constructors_default_to_floatx(kind: str) -> None:
    make = getattr(pt, kind)
    x = make("x")
    assert x.type == TensorType("float64", shape=KINDS[kind]) and x.name == "x"
    with opweave.config.change_flags(floatX="float32"):
        assert make().dtype == "float32"
    assert make(dtype="int16").type == TensorType("int16", shape=KINDS[kind])


@pytest.mark.parametrize("prefix", SHORTCUTS)
def test_typed_shortcuts_are_tensor_types(prefix: str) -> None:
    for kind, shape in KINDS.items():
        shortcut = getattr(pt, prefix + kind)
        assert shortcut == TensorType(SHORTCUTS[prefix], shape=shape)
        assert shortcut("v").type is shortcut


def test_shortcuts_are_reachable_from_the_type_module_too() -> None:
    from opweave.tensor import type as type_module

    assert type_module.dvector is pt.dvector and type_module.vector is pt.vector
    with pytest.raises(AttributeError):
        type_module.no_such_name  # noqa: B018


def test_tensor_constructor_spellings() -> None:
    assert pt.tensor("int8", (None, 1), "x").type == TensorType("int8", shape=(None, 1))
    assert pt.tensor(dtype="float32", shape=(2,)).type == TensorType("float32", shape=(2,))
    assert pt.tensor(dtype="int8", broadcastable=(True,)).type.shape == (1,)
    named = pt.tensor("x", dtype="int32", shape=(None,))  # PyTensor's tensor(name, *, ...)
    assert (named.name, named.dtype) == ("x", "int32")
    assert pt.tensor("y", shape=()).dtype == "float64"
    with pytest.raises(TypeError, match="multiple values for argument 'dtype'"):
        pt.tensor("int8", (None,), dtype="int8")
    with pytest.raises(TypeError, match="multiple values for argument 'name'"):
        pt.tensor("x", dtype="int8", shape=(), name="y")
    with pytest.raises(TypeError, match="needs shape"):
        pt.tensor(dtype="int8")
    with pytest.raises(ValueError, match="shape of length 1"):
        pt.vector(shape=(None, None))


def test_constant_dtypes() -> None:
    assert pt.constant(1.5).dtype == "float64"
    with opweave.config.change_flags(floatX="float32"):
        assert pt.constant(1.5).dtype == "float32"
    assert pt.constant(3).dtype == "int64"
    assert pt.constant(True).dtype == "bool"
    assert pt.constant(np.float32(1)).dtype == "float32"
    assert pt.constant([1, 2], dtype="int8").data.tolist() == [1, 2]
    assert pt.constant([[1.0, 2.0]]).type == TensorType("float64", shape=(1, 2))
    with pytest.raises(TypeError):
        pt.constant("text")


def test_constant_ndim() -> None:
    assert pt.constant([1, 2], ndim=3).type.shape == (1, 1, 2)
    assert pt.constant([[1, 2]], ndim=1).type.shape == (2,)
    with pytest.raises(ValueError, match="leading dimensions of length 1"):
        pt.constant([[1, 2], [3, 4]], ndim=1)


def test_constant_data_is_read_only_and_independent() -> None:
    a = np.arange(3.0)
    c = pt.constant(a, name="c")
    assert c.name == "c" and c.value is c.data
    assert a.flags.writeable and not c.data.flags.writeable
    a[0] = 10.0
    assert c.data[0] == 0.0
    with pytest.raises(ValueError):
        c.data[0] = 1.0


def test_constants_compare_by_identity_with_a_value_signature() -> None:
    a, b = pt.constant([1.0, 2.0]), pt.constant([1.0, 2.0])
    assert a != b and len({a, b}) == 2
    assert a.signature() == b.signature() and hash(a.signature()) == hash(b.signature())
    assert a.signature() != pt.constant([1.0, 3.0]).signature()
    # Same bytes, same (unknown-length) type: only the shape tells them apart.
    assert pt.dmatrix.make_constant(np.zeros((2, 3))).signature() != (
        pt.dmatrix.make_constant(np.zeros((3, 2))).signature()
    )


def test_as_tensor_variable() -> None:
    x = pt.dvector()
    assert pt.as_tensor_variable(x) is x
    assert pt.as_tensor_variable(x, ndim=1) is x
    with pytest.raises(ValueError, match="expected 2"):
        pt.as_tensor_variable(x, ndim=2)
    c = pt.as_tensor_variable([1.0, 2.0], name="c")
    assert isinstance(c, TensorConstant) and c.name == "c" and c.data.tolist() == [1.0, 2.0]
    assert pt.as_tensor_variable(np.int8(3)).type == pt.bscalar
    with pytest.raises(TypeError, match="cannot convert"):
        pt.as_tensor_variable(Variable(scalar_float64))


# --- C code ---------------------------------------------------------------------

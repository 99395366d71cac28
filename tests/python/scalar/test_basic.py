"""ScalarType and upcast (opweave.scalar): construction, filter, upcast
against NumPy, and the C code compiled and run (extract, sync, literals)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from support import type_harness as harness

import opweave
import opweave.scalar as ps
from opweave.scalar import ScalarConstant, ScalarType, ScalarVariable, upcast
from opweave.scalar.dtypes import ALL_DTYPES

# --- construction -------------------------------------------------------------


def test_instances_and_attributes() -> None:
    assert ps.float64 == ScalarType("float64") and ps.float64.dtype == "float64"
    assert ps.float64.ndim == 0
    assert ps.get_scalar_type(np.dtype("int8")) is ps.int8 is ps.get_scalar_type("int8")
    assert ps.bool.dtype == "bool" and ps.bool.c_element_type() == "npy_bool"
    assert [t.dtype for t in ps.all_types] == list(ALL_DTYPES)
    assert len(ALL_DTYPES) == 14
    assert str(ps.complex64) == "complex64" and repr(ps.int8) == "ScalarType(int8)"
    with opweave.config.change_flags(floatX="float32"):
        assert ScalarType("floatX") == ps.float32


def test_unknown_dtype_lists_the_valid_ones() -> None:
    with pytest.raises(TypeError, match=r"valid dtypes: bool, int8, .*complex128"):
        ScalarType("float128")
    with pytest.raises(TypeError, match="unsupported dtype 'nope'"):
        ScalarType("nope")


def test_equality_and_hash_follow_the_dtype() -> None:
    assert ScalarType("int16") == ScalarType(np.int16)
    assert hash(ScalarType("int16")) == hash(ps.int16)
    assert ps.int16 != ps.uint16
    assert len({ScalarType(d) for d in ALL_DTYPES + ALL_DTYPES}) == 14


def test_variables_and_constants() -> None:
    x = ps.float32("x")
    assert isinstance(x, ScalarVariable) and x.dtype == "float32" and x.name == "x"
    c = ps.int8.make_constant(3)
    assert isinstance(c, ScalarConstant) and c.data == 3 and type(c.data) is np.int8
    assert c.value is c.data
    other = ps.int8.make_constant(3)
    assert c != other and c.signature() == other.signature()


# --- filter -------------------------------------------------------------------


def test_strict_filter_needs_the_exact_numpy_scalar() -> None:
    value = np.float64(1.0)
    assert ps.float64.filter(value, strict=True) is value
    for bad in (1.0, np.float32(1.0), np.array(1.0), 1):
        with pytest.raises(TypeError, match=r"expects a numpy\.float64 scalar"):
            ps.float64.filter(bad, strict=True)


@pytest.mark.parametrize(
    ("scalar_type", "value", "expected"),
    [
        (ps.float64, 1, np.float64(1.0)),
        (ps.float64, 2.5, np.float64(2.5)),
        (ps.float64, np.array(3.0), np.float64(3.0)),
        (ps.int8, 100, np.int8(100)),
        (ps.int8, 2.0, np.int8(2)),
        (ps.int64, np.int32(-7), np.int64(-7)),
        (ps.float32, 0.5, np.float32(0.5)),
        (ps.bool, True, np.bool_(True)),
        (ps.bool, 1, np.bool_(True)),
        (ps.complex64, 1.5, np.complex64(1.5)),
        (ps.float64, 1 + 0j, np.float64(1.0)),
        (ps.float16, 0.5, np.float16(0.5)),
        (ps.uint64, 2**64 - 1, np.uint64(2**64 - 1)),
    ],
)
def test_filter_converts_without_loss(scalar_type: ScalarType, value: Any, expected: Any) -> None:
    out = scalar_type.filter(value)
    assert type(out) is type(expected) and out == expected


@pytest.mark.parametrize(
    ("scalar_type", "value"),
    [
        (ps.int64, 1.5),
        (ps.int8, 300),
        (ps.uint8, -1),
        (ps.int64, np.nan),
        (ps.int64, 2**70),
        (ps.float32, 0.1),
        (ps.float64, 2**53 + 1),
        (ps.float64, 1 + 1j),
        (ps.bool, 2),
    ],
)
def test_filter_refuses_lossy_conversions(scalar_type: ScalarType, value: Any) -> None:
    with pytest.raises(TypeError, match="without loss of precision"):
        scalar_type.filter(value)


def test_filter_allow_downcast() -> None:
    assert ps.int8.filter(300, allow_downcast=True) == np.int8(44)
    assert ps.int64.filter(1.9, allow_downcast=True) == np.int64(1)
    assert type(ps.int64.filter(np.nan, allow_downcast=True)) is np.int64  # no crash
    assert ps.float32.filter(0.1, allow_downcast=True) == np.float32(0.1)


def test_python_float_goes_to_floatx() -> None:
    with opweave.config.change_flags(floatX="float32"):
        assert ps.float32.filter(0.1) == np.float32(0.1)
        with pytest.raises(TypeError):
            ps.float32.filter(0.1, allow_downcast=False)


@pytest.mark.parametrize("bad", [None, "1.0", [1.0], np.zeros(2), object()])
def test_filter_refuses_non_scalars(bad: Any) -> None:
    with pytest.raises(TypeError):
        ps.float64.filter(bad)


def test_values_eq() -> None:
    assert ps.float64.values_eq(np.float64(np.nan), np.float64(np.nan))
    assert not ps.float64.values_eq(np.float64(1.0), np.float64(1.0 + 1e-12))
    assert ps.float64.values_eq_approx(np.float64(1.0), np.float64(1.0 + 1e-12))
    assert ps.float32.values_eq_approx(np.float32(1.0), np.float32(1.00005))
    assert not ps.float64.values_eq_approx(np.float64(1.0), np.float64(1.00005))
    assert not ps.int8.values_eq_approx(np.int8(1), np.int8(2))


# --- upcast -------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b"), list(itertools.product(ALL_DTYPES, repeat=2)))
def test_upcast_matches_numpy(a: str, b: str) -> None:
    expected = (np.zeros((), dtype=a) + np.zeros((), dtype=b)).dtype.name
    assert upcast(a, b) == expected
    assert upcast(np.dtype(a), np.dtype(b)) == expected


def test_upcast_examples() -> None:
    assert upcast("int8", "float32") == "float32"
    assert upcast("int64", "float32") == "float64"
    assert upcast("uint64", "int64") == "float64"
    assert upcast("bool", "bool") == "bool"
    assert upcast("int8") == "int8"
    assert upcast("int8", "int16", "uint16", "float16") == "float32"
    with opweave.config.change_flags(floatX="float32"):
        assert upcast("floatX", "int8") == "float32"
    with pytest.raises(TypeError, match="valid dtypes"):
        upcast("int8", "float128")


# --- C code -------------------------------------------------------------------

ROUNDTRIP = {
    "float64": np.float64(-2.5),
    "float32": np.float32(0.1),
    "float16": np.float16(1.5),
    "int8": np.int8(-128),
    "uint64": np.uint64(2**64 - 1),
    "bool": np.bool_(True),
    "complex128": np.complex128(1.5 - 2j),
}

LITERALS: list[tuple[str, Any]] = [
    ("float64", 1.5),
    ("float64", -0.0),
    ("float64", 1e300),
    ("float64", 5e-324),
    ("float64", np.nan),
    ("float64", np.inf),
    ("float64", -np.inf),
    ("float32", np.float32(0.1)),
    ("float32", np.float32(-np.inf)),
    ("float16", np.float16(0.1)),
    ("float16", np.float16(np.nan)),
    ("int8", -128),
    ("int8", 127),
    ("int32", -5),
    ("int64", -(2**63)),
    ("int64", 2**63 - 1),
    ("uint8", 255),
    ("uint64", 2**64 - 1),
    ("bool", True),
    ("bool", False),
]


@pytest.fixture(scope="module")
def cmod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """One compiled module exercising ScalarType's C code."""
    functions = {f"roundtrip_{d}": harness.extract_body(ScalarType(d)) for d in ROUNDTRIP}
    for index, (dtype, value) in enumerate(LITERALS):
        functions[f"literal_{index}"] = harness.literal_body(ScalarType(dtype), value)
    cache = tmp_path_factory.mktemp("cache")
    with harness.compiled(cache, "scalar_type_harness", ps.float64, functions) as module:
        yield module


def test_c_declare_init_text() -> None:
    assert ps.float64.c_declare("V2", {}) == "npy_float64 V2;\ntypedef npy_float64 dtype_V2;\n"
    assert ps.bool.c_declare("V2", {}, check_input=False) == "npy_bool V2;\n"
    assert ps.complex64.c_declare("V2", {}, check_input=False) == "npy_complex64 V2;\n"
    assert ps.int8.c_init("V2", {}) == "V2 = 0;\n"
    assert "V2" in ps.complex64.c_init("V2", {})
    assert ps.float64.c_cleanup("V2", {}) == ""
    assert ps.float64.c_headers() == [
        "<numpy/arrayobject.h>",
        "<numpy/arrayscalars.h>",
        "<math.h>",
    ]
    assert ps.float64.c_init_code() == ["import_array();"]
    assert "PyFloat64ArrType_Type" in ps.float64.c_extract("V2", {"fail": "FAIL;"})
    assert "PyFloat64ArrType_Type" not in ps.float64.c_extract("V2", {"fail": "FAIL;"}, False)
    assert isinstance(ps.float64.c_code_cache_version(), tuple)


def test_c_literal_text() -> None:
    assert ps.float64.c_literal(1.5) == "((npy_float64)1.5)"
    assert ps.float32.c_literal(np.nan) == "((npy_float32)NAN)"
    assert ps.float64.c_literal(-np.inf) == "((npy_float64)-INFINITY)"
    assert ps.bool.c_literal(True) == "((npy_bool)1)"
    assert ps.int16.c_literal(-3) == "((npy_int16)-3LL)"
    assert ps.uint32.c_literal(7) == "((npy_uint32)7ULL)"
    assert ps.complex64.c_literal(1.0) is None
    assert ps.complex128.c_literal(1.0) is None
    with pytest.raises(TypeError):
        ps.int8.c_literal(1.5)


@pytest.mark.parametrize("dtype", ROUNDTRIP)
def test_c_extract_then_sync_gives_the_value_back(cmod: ModuleType, dtype: str) -> None:
    value = ROUNDTRIP[dtype]
    out = getattr(cmod, f"roundtrip_{dtype}")(value)
    assert type(out) is type(value) and out == value


@pytest.mark.parametrize(
    ("dtype", "bad", "got"),
    [
        ("float64", np.float32(1.0), "numpy.float32"),
        ("float64", 1.0, "float"),
        ("int8", np.int16(1), "numpy.int16"),
        ("bool", True, "bool"),
        ("float16", np.array(1.0, dtype="float16"), "numpy.ndarray"),
        ("complex128", None, "NoneType"),
    ],
)
def test_c_extract_rejects_other_types(cmod: ModuleType, dtype: str, bad: Any, got: str) -> None:
    message = rf"expected a numpy\.{dtype} scalar, got {got}$"
    with pytest.raises(TypeError, match=message):
        getattr(cmod, f"roundtrip_{dtype}")(bad)


@pytest.mark.parametrize("index", range(len(LITERALS)))
def test_c_literal_compiles_to_the_value(cmod: ModuleType, index: int) -> None:
    dtype, value = LITERALS[index]
    out = getattr(cmod, f"literal_{index}")(None)
    expected = np.asarray(value, dtype=dtype)[()]
    assert type(out) is type(expected)
    if isinstance(expected, np.floating) and math.isnan(expected):
        assert math.isnan(out)
    else:
        assert out == expected
        assert np.signbit(out) == np.signbit(expected)

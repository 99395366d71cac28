"""The C code of TensorType, compiled into a real extension: declare, init and
cleanup text, extract and sync round trips, the checks on dtype, ndim and
static shape, and outputs that sync refuses."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
from support import type_harness as harness

import opweave.tensor as pt
from opweave.tensor import TensorType

STATIC = TensorType("float64", shape=(None, 1))


@pytest.fixture(scope="module")
def cmod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """One compiled module exercising TensorType's C code."""
    functions = {
        "vector": harness.extract_body(pt.dvector),
        "vector_unchecked": harness.extract_body(pt.dvector, check_input=False, sync=False),
        "lvector": harness.extract_body(pt.lvector),
        "static_shape": harness.extract_body(STATIC),
        "static_shape_unchecked": harness.extract_body(STATIC, sync=False, check_broadcast=False),
        "sync_vector": harness.sync_body(pt.dvector),
        "sync_static": harness.sync_body(STATIC),
    }
    cache = tmp_path_factory.mktemp("cache")
    with harness.compiled(cache, "tensor_type_harness", pt.dvector, functions) as module:
        yield module


def test_c_declare_init_cleanup_text() -> None:
    assert pt.fvector.c_declare("V3", {}) == "PyArrayObject* V3;\ntypedef npy_float32 dtype_V3;\n"
    assert pt.fvector.c_declare("V3", {}, check_input=False) == "PyArrayObject* V3;\n"
    assert TensorType("bool", shape=()).c_declare("V1", {}).endswith("typedef npy_bool dtype_V1;\n")
    assert pt.fvector.c_init("V3", {}) == "V3 = NULL;\n"
    assert pt.fvector.c_cleanup("V3", {}) == "Py_XDECREF(V3);\nV3 = NULL;\n"
    assert pt.fvector.c_headers() == ["<numpy/arrayobject.h>"]
    assert pt.fvector.c_init_code() == ["import_array();"]
    assert pt.fvector.c_literal(np.zeros(2, dtype="float32")) is None
    assert isinstance(pt.fvector.c_code_cache_version(), tuple)


def test_c_roundtrip_returns_the_same_array(cmod: ModuleType) -> None:
    a = np.arange(5.0)
    before = sys.getrefcount(a)
    for _ in range(100):
        assert cmod.vector(a) is a
    assert sys.getrefcount(a) == before
    view = np.arange(10.0)[::2]  # strided views are fine
    assert cmod.vector(view) is view


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "expected an ndarray, not None"),
        ([1.0, 2.0], "expected an ndarray, got list"),
        (np.zeros((2, 2)), "expected an ndarray with 1 dimensions, got 2"),
        (
            np.zeros(2, dtype="float32"),
            r"expected dtype float64, got type_num \d+ \(numpy.float32\)",
        ),
        (np.arange(2.0).astype(">f8"), "aligned ndarray in native byte order"),
        (np.zeros(17, dtype=np.uint8)[1:].view(np.float64), "aligned ndarray in native byte order"),
    ],
)
def test_c_extract_rejects(cmod: ModuleType, value: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        cmod.vector(value)


def test_c_extract_without_checks_takes_anything_array(cmod: ModuleType) -> None:
    wrong = np.zeros((2, 2), dtype="int8")
    assert cmod.vector_unchecked(wrong) is wrong


def test_c_int64_accepts_both_type_numbers(cmod: ModuleType) -> None:
    # On LP64 Linux int64 has two type numbers (long and long long).
    for a in (np.arange(3, dtype=np.int64), np.arange(3, dtype=np.longlong)):
        assert pt.lvector.filter(a, strict=True) is a
        assert cmod.lvector(a) is a


def test_c_static_shape(cmod: ModuleType) -> None:
    ok = np.zeros((3, 1))
    assert cmod.static_shape(ok) is ok
    with pytest.raises(TypeError, match=r"expected shape\[1\] == 1 \(static shape\), got 2"):
        cmod.static_shape(np.zeros((3, 2)))
    wide = np.zeros((3, 2))
    assert cmod.static_shape_unchecked(wide) is wide  # check_broadcast=False skips it


def test_c_sync(cmod: ModuleType) -> None:
    assert cmod.sync_vector(None) is None
    a = np.arange(2.0)
    before = sys.getrefcount(a)
    assert cmod.sync_vector(a) is a
    assert sys.getrefcount(a) == before


@pytest.mark.parametrize(
    ("function", "value", "message"),
    [
        ("sync_vector", np.zeros(2, dtype="int32"), r"float64, shape=\(None,\)\) must have dtype"),
        ("sync_vector", np.zeros((1, 1)), "must have 1 dimensions, got 2"),
        ("sync_static", np.zeros((1, 2)), r"must have shape\[1\] == 1 \(static shape\), got 2"),
    ],
)
def test_c_sync_rejects_a_wrong_output(
    cmod: ModuleType, function: str, value: np.ndarray, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        getattr(cmod, function)(value)

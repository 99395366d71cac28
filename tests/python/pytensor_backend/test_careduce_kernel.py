"""Partial reductions on pointers (opweave/pytensor/_careduce_kernel.py):
bitwise PyTensor's C loop (the same fold order per output element) for
every reduction class, dtype and layout, its errors, and its declines."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from support.pytensor_modes import DEBUG, OPWEAVE  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor._careduce_kernel import CAReduceKernel, careduce_kernel  # noqa: E402

PYTENSOR_C = Mode(linker="c", optimizer=None)

REDUCTIONS = {
    "sum": lambda x, axis: x.sum(axis=axis),
    "prod": lambda x, axis: x.prod(axis=axis),
    "max": lambda x, axis: pt.max(x, axis=axis),
    "min": lambda x, axis: pt.min(x, axis=axis),
    "all": lambda x, axis: pt.all(x, axis=axis),
    "any": lambda x, axis: pt.any(x, axis=axis),
}

LAYOUTS = {
    "C": lambda a: a,
    "F": np.asfortranarray,
    "reversed": lambda a: a[::-1, ::2, 1:],
    "permuted": lambda a: a.transpose(2, 0, 1),
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape),
}


def compiled(out, x):
    fo, fc = (pytensor.function([x], out, mode=m) for m in (OPWEAVE, PYTENSOR_C))
    kernels = [n for n in fo.maker.fgraph.toposort() if isinstance(code_op(n), CAReduceKernel)]
    return fo, fc, kernels


def same(got, expected) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", [0, 1, 2, (0, 2), (1, 2), (0, 1)])
def test_each_reduction_is_pytensors_c_loop_bitwise(name, axis) -> None:
    x = pt.tensor("x", dtype="float64", shape=(None, None, None))
    fo, fc, kernels = compiled(REDUCTIONS[name](x, axis), x)
    assert len(kernels) == 1
    rng = np.random.default_rng(7)
    # A wide range of magnitudes: another order of additions rounds differently.
    base = rng.standard_normal((6, 5, 9)) * 10.0 ** rng.uniform(-6, 6, (6, 5, 9))
    if name == "prod":
        base = 1.0 + rng.standard_normal((6, 5, 9)) * 0.1
    for make in LAYOUTS.values():
        value = make(base)
        for _ in range(2):  # the kept result
            same(fo(value), fc(value))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("columns", [1, 2, 3, 7, 8, 40])
@pytest.mark.parametrize("axis", [0, 1])
def test_short_rows_reduced_over_either_axis_are_pytensors_bitwise(name, columns, axis) -> None:
    # A (600, columns) reduced over its rows or its columns: under 8 columns
    # the loops run the other way round, each output folded in the same order.
    x = pt.tensor("x", dtype="float64", shape=(None, None))
    fo, fc, kernels = compiled(REDUCTIONS[name](x, axis), x)
    assert len(kernels) == 1
    rng = np.random.default_rng(columns)
    base = rng.standard_normal((600, columns)) * 10.0 ** rng.uniform(-6, 6, (600, columns))
    if name == "prod":
        base = 1.0 + rng.standard_normal((600, columns)) * 0.01
    base[5, 0] = np.nan if name in ("max", "min") else base[5, 0]
    for value in (base, np.asfortranarray(base), base[::-2], base[:, ::-1]):
        for _ in range(2):  # the kept result
            same(fo(value), fc(value))
    empty = base[:0] if axis == 0 else base[:, :0]
    if name in ("max", "min"):  # no identity: both refuse an empty axis
        for f in (fo, fc):
            with pytest.raises(ValueError, match="zero-size"):
                f(empty)
    else:
        same(fo(empty), fc(empty))


def test_the_fold_order_is_pytensors_not_the_axes_order() -> None:
    # A Fortran-ordered input summed over axes 0 and 1: PyTensor's loop takes
    # axis 1 (the larger stride) outside, so each output adds a[0, 1] before
    # a[1, 0]; in the axes' order 1.0 would absorb both halves.
    x = pt.tensor("x", dtype="float64", shape=(None, None, None))
    fo, fc, kernels = compiled(x.sum(axis=(0, 1)), x)
    assert kernels
    value = np.zeros((2, 2, 1))
    value[0, 0, 0], value[0, 1, 0], value[1, 0, 0], value[1, 1, 0] = 2.0**-53, 2.0**-53, 1.0, 0.0
    value = np.asfortranarray(value)
    axes_order = ((0.0 + value[0, 0, 0]) + value[0, 1, 0]) + value[1, 0, 0]
    strides_order = ((0.0 + value[0, 0, 0]) + value[1, 0, 0]) + value[0, 1, 0]
    assert axes_order != strides_order
    same(fo(value), fc(value))
    assert fo(value)[0] == strides_order


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float32", "bool"])
def test_other_dtypes_are_pytensors(dtype) -> None:
    x = pt.tensor("x", dtype=dtype, shape=(None, None))
    rng = np.random.default_rng(2)
    value = rng.integers(0, 3, (7, 4)) if dtype != "float32" else rng.normal(size=(7, 4))
    value = value.astype(dtype)
    reductions = ["max", "min", "any", "all"] + (["sum", "prod"] if dtype != "bool" else [])
    for name in reductions:
        fo, fc, kernels = compiled(REDUCTIONS[name](x, 1), x)
        if kernels:
            for v in (value, value.T.copy().T, value[::-1]):
                same(fo(v), fc(v))
        else:  # a cast accumulator (float32 sums): PyTensor's code
            assert name in ("sum", "prod")
            same(fo(value), fc(value))


def test_empty_inputs_and_the_zero_size_error() -> None:
    x = pt.matrix("x")
    for name in ("sum", "prod", "any", "all"):
        fo, fc, kernels = compiled(REDUCTIONS[name](x, 0), x)
        assert kernels
        same(fo(np.zeros((0, 3))), fc(np.zeros((0, 3))))
        same(fo(np.zeros((3, 0))), fc(np.zeros((3, 0))))
    fo, fc, kernels = compiled(pt.max(x, axis=0), x)
    assert kernels
    with pytest.raises(ValueError, match="zero-size on axis 0"):
        fo(np.zeros((0, 3)))
    same(fo(np.zeros((3, 0))), fc(np.zeros((3, 0))))
    fo, fc, kernels = compiled(pt.max(x, axis=0, initial=-np.inf), x)
    if kernels:  # this PyTensor has max(initial=...)
        same(fo(np.zeros((0, 3))), np.full(3, -np.inf))


def test_nan_and_composite_reductions() -> None:
    x = pt.matrix("x")
    value = np.array([[1.0, np.nan, -np.inf], [np.inf, 2.0, -0.0], [-0.0, 3.0, 0.0]])
    for name in ("sum", "max", "min", "prod"):
        fo, fc, kernels = compiled(REDUCTIONS[name](x, 1), x)
        assert kernels
        same(fo(value), fc(value))
    # A reduction with a composite scalar op (PyMC's sum of squares).
    from pytensor.scalar import Composite, add, float64, sqr
    from pytensor.tensor.elemwise import CAReduce

    a, b = float64("a"), float64("b")
    fused = Composite([a, b], [add(a, sqr(b))])
    fused.identity = add.identity  # as PyTensor's reduction fusion sets it
    op = CAReduce(fused, axis=(1,))
    fo, fc, kernels = compiled(op(x), x)
    assert kernels
    same(fo(value[:, 1:]), fc(value[:, 1:]))


def test_declines_and_debug_mode_agrees() -> None:
    m = pt.matrix("m")
    assert careduce_kernel(m.sum().owner) is None  # to one element: NumPy's iterator
    assert careduce_kernel(pt.max(m).owner) is None
    assert careduce_kernel(pt.fmatrix().sum(axis=0).owner) is None  # float64 accumulator
    assert careduce_kernel(pt.cmatrix().sum(axis=0).owner) is None  # complex
    assert isinstance(careduce_kernel(m.sum(axis=0).owner), CAReduceKernel)
    f = pytensor.function([m], [m.sum(axis=0), pt.max(m, axis=1)], mode=DEBUG)
    got = f(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(got[0], [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(got[1], [2.0, 5.0])

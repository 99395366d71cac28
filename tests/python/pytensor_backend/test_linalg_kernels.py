"""Cholesky, SolveTriangular and CholeskySolve in C (opweave/pytensor/
_linalg_kernels.py, through the shared library's LAPACK calls): values
bitwise those of the op's perform for every layout, precision and failure,
the same errors, and DebugMode's checks (values against perform,
reference counts)."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.tensor.linalg.decomposition.cholesky import Cholesky  # noqa: E402
from pytensor.tensor.linalg.inverse import MatrixInverse  # noqa: E402
from pytensor.tensor.linalg.solvers.psd import CholeskySolve  # noqa: E402
from pytensor.tensor.linalg.solvers.triangular import SolveTriangular  # noqa: E402
from pytensor.tensor.linalg.summary import Det, SLogDet  # noqa: E402
from support.pytensor_modes import DEBUG, both  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor._linalg_kernels import (  # noqa: E402
    CholeskyKernel,
    NumpyLinalgKernel,
    SolveKernel,
    cholesky_kernel,
    solve_kernel,
)


def kernels(f) -> list[type]:
    return [type(code_op(n)) for n in f.maker.fgraph.toposort() if code_op(n) is not n.op]


def layout(value: np.ndarray, how: str) -> np.ndarray:
    """``value`` in the given memory layout, same values."""
    if how == "C":
        return np.ascontiguousarray(value)
    if how == "F":
        return np.asfortranarray(value)
    wide = np.zeros((value.shape[0], 2 * value.shape[1]), dtype=value.dtype)
    wide[:, ::2] = value
    return wide[:, ::2]  # neither C nor Fortran


def spd(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == np.ascontiguousarray(expected).tobytes() or np.array_equal(
        got, expected, equal_nan=True
    )
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("how", ["C", "F", "strided"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_cholesky_is_performs_bitwise(lower, how, dtype) -> None:
    x = pt.matrix("x", dtype=dtype)
    fo, fp = both([x], Cholesky(lower=lower)(x))
    assert kernels(fo) == [CholeskyKernel]
    value = layout((spd(7) * (10 if dtype == "int64" else 1)).astype(dtype), how)
    got, expected = fo(value), fp(value)
    same(got, expected)
    assert got.dtype == ("float32" if dtype == "float32" else "float64")


@pytest.mark.parametrize("how", ["C", "F"])
@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_in_place_factors_as_perform_does(how, lower) -> None:
    """overwrite_a: perform factors a C-ordered input as its transpose, in
    place; so does the kernel (into the intermediate it may destroy)."""
    x = pt.dmatrix("x")
    scaled = x * 1.0 if how == "C" else (x.T * 1.0).T
    out = Cholesky(lower=lower, overwrite_a=True)(scaled)
    fo, fp = both([x], out + 0.0)
    assert kernels(fo).count(CholeskyKernel) == 1
    value = spd(6, seed=3)
    same(fo(value), fp(value))
    reference = np.linalg.cholesky(value)
    np.testing.assert_allclose(fo(value), reference if lower else reference.T, rtol=1e-13)


def test_cholesky_failures_are_performs() -> None:
    x = pt.dmatrix("x")
    fo, fp = both([x], Cholesky()(x))
    not_definite = -spd(4)
    assert np.isnan(fo(not_definite)).all()
    same(fo(not_definite), fp(not_definite))
    messages = []
    for f in (fo, fp):
        with pytest.raises(ValueError) as raised:
            f(np.ones((3, 4)))
        messages.append(str(raised.value).split("\n")[0])
    assert (
        messages[0]
        == messages[1]
        == ("Input array is expected to be square but has the shape: (3, 4).")
    )
    empty = np.zeros((0, 0))
    same(fo(empty), fp(empty))


@pytest.mark.parametrize("b_ndim", [1, 2])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("how", ["C", "F", "strided"])
def test_solve_triangular_is_performs_bitwise(b_ndim, lower, unit, how) -> None:
    a, b = pt.dmatrix("a"), pt.tensor("b", dtype="float64", shape=(None,) * b_ndim)
    op = SolveTriangular(lower=lower, unit_diagonal=unit, b_ndim=b_ndim)
    fo, fp = both([a, b], op(a, b))
    assert kernels(fo) == [SolveKernel]
    rng = np.random.default_rng(1)
    factor = np.linalg.cholesky(spd(6))
    av = layout(factor if lower else factor.T, how)
    bv = rng.normal(size=(6, 3)[:b_ndim])
    if b_ndim == 2:
        bv = layout(bv, how)
    same(fo(av, bv), fp(av, bv))
    np.testing.assert_allclose(
        (np.tril(av) if lower else np.triu(av)) @ fo(av, bv) if not unit else fo(av, bv),
        bv if not unit else fp(av, bv),
    )


def test_solve_triangular_failures_precisions_and_in_place() -> None:
    a, b = pt.dmatrix("a"), pt.dmatrix("b")
    fo, fp = both([a, b], SolveTriangular(lower=True, b_ndim=2)(a, b))
    singular = np.tril(np.ones((3, 3)))
    singular[1, 1] = 0.0
    assert np.isnan(fo(singular, np.ones((3, 2)))).all()
    same(fo(singular, np.ones((3, 2))), fp(singular, np.ones((3, 2))))
    for args in ((np.ones((3, 4)), np.ones((3, 2))), (np.eye(3), np.ones((4, 2)))):
        messages = []
        for f in (fo, fp):
            with pytest.raises(ValueError) as raised:
                f(*args)
            messages.append(str(raised.value).split("\n")[0])
        assert messages[0] == messages[1]
    same(fo(np.eye(3), np.ones((3, 0))), fp(np.eye(3), np.ones((3, 0))))
    # float32 and integers: the routine SciPy picks
    a32, b32 = pt.fmatrix("a32"), pt.fmatrix("b32")
    fo32, fp32 = both([a32, b32], SolveTriangular(lower=True, b_ndim=2)(a32, b32))
    av = np.tril(np.random.default_rng(2).normal(size=(5, 5))).astype("float32") + 5 * np.eye(
        5, dtype="float32"
    )
    bv = np.ones((5, 2), dtype="float32")
    same(fo32(av, bv), fp32(av, bv))
    ai = pt.lmatrix("ai")
    foi, fpi = both([ai, b], SolveTriangular(lower=True, b_ndim=2)(ai, b))
    same(
        foi(np.tril(np.ones((3, 3), dtype="int64")), np.ones((3, 2))),
        fpi(np.tril(np.ones((3, 3), dtype="int64")), np.ones((3, 2))),
    )
    # overwrite_b on an intermediate: solved in place, same values
    out = SolveTriangular(lower=True, b_ndim=2, overwrite_b=True)(a, (b.T * 2.0).T)
    fo_in, fp_in = both([a, b], out + 0.0)
    tri = np.linalg.cholesky(spd(3))
    same(fo_in(tri, np.ones((3, 2))), fp_in(tri, np.ones((3, 2))))


@pytest.mark.parametrize("b_ndim", [1, 2])
@pytest.mark.parametrize("lower", [True, False])
def test_cho_solve_is_performs_bitwise(b_ndim, lower) -> None:
    c, b = pt.dmatrix("c"), pt.tensor("b", dtype="float64", shape=(None,) * b_ndim)
    fo, fp = both([c, b], CholeskySolve(lower=lower, b_ndim=b_ndim)(c, b))
    assert kernels(fo) == [SolveKernel]
    matrix = spd(5, seed=4)
    factor = np.linalg.cholesky(matrix)
    cv = factor if lower else np.asfortranarray(factor.T)
    bv = np.random.default_rng(5).normal(size=(5, 2)[:b_ndim])
    same(fo(cv, bv), fp(cv, bv))
    np.testing.assert_allclose(matrix @ fo(cv, bv), bv, rtol=1e-10, atol=1e-12)
    messages = []
    for f in (fo, fp):
        with pytest.raises(ValueError) as raised:
            f(np.ones((5, 4)), bv)
        messages.append(str(raised.value).split("\n")[0])
    assert messages[0] == messages[1] == "The factored matrix c is not square."
    zero = np.zeros((5, 5))
    same(fo(zero, bv), fp(zero, bv))  # potrs does not fail on a zero factor: inf/nan as perform


def test_debug_mode_checks_the_linalg_kernels_against_perform() -> None:
    x, b = pt.dmatrix("x"), pt.dmatrix("b")
    chol = Cholesky(lower=True)(x)
    solved = SolveTriangular(lower=True, b_ndim=2)(chol, b)
    back = CholeskySolve(lower=True, b_ndim=2)(chol, b)
    f = pytensor.function([x, b], [chol, solved, back], mode=DEBUG)
    value, rhs = spd(4, seed=7), np.arange(8.0).reshape(4, 2)
    got = f(value, rhs)
    np.testing.assert_allclose(got[0] @ got[0].T, value, rtol=1e-12)
    np.testing.assert_allclose(value @ got[2], rhs, rtol=1e-10, atol=1e-12)


def test_outside_their_cases_the_kernels_decline() -> None:
    x = pt.zmatrix("x")
    assert cholesky_kernel(Cholesky()(x).owner) is None  # complex
    a, b = pt.dmatrix("a"), pt.zmatrix("b")
    assert solve_kernel(SolveTriangular(b_ndim=2)(a, b).owner) is None


def test_gradients_of_a_cholesky_model_run_in_c_and_match_the_c_back_end() -> None:
    x, b = pt.dmatrix("x"), pt.dvector("b")
    sym = x @ x.T + 4 * pt.eye(4)
    chol = pt.linalg.cholesky(sym)
    cost = pt.linalg.solve_triangular(chol, b, lower=True).sum() + pt.log(pt.diag(chol)).sum()
    grads = pytensor.grad(cost, [x, b])
    fo = pytensor.function([x, b], [cost, *grads], mode="OPWEAVE")
    fc = pytensor.function([x, b], [cost, *grads], mode="CVM")
    rng = np.random.default_rng(8)
    args = (rng.normal(size=(4, 4)), rng.normal(size=4))
    # one module for the whole graph: no node runs in Python
    assert getattr(fo.vm.function, "node_outcomes", None) is None
    for got, expected in zip(fo(*args), fc(*args), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def errors_of(f, value) -> tuple[str, str, str]:
    with pytest.raises(Exception) as raised:
        f(value)
    error = raised.value
    return type(error).__name__, str(error).split("\n")[0], repr(error.__cause__)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("how", ["C", "F", "strided"])
def test_inverse_and_determinants_are_numpys_bitwise(dtype, how) -> None:
    x = pt.matrix("x", dtype=dtype)
    outs = [MatrixInverse()(x), Det()(x), *SLogDet()(x)]
    fo, fp = both([x], outs)
    assert kernels(fo) == [NumpyLinalgKernel] * 3
    value = layout((np.random.default_rng(9).normal(size=(5, 5)) * 4).astype(dtype), how)
    for got, expected in zip(fo(value), fp(value), strict=True):
        same(got, expected)
    np.testing.assert_allclose(fo(value)[0] @ value, np.eye(5), atol=1e-3)


def test_inverse_and_determinant_failures_are_performs() -> None:
    x = pt.dmatrix("x")
    for op in (MatrixInverse(), Det()):
        fo, fp = both([x], op(x))
        for bad in (np.ones((3, 3)), np.ones((3, 4))):
            if isinstance(op, Det) and bad.shape == (3, 3):
                same(fo(bad), fp(bad))  # a singular matrix's determinant is 0
                continue
            assert errors_of(fo, bad) == errors_of(fp, bad)
    fo, fp = both([x], MatrixInverse()(x))
    assert errors_of(fo, np.ones((2, 2)))[:2] == ("LinAlgError", "Singular matrix")
    nan = np.full((2, 2), np.nan)
    same(fo(nan), fp(nan))  # NaNs are not singular to NumPy: NaNs out
    with np.errstate(invalid="raise"):  # the caller's error state does not matter
        assert errors_of(fo, np.ones((2, 2)))[0] == "LinAlgError"

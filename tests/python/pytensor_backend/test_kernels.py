"""opweave's C code for PyTensor ops that a pip-installed PyTensor runs in
Python (opweave/pytensor/_kernels.py): ``Gemv`` and ``Dot22`` through
NumPy's C API, as their ``perform`` computes them. Each runs in C under "OPWEAVE", gives what the
op's ``perform`` gives, fails as it fails, and changes nothing for PyTensor's
own back ends."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from pytensor.tensor.blas.gemm import Dot22  # noqa: E402
from pytensor.tensor.blas.gemv import Gemv  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._kernels import Dot22Kernel, GemvKernel  # noqa: E402

C = Mode(linker="opweave", optimizer=None)
PYTHON = Mode(linker="py", optimizer=None)


def runs_in_c(f: object) -> bool:
    """Whether no node of the opweave function ``f`` ran its perform."""
    outcomes = getattr(f.vm.function, "node_outcomes", None)  # type: ignore[attr-defined]
    return outcomes is None or None not in outcomes


def gemv_functions(inplace: bool, dtype: str = "float64"):
    y, x = pt.vector("y", dtype=dtype), pt.vector("x", dtype=dtype)
    A = pt.matrix("A", dtype=dtype)
    alpha, beta = pt.scalar("alpha", dtype=dtype), pt.scalar("beta", dtype=dtype)
    inputs = [y, alpha, A, x, beta]
    out = Gemv(inplace)(*inputs)
    make = lambda mode: pytensor.function(inputs, out, mode=mode, accept_inplace=True)  # noqa: E731
    return make(C), make(PYTHON)


def gemv_args(rng, m, n, layout, beta, dtype="float64"):
    A = rng.normal(size=(m, n)).astype(dtype)
    if layout == "F":
        A = np.asfortranarray(A)
    elif layout == "strided":
        A = rng.normal(size=(m, 2 * n)).astype(dtype)[:, ::2]
    y = rng.normal(size=m).astype(dtype)
    x = rng.normal(size=2 * n).astype(dtype)[::2]  # not contiguous
    return [y, np.array(1.5, dtype=dtype), A, x, np.array(beta, dtype=dtype)]


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize(("alpha", "beta"), [(1.0, 0.0), (1.5, 0.0), (1.0, 1.0), (1.5, 0.5)])
def test_gemv_runs_in_c_and_gives_what_perform_gives(inplace, layout, alpha, beta) -> None:
    fc, fp = gemv_functions(inplace)
    assert runs_in_c(fc) and isinstance(code_op(fc.maker.fgraph.toposort()[0]), GemvKernel)
    rng = np.random.default_rng(0)
    args = gemv_args(rng, 300, 20, layout, beta)
    args[1] = np.array(alpha)
    got = fc(*[np.copy(a) for a in args])
    np.testing.assert_array_equal(got, fp(*[np.copy(a) for a in args]))  # bitwise


def test_gemv_with_nan_in_y_and_beta_zero_gives_no_nan() -> None:
    fc, fp = gemv_functions(True)
    rng = np.random.default_rng(1)
    y, alpha, A, x, _ = gemv_args(rng, 50, 7, "C", 0.0)
    y[:] = np.nan  # beta == 0: y's values are not used
    got = fc(np.copy(y), alpha, A, x, np.array(0.0))
    np.testing.assert_array_equal(got, fp(np.copy(y), alpha, A, x, np.array(0.0)))
    np.testing.assert_allclose(got, 1.5 * (A @ x), rtol=1e-12)
    assert not np.isnan(got).any()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_gemv_other_dtypes_and_empty_inputs(dtype) -> None:
    fc, fp = gemv_functions(False, dtype)
    # float16's C type is its bits: its alpha and beta tests stay in perform.
    assert runs_in_c(fc) == (dtype != "float16")
    rng = np.random.default_rng(2)
    args = [(10 * a).astype(dtype) for a in gemv_args(rng, 40, 9, "C", 0.5)]
    got = fc(*[np.copy(a) for a in args])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, fp(*[np.copy(a) for a in args]))
    for m, n in [(3, 0), (0, 4)]:
        empty = [np.arange(m), np.array(2), np.ones((m, n)), np.ones(n), np.array(3)]
        empty = [a.astype(dtype) for a in empty]
        np.testing.assert_array_equal(fc(*empty), fp(*empty))


def test_gemv_shape_mismatch_raises_as_perform_does() -> None:
    fc, fp = gemv_functions(False)
    args = [np.ones(3), np.array(1.0), np.ones((3, 4)), np.ones(5), np.array(0.0)]
    with pytest.raises(ValueError, match=r"shapes \(3,4\) and \(5,\) not aligned"):
        fc(*args)
    with pytest.raises(ValueError, match=r"shapes \(3,4\) and \(5,\) not aligned"):
        fp(*args)


def test_gemv_of_complex_numbers_declines_and_runs_perform(caplog) -> None:
    y, x, A = pt.zvector("y"), pt.zvector("x"), pt.zmatrix("A")
    alpha, beta = pt.zscalar("alpha"), pt.zscalar("beta")
    with caplog.at_level(logging.INFO, logger="opweave.link.c.kernels"):
        f = pytensor.function([y, alpha, A, x, beta], Gemv(False)(y, alpha, A, x, beta), mode=C)
    assert not runs_in_c(f)
    assert "registered C code for Gemv{no_inplace} does not cover these inputs" in caplog.text
    args = [np.ones(2, complex), np.array(1j), np.eye(2, dtype=complex), np.ones(2, complex), 0j]
    np.testing.assert_array_equal(f(*args), [1j, 1j])


def test_dot22_runs_in_c_as_np_dot_without_blas_flags() -> None:
    a, b = pt.dmatrix("a"), pt.dmatrix("b")
    with pytensor.config.change_flags(blas__ldflags=""):
        fc = pytensor.function([a, b], Dot22()(a, b), mode=C)
        node = fc.maker.fgraph.toposort()[0]
        assert runs_in_c(fc) and isinstance(code_op(node), Dot22Kernel)
    rng = np.random.default_rng(3)
    for x, y in [
        (rng.normal(size=(40, 30)), rng.normal(size=(30, 20))),
        (np.asfortranarray(rng.normal(size=(5, 6))), rng.normal(size=(12, 4))[::2]),
        (np.ones((0, 3)), np.ones((3, 2))),
    ]:
        np.testing.assert_array_equal(fc(x, y), np.dot(x, y))
    with pytest.raises(ValueError, match="not aligned"):
        fc(np.ones((2, 3)), np.ones((4, 2)))
    # With BLAS flags, PyTensor's own C code runs: the kernel declines.
    with pytensor.config.change_flags(blas__ldflags="-lopenblas"):
        assert code_op(node) is node.op


def test_debug_mode_checks_the_kernels_against_perform() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    A, B, x, y = pt.dmatrix("A"), pt.dmatrix("B"), pt.dvector("x"), pt.dvector("y")
    inputs = [y, pt.dscalar("alpha"), A, x, pt.dscalar("beta")]
    with pytensor.config.change_flags(blas__ldflags=""):
        f = pytensor.function([*inputs, B], [Gemv(False)(*inputs), Dot22()(A, B)], mode=mode)
    rng = np.random.default_rng(4)
    args = [rng.normal(size=6), np.array(2.0), rng.normal(size=(6, 4)), rng.normal(size=4)]
    got = f(*args, np.array(0.5), np.ones((4, 3)))
    np.testing.assert_allclose(got[0], 2.0 * args[2] @ args[3] + 0.5 * args[0], rtol=1e-12)
    np.testing.assert_array_equal(got[1], np.dot(args[2], np.ones((4, 3))))
    checks = f.vm.function.node_checks
    assert len(checks) == 2 and all(check.mode.check_refcounts for check in checks)


def test_pytensors_classes_and_back_ends_are_unchanged() -> None:
    assert "c_code" not in vars(Gemv)  # the class is not patched
    y, A, x = pt.dvector("y"), pt.dmatrix("A"), pt.dvector("x")
    out = Gemv(False)(y, pt.constant(1.0), A, x, pt.constant(0.0))
    f = pytensor.function([y, A, x], out, mode="CVM")
    assert not isinstance(f.maker.linker, OpweaveLinker)
    np.testing.assert_array_equal(f(np.ones(2), np.eye(2), np.ones(2)), [1.0, 1.0])

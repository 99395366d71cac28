"""Blockwise in C (opweave/pytensor/_blockwise_kernel.py): a loop over the
core op's C code (opweave's kernels and PyTensor's own C ops alike), with
perform's batch broadcasting, errors and values, bitwise; the NumPy
gufunc cores called on the whole batch, as perform does."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.graph.basic import Apply  # noqa: E402
from pytensor.link.c.op import COp  # noqa: E402
from pytensor.tensor.blockwise import Blockwise  # noqa: E402
from support.pytensor_modes import DEBUG, both  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor._blockwise_kernel import BlockwiseKernel, blockwise_kernel  # noqa: E402
from opweave.pytensor._linalg_kernels import NumpyLinalgKernel  # noqa: E402


def kernels(f) -> list[str]:
    return [type(code_op(n)).__name__ for n in f.maker.fgraph.toposort()]


def spd_stack(batch: tuple[int, ...], n: int, seed: int = 0) -> np.ndarray:
    a = np.random.default_rng(seed).normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def same(got, expected) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def errors(fo, fp, *args) -> str:
    found = []
    for f in (fo, fp):
        with pytest.raises(Exception) as raised:
            f(*args)
        found.append((type(raised.value), str(raised.value).split("\n")[0]))
    assert found[0] == found[1]
    return found[0][1]


def test_batched_cholesky_and_solves_loop_over_the_core_kernels() -> None:
    x = pt.tensor("x", shape=(None, None, None, None))
    b = pt.tensor("b", shape=(None, 1, None, None))  # broadcast along axis 1
    chol = pt.linalg.cholesky(x)
    outs = [
        chol,
        pt.linalg.solve_triangular(chol, b, lower=True),
        pt.linalg.cho_solve((chol, True), b),
    ]
    fo, fp = both([x, b], outs)
    assert kernels(fo) == ["BlockwiseKernel"] * 3
    xv = spd_stack((2, 3), 4)
    bv = np.random.default_rng(1).normal(size=(2, 1, 4, 2))
    for value in (xv, np.asfortranarray(xv), xv[:, ::-1]):
        for got, expected in zip(fo(value, bv), fp(value, bv), strict=True):
            same(got, expected)
    # a failure in one position: NaNs there only, as perform gives
    bad = xv.copy()
    bad[1, 2] = -bad[1, 2]
    got = fo(bad, bv)[0]
    assert np.isnan(got[1, 2]).all() and not np.isnan(got[0]).any()
    same(got, fp(bad, bv)[0])


def test_batch_errors_are_performs() -> None:
    x, b = pt.tensor3("x"), pt.tensor3("b")
    fo, fp = both([x, b], pt.linalg.solve_triangular(x, b, lower=True))
    eye = np.broadcast_to(np.eye(3), (2, 3, 3)).copy()
    assert "Runtime broadcasting not allowed" in errors(fo, fp, eye, np.ones((1, 3, 2)))
    assert "shape mismatch" in errors(fo, fp, eye, np.ones((4, 3, 2)))
    assert "zero size" in errors(fo, fp, eye[:0], np.ones((0, 3, 2)))


def test_gufunc_cores_run_on_the_whole_batch_as_perform() -> None:
    x = pt.tensor3("x")
    outs = [pt.linalg.inv(x), pt.linalg.det(x), *pt.linalg.slogdet(x)]
    fo, fp = both([x], outs)
    assert "NumpyLinalgKernel" in kernels(fo) and "Blockwise" not in kernels(fo)
    value = np.random.default_rng(2).normal(size=(3, 4, 4))
    for args in ((value,), (value[:0],)):  # an empty batch: NumPy's empty results
        for got, expected in zip(fo(*args), fp(*args), strict=True):
            same(got, expected)
    node = outs[0].owner
    assert isinstance(blockwise_kernel(node), NumpyLinalgKernel)


class RowNorm(COp):
    """A core op with PyTensor's own C code: the squared norm of a vector."""

    __props__ = ()
    gufunc_signature = "(n)->()"

    def make_node(self, v):
        v = pt.as_tensor_variable(v)
        return Apply(self, [v], [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, outputs):
        (v,) = inputs
        outputs[0][0] = np.asarray(np.sum(v.astype("float64") ** 2))

    def c_code_cache_version(self):
        return (1,)

    def c_code(self, node, name, inputs, outputs, sub):
        (v,), (z,), fail = inputs, outputs, sub["fail"]
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_EMPTY(0, NULL, NPY_FLOAT64, 0);
        if ({z} == NULL) {{ {fail} }}
        double total = 0.0;
        for (npy_intp i = 0; i < PyArray_DIMS({v})[0]; ++i) {{
            double value = (double)*(dtype_{v}*)(PyArray_BYTES({v}) + i * PyArray_STRIDES({v})[0]);
            total += value * value;
        }}
        *(double*)PyArray_DATA({z}) = total;
        """


def test_a_core_op_with_its_own_c_code() -> None:
    m = pt.tensor3("m")
    out = Blockwise(RowNorm())(m)
    fo, fp = both([m], out * 2.0)
    node = out.owner
    assert isinstance(blockwise_kernel(node), BlockwiseKernel)
    value = np.arange(24.0).reshape(2, 3, 4)
    for v in (value, value[:, ::-1, ::2], np.asfortranarray(value)):
        same(fo(v), fp(v))


def test_debug_mode_checks_the_loop_against_perform() -> None:
    x, b = pt.tensor3("x"), pt.tensor3("b")
    chol = pt.linalg.cholesky(x)
    f = pytensor.function(
        [x, b], [chol, pt.linalg.solve_triangular(chol, b, lower=True)], mode=DEBUG
    )
    xv, bv = spd_stack((2,), 3, seed=4), np.ones((2, 3, 1))
    got = f(xv, bv)
    np.testing.assert_allclose(got[0] @ np.swapaxes(got[0], -1, -2), xv, rtol=1e-12)


def test_batched_models_match_the_c_back_end_after_rewrites() -> None:
    x, b = pt.tensor3("x"), pt.tensor3("b")
    chol = pt.linalg.cholesky(x)
    cost = pt.linalg.solve_triangular(chol, b, lower=True).sum() + pt.log(pt.linalg.det(x)).sum()
    grads = pytensor.grad(cost, [x, b])
    fo = pytensor.function([x, b], [cost, *grads], mode="OPWEAVE")
    fc = pytensor.function([x, b], [cost, *grads], mode="CVM")
    args = (spd_stack((3,), 4, seed=5), np.random.default_rng(6).normal(size=(3, 4, 2)))
    for got, expected in zip(fo(*args), fc(*args), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    outcomes = getattr(fo.vm.function, "node_outcomes", None) or []
    assert all(o is not None for o in outcomes)  # no node in Python

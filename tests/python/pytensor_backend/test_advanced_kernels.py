"""Advanced indexing in C where PyTensor's C code declines (opweave/pytensor/
_advanced_kernels.py): n-d integer indices, boolean masks, slices between
arrays, set and increment on n-d ``x`` (repeated indices accumulating as
``np.add.at``): values and errors those of perform (NumPy's), through the
library's loops and NumPy's path alike, and DebugMode's checks."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from support.pytensor_modes import DEBUG, both  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor._advanced_kernels import AdvancedIncKernel, AdvancedKernel  # noqa: E402
from opweave.pytensor._subtensor_kernel import SubtensorKernel  # noqa: E402


def kernel_of(f) -> list[object]:
    return [code_op(n) for n in f.maker.fgraph.toposort() if code_op(n) is not n.op]


def check(fo, fp, *args) -> None:
    got, expected = fo(*args), fp(*args)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


def same_error(fo, fp, *args) -> str:
    messages = []
    for f in (fo, fp):
        with pytest.raises((IndexError, ValueError)) as raised:
            f(*args)
        messages.append((type(raised.value), str(raised.value).split("\n")[0]))
    assert messages[0] == messages[1]
    return messages[0][1]


RNG = np.random.default_rng(0)
X3 = RNG.normal(size=(4, 5, 3))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool", "complex128"])
def test_a_2d_gather_is_numpys(dtype) -> None:
    x = pt.matrix("x", dtype=dtype)
    rows, cols = pt.lvector("rows"), pt.ivector("cols")
    fo, fp = both([x, rows, cols], x[rows, cols])
    (kernel,) = kernel_of(fo)
    assert isinstance(kernel, AdvancedKernel) and kernel.fast
    value = (RNG.normal(size=(5, 4)) * 10).astype(dtype)
    r, c = np.array([0, 4, -1, 2, 2]), np.array([3, 0, 1, -4, 2], dtype="int32")
    for _ in range(2):  # the kept result, second call
        check(fo, fp, value, r, c)
    check(fo, fp, value[::-1, ::2], r[:3], c[:3] % 2)
    check(fo, fp, value, r[:0], c[:0])


@pytest.mark.parametrize(
    "index",
    [
        lambda x, i, j: x[i, j],  # leading axes, the rest whole
        lambda x, i, j: x[i],  # n-d index on axis 0 of 3-d x: PyTensor's own take
        lambda x, i, j: x[:, i, j],  # after a slice: NumPy's path
        lambda x, i, j: x[i, i[0, 0] :, j],  # split by a slice (a variable start)
        lambda x, i, j: x[i, j, i[0, 1]],
    ],
)
def test_n_d_gathers_are_numpys(index) -> None:
    x = pt.tensor3("x")
    i, j = pt.lmatrix("i"), pt.lmatrix("j")
    out = index(x, i, j)
    fo, fp = both([x, i, j], out)
    own_take = out.owner.op._take_axis() is not None
    advanced = [type(k) for k in kernel_of(fo) if not isinstance(k, SubtensorKernel)]
    assert advanced == ([] if own_take else [AdvancedKernel])
    iv, jv = np.array([[0, 1], [-1, 2]]), np.array([[1, 0], [2, -2]])
    check(fo, fp, X3, iv, jv)
    check(fo, fp, np.asfortranarray(X3), iv.T, jv.T)


def test_boolean_masks_and_broadcast_indices_are_numpys() -> None:
    x = pt.matrix("x")
    mask = pt.matrix("mask", dtype="bool")
    fo, fp = both([x, mask], x[mask])
    value = RNG.normal(size=(3, 4))
    check(fo, fp, value, value > 0)
    assert "boolean index did not match" in same_error(fo, fp, value, np.ones((2, 4), bool))
    rows, cols = pt.lmatrix("rows"), pt.lvector("cols")  # (2,1) with (3,) broadcast
    fo, fp = both([x, rows, cols], x[rows, cols])
    check(fo, fp, value, np.array([[0], [2]]), np.array([1, 2, 3]))
    assert "could not be broadcast" in same_error(
        fo, fp, value, np.array([[0, 1]]), np.array([1, 2, 3])
    )


@pytest.mark.parametrize("bad", [(5, 0), (0, 4), (-4, 0), (0, -5)])
def test_out_of_bounds_raises_numpys_error(bad) -> None:
    x = pt.matrix("x")
    rows, cols = pt.lvector("rows"), pt.lvector("cols")
    fo, fp = both([x, rows, cols], x[rows, cols])
    message = same_error(fo, fp, np.ones((3, 4)), np.array([0, bad[0]]), np.array([1, bad[1]]))
    assert "out of bounds" in message


@pytest.mark.parametrize("mode", ["set", "inc", "inc_ignore_duplicates"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_updates_at_repeated_indices_are_performs(mode, dtype) -> None:
    x = pt.matrix("x", dtype=dtype)
    y = pt.vector("y", dtype=dtype)
    rows, cols = pt.lvector("rows"), pt.lvector("cols")
    if mode == "set":
        out = pt.set_subtensor(x[rows, cols], y)
    else:
        out = pt.inc_subtensor(x[rows, cols], y, ignore_duplicates=mode != "inc")
    fo, fp = both([x, y, rows, cols], out)
    assert [type(k) for k in kernel_of(fo)] == [AdvancedIncKernel]
    value = (RNG.normal(size=(3, 4)) * 5).astype(dtype)
    yv = (np.arange(5) + 0.25).astype(dtype)
    r, c = np.array([0, 2, 0, -1, 0]), np.array([1, 3, 1, 0, 1])  # (0, 1) three times
    check(fo, fp, value, yv, r, c)
    if mode == "inc" and dtype == "float64":
        expected = value.copy()
        np.add.at(expected, (r, c), yv)
        np.testing.assert_array_equal(fo(value, yv, r, c), expected)
    assert np.array_equal(value, (RNG.normal(size=(3, 4)) * 0 + value))  # input untouched


def test_n_d_updates_with_broadcast_and_mixed_indices_are_performs() -> None:
    x, y3, y2, y0 = pt.tensor3("x"), pt.tensor3("y3"), pt.matrix("y2"), pt.scalar("y0")
    i, j = pt.lvector("i"), pt.lvector("j")
    outs = [
        pt.inc_subtensor(x[i, j], y2),  # rest axis whole: a block per index
        pt.set_subtensor(x[i, j], y0),  # a 0-d value
        pt.inc_subtensor(x[:, i, j], y2[0]),  # after a slice, y broadcast: NumPy's path
        pt.set_subtensor(x[i], y3),
        pt.inc_subtensor(x[i, 1:], y3[:, 1:]),
    ]
    fo, fp = both([x, y3, y2, y0, i, j], outs)
    iv, jv = np.array([1, 3, 1]), np.array([0, -1, 0])
    y3v, y2v = RNG.normal(size=(3, 5, 3)), RNG.normal(size=(3, 3))
    for got, expected in zip(
        fo(X3, y3v, y2v, np.array(2.5), iv, jv),
        fp(X3, y3v, y2v, np.array(2.5), iv, jv),
        strict=True,
    ):
        np.testing.assert_array_equal(got, expected)


def test_update_errors_are_performs() -> None:
    x, y = pt.matrix("x"), pt.vector("y")
    rows, cols = pt.lvector("rows"), pt.lvector("cols")
    fo, fp = both([x, y, rows, cols], pt.inc_subtensor(x[rows, cols], y))
    value = np.zeros((3, 4))
    assert "out of bounds" in same_error(
        fo, fp, value, np.ones(2), np.array([0, 3]), np.array([0, 1])
    )
    same_error(fo, fp, value, np.ones(3), np.array([0, 1]), np.array([0, 1]))  # y's shape
    np.testing.assert_array_equal(value, 0.0)  # nothing written before the error
    # x[idx] (+)= y with one vector index on a matrix: perform's runtime broadcast check
    m, v = pt.matrix("m"), pt.matrix("v")
    fo, fp = both([m, v, rows], pt.inc_subtensor(m[rows], v))
    assert "Runtime broadcasting not allowed" in same_error(
        fo, fp, np.zeros((3, 4)), np.ones((1, 4)), np.array([0, 1])
    )
    check(fo, fp, np.zeros((3, 4)), np.ones((2, 4)), np.array([0, 0]))


def test_in_place_updates_write_into_the_destroyed_intermediate() -> None:
    x, y = pt.matrix("x"), pt.vector("y")
    rows, cols = pt.lvector("rows"), pt.lvector("cols")
    from pytensor.tensor.subtensor import AdvancedIncSubtensor

    op = AdvancedIncSubtensor(tuple(range(2)), inplace=True)
    out = op(x * 2.0, y, rows, cols)
    fo, fp = both([x, y, rows, cols], out + 0.0)
    value = RNG.normal(size=(3, 4))
    check(fo, fp, value, np.ones(3), np.array([0, 1, 0]), np.array([2, 2, 2]))


def test_debug_mode_checks_the_indexing_kernels_against_perform() -> None:
    x, y = pt.matrix("x"), pt.vector("y")
    rows, cols = pt.lvector("rows"), pt.lvector("cols")
    outs = [x[rows, cols] * 2.0, pt.inc_subtensor(x[rows, cols], y), x[x > 0]]
    f = pytensor.function([x, y, rows, cols], outs, mode=DEBUG)
    value = RNG.normal(size=(3, 4))
    got = f(value, np.ones(2), np.array([0, 0]), np.array([1, 1]))
    np.testing.assert_array_equal(got[0], value[[0, 0], [1, 1]] * 2.0)
    expected = value.copy()
    expected[0, 1] += 2.0
    np.testing.assert_array_equal(got[1], expected)
    np.testing.assert_array_equal(got[2], value[value > 0])


def test_the_lkj_pattern_runs_in_c_with_the_c_back_ends_values() -> None:
    """PyMC's packed Cholesky factor: a vector set into a matrix's lower
    triangle (AdvancedSetSubtensor of 2-d x) and read back, with gradients."""
    packed = pt.dvector("packed")
    rows, cols = np.tril_indices(3)
    chol = pt.set_subtensor(pt.zeros((3, 3))[rows, cols], packed)
    cost = (chol @ chol.T).sum() + pt.log(chol[np.arange(3), np.arange(3)]).sum()
    grad = pytensor.grad(cost, packed)
    fo = pytensor.function([packed], [cost, grad], mode="OPWEAVE")
    fc = pytensor.function([packed], [cost, grad], mode="CVM")
    value = np.array([1.0, 0.3, 2.0, -0.4, 0.1, 1.5])
    assert getattr(fo.vm.function, "node_outcomes", None) is None  # every node in C
    for got, expected in zip(fo(value), fc(value), strict=True):
        np.testing.assert_array_equal(got, expected)

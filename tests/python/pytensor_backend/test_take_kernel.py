"""opweave's gather for ``x[idx]`` (opweave/pytensor/_take_kernel.py):
vector by vector of integers, as ``np.take`` (PyTensor's C code). Values,
dtypes, negative indices, errors and kept results are checked against
PyTensor's own C back end and NumPy."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from pytensor.tensor.subtensor import AdvancedSubtensor  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._take_kernel import TakeKernel, take_kernel  # noqa: E402

OPWEAVE = Mode(linker="opweave", optimizer=None)
PYTENSOR_C = Mode(linker="c", optimizer=None)


def both(inputs, outputs):
    return [pytensor.function(inputs, outputs, mode=m) for m in (OPWEAVE, PYTENSOR_C)]


def takes(f) -> list[object]:
    nodes = f.maker.fgraph.toposort()
    return [code_op(n) for n in nodes if isinstance(n.op, AdvancedSubtensor)]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool"])
@pytest.mark.parametrize("idx_dtype", ["int64", "int32", "uint8"])
def test_a_gather_is_np_take(dtype, idx_dtype) -> None:
    x, idx = pt.vector("x", dtype=dtype), pt.vector("idx", dtype=idx_dtype)
    fo, fc = both([x, idx], x[idx])
    assert [type(k) for k in takes(fo)] == [TakeKernel]
    rng = np.random.default_rng(0)
    xv = (rng.normal(size=85) * 10).astype(dtype)
    iv = rng.integers(0, 85, size=900).astype(idx_dtype)
    for _ in range(2):
        got = fo(xv, iv)
        assert got.dtype == xv.dtype
        np.testing.assert_array_equal(got, fc(xv, iv))
        np.testing.assert_array_equal(got, np.take(xv, iv))


def test_negative_strided_and_empty_indices() -> None:
    x, idx = pt.vector("x"), pt.vector("idx", dtype="int64")
    fo, fc = both([x, idx], x[idx] * 2.0)
    xv = np.arange(20.0)[::2]  # strided
    iv = np.array([-1, 0, -10, 9, 3, 3, 5, 7, 1, 2], dtype="int64")[::2]
    np.testing.assert_array_equal(fo(xv, iv), fc(xv, iv))
    np.testing.assert_array_equal(fo(xv, iv), np.take(xv, iv) * 2.0)
    empty = np.array([], dtype="int64")
    np.testing.assert_array_equal(fo(xv, empty), np.zeros(0))
    np.testing.assert_array_equal(fo(np.zeros(0), empty), np.zeros(0))


@pytest.mark.parametrize(("x_len", "index"), [(5, 7), (5, -6), (0, 0), (85, 85)])
def test_an_index_out_of_bounds_raises_numpys_index_error(x_len, index) -> None:
    x, idx = pt.vector("x"), pt.vector("idx", dtype="int64")
    fo, fc = both([x, idx], x[idx] + 1.0)
    args = (np.ones(x_len), np.array([0, index][-1:], dtype="int64"))
    messages = []
    for f in (fo, fc):
        with pytest.raises(IndexError) as raised:
            f(*args)
        messages.append(str(raised.value).split("\n")[0])
    assert messages[0] == messages[1]
    with pytest.raises(IndexError) as from_numpy:
        np.take(*args)
    assert messages[0] == str(from_numpy.value)


def test_a_new_length_gets_a_new_result_and_returned_results_never_change() -> None:
    x, idx = pt.vector("x"), pt.vector("idx", dtype="int64")
    inner = pytensor.function([x, idx], x[idx].sum() + x[idx][0], mode=OPWEAVE)
    outer = pytensor.function([x, idx], x[idx], mode=OPWEAVE)
    xv = np.arange(10.0)
    for iv in ([1, 2, 3], [4, 5], [4, 5], [9, 0, 9, 0]):
        iv = np.array(iv, dtype="int64")
        assert inner(xv, iv) == xv[iv].sum() + xv[iv][0]
    first = outer(xv, np.array([1, 2], dtype="int64"))
    outer(xv, np.array([7, 8], dtype="int64"))
    np.testing.assert_array_equal(first, [1.0, 2.0])


def test_outside_its_cases_pytensors_code_runs() -> None:
    m, v = pt.matrix("m"), pt.vector("v")
    idx = pt.vector("idx", dtype="int64")
    assert take_kernel(m[idx].owner) is None  # a matrix
    assert take_kernel(v[pt.matrix("i2", dtype="int64")].owner) is None  # 2-d indices
    assert take_kernel(v[pt.vector("u", dtype="uint64")].owner) is None
    assert take_kernel(v[v > 0].owner) is None  # a boolean mask
    assert isinstance(take_kernel(v[idx].owner), TakeKernel)
    fo, fc = both([m, idx], m[idx])
    mv = np.arange(12.0).reshape(4, 3)
    iv = np.array([3, 0], dtype="int64")
    np.testing.assert_array_equal(fo(mv, iv), fc(mv, iv))


def test_debug_mode_checks_the_gather_against_perform() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    x, idx = pt.vector("x"), pt.vector("idx", dtype="int32")
    f = pytensor.function([x, idx], x[idx] * 3.0, mode=mode)
    xv, iv = np.linspace(0, 1, 7), np.array([6, -1, 0, 2], dtype="int32")
    np.testing.assert_array_equal(f(xv, iv), np.take(xv, iv) * 3.0)


def test_constant_indices_within_a_static_length_are_gathered_unchecked() -> None:
    x = pt.tensor("x", shape=(5,))
    inside = np.array([4, 0, 2, 2, 1] * 30)
    node = x[inside].owner
    assert take_kernel(node).length == 5
    assert take_kernel(x[np.array([0, 5])].owner).length is None  # one past the end
    assert take_kernel(x[np.array([0, -1])].owner).length is None  # from the end: checked
    assert take_kernel(pt.vector("v")[inside].owner).length is None  # no static length
    fo, fc = (pytensor.function([x], (x * 2.0)[inside], mode=m) for m in (OPWEAVE, PYTENSOR_C))
    assert any(isinstance(code_op(n), TakeKernel) and code_op(n).length for n in
               fo.maker.fgraph.toposort())  # fmt: skip
    a = np.arange(5.0) - 2.5
    for _ in range(2):
        np.testing.assert_array_equal(fo(a), fc(a))
        np.testing.assert_array_equal(fo(a), np.take(a * 2.0, inside))
    with pytest.raises(Exception, match="shape"):
        fo(np.arange(4.0))  # the static length is checked before any gather

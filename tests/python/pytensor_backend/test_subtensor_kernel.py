"""opweave's ``Subtensor`` (opweave/pytensor/_subtensor_kernel.py): basic
indexing as PyTensor's C does it (its own view arithmetic, checks and
messages), with last call's view kept when it is the same view."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from pytensor.tensor.subtensor import Subtensor  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._subtensor_kernel import SubtensorKernel  # noqa: E402

OPWEAVE = Mode(linker="opweave", optimizer=None)
# PyTensor's whole-graph "c" linker aborts on a Subtensor of an intermediate
# result (its assert py_x == x); its per-node "cvm" is what PyMC uses.
PYTENSOR_C = Mode(linker="cvm", optimizer=None)

INDEXINGS = {
    "int": lambda x, i, j: x[i],
    "slice": lambda x, i, j: x[i:j],
    "reversed": lambda x, i, j: x[::-1],
    "stepped": lambda x, i, j: x[i:j:2],
    "row_then_slice": lambda x, i, j: x[i][1:] if x.ndim > 1 else x[1:][i],
    "both": lambda x, i, j: x[i, i:j] if x.ndim > 1 else x[i:j][::-1],
}


@pytest.mark.parametrize("indexing", list(INDEXINGS))
@pytest.mark.parametrize("shape", [(7,), (5, 6)])
def test_views_are_pytensors_at_every_call(indexing, shape) -> None:
    x = pt.tensor("x", shape=(None,) * len(shape))
    i, j = pt.scalar("i", dtype="int64"), pt.scalar("j", dtype="int64")
    view = INDEXINGS[indexing](x * 2.0, i, j)
    fo, fc = (
        pytensor.function([x, i, j], [view + 1.0], mode=m, on_unused_input="ignore")
        for m in (OPWEAVE, PYTENSOR_C)
    )
    kernels = [code_op(n) for n in fo.maker.fgraph.toposort() if isinstance(n.op, Subtensor)]
    assert kernels and all(isinstance(k, SubtensorKernel) for k in kernels)
    rng = np.random.default_rng(0)
    for a, b in [(1, 4), (1, 4), (-2, 5), (0, -1), (2, 2)]:
        value = rng.normal(size=shape)
        (got,), (expected,) = (
            fo(value, np.array(a), np.array(b)),
            fc(value, np.array(a), np.array(b)),
        )
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("index", [7, -8, 100])
def test_an_index_out_of_bounds_fails_as_pytensors(index) -> None:
    x, i = pt.vector("x"), pt.scalar("i", dtype="int64")
    fo, fc = (pytensor.function([x, i], (x * 1.0)[i], mode=m) for m in (OPWEAVE, PYTENSOR_C))
    assert fo(np.arange(7.0), np.array(-7)) == 0.0
    messages = []
    for f in (fo, fc):
        with pytest.raises(IndexError) as raised:
            f(np.arange(7.0), np.array(index))
        messages.append(str(raised.value).split("\n")[0])
    assert messages[0] == messages[1]


def test_a_returned_view_never_changes() -> None:
    x = pt.vector("x")
    f = pytensor.function([x], (x * 2.0)[1:3], mode=OPWEAVE)
    first = f(np.array([1.0, 2.0, 3.0, 4.0]))
    second = f(np.array([5.0, 6.0, 7.0, 8.0]))
    np.testing.assert_array_equal(first, [4.0, 6.0])
    np.testing.assert_array_equal(second, [12.0, 14.0])


def test_the_sampler_pattern_cuts_one_vector_at_every_call() -> None:
    flat = pt.vector("flat")
    mu, tau, theta = flat[0], pt.exp(flat[1]), flat[2:10]
    logp = -0.5 * (((theta - mu) / tau) ** 2).sum() - 8 * pt.log(tau) - 0.5 * mu**2
    outs = [logp, *pytensor.grad(logp, [flat])]
    fo, fc = (pytensor.function([flat], outs, mode=m) for m in (OPWEAVE, PYTENSOR_C))
    rng = np.random.default_rng(1)
    for _ in range(4):
        value = rng.normal(size=10)
        # sums are NumPy's pairwise sums on opweave (_sum_kernel.py), in
        # order in PyTensor's C: the values agree to rounding
        for g, e in zip(fo(value), fc(value), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-12)


def test_debug_mode_checks_the_views_against_perform() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    x, i = pt.matrix("x"), pt.scalar("i", dtype="int64")
    f = pytensor.function([x, i], [(x + 1.0)[i, ::2], (x * 3.0)[1:, i]], mode=mode)
    value = np.arange(12.0).reshape(3, 4)
    got = f(value, np.array(1))
    np.testing.assert_array_equal(got[0], (value + 1.0)[1, ::2])
    np.testing.assert_array_equal(got[1], (value * 3.0)[1:, 1])

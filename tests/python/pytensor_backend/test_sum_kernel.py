"""opweave's ``Sum`` of a whole float64 array (opweave/pytensor/_sum_kernel.py):
NumPy's pairwise sum, bitwise equal to ``perform`` and ``np.sum`` for every
length, layout and special value; PyTensor's C code elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._sum_kernel import SumKernel, sum_kernel  # noqa: E402

OPWEAVE = Mode(linker="opweave", optimizer=None)
PYTHON = Mode(linker="py", optimizer=None)
PYTENSOR_C = Mode(linker="c", optimizer=None)


def bits(value) -> bytes:
    return np.asarray(value, dtype="float64").tobytes()


def uses_kernel(f) -> bool:
    return any(isinstance(code_op(n), SumKernel) for n in f.maker.fgraph.toposort())


def test_every_length_is_numpys_pairwise_sum() -> None:
    x = pt.vector("x")
    fo, fp = (pytensor.function([x], x.sum(), mode=m) for m in (OPWEAVE, PYTHON))
    assert uses_kernel(fo)
    rng = np.random.default_rng(0)
    lengths = [*range(0, 260), 900, 1000, 1023, 4097, 8193, 100_003]
    for n in lengths:
        a = rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 8, n)
        got = fo(a)
        assert bits(got) == bits(fp(a)) == bits(np.sum(a)), n
        assert got.shape == () and got.dtype == np.float64


def test_the_order_is_not_pytensors_in_order_loop() -> None:
    # In order, each 2**-53 added to 1.0 rounds away; pairwise, they are
    # first added to each other: 1 + 14 * 2**-53 (the exact sum has 15).
    x = pt.vector("x")
    fo, fc = (pytensor.function([x], x.sum(), mode=m) for m in (OPWEAVE, PYTENSOR_C))
    a = np.array([1.0] + [2.0**-53] * 15)
    assert fo(a) == np.sum(a) == 1.0 + 14 * 2.0**-53
    assert fc(a) == 1.0  # the C back end's in-order sum
    np.testing.assert_allclose(fo(a), fc(a), rtol=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.reshape(30, 40),
        lambda a: a.reshape(30, 40).T,
        lambda a: a.reshape(4, 10, 30).transpose(1, 0, 2),
        lambda a: a.reshape(40, 30)[::-1, ::2],
        lambda a: a.reshape(6, 5, 40)[:, ::2, 1:],
        lambda a: a[::-3],
    ],
    ids=["matrix", "transposed", "permuted-3d", "reversed-rows", "strided-3d", "reversed-vector"],
)
def test_any_layout_is_summed_in_perform_s_order(make) -> None:
    a = make(np.random.default_rng(1).standard_normal(1200) * 1e3)
    x = pt.tensor("x", dtype="float64", shape=(None,) * a.ndim)
    fo, fp = (pytensor.function([x], x.sum(), mode=m) for m in (OPWEAVE, PYTHON))
    assert uses_kernel(fo)
    assert bits(fo(a)) == bits(fp(a)) == bits(np.sum(np.array(a)))


def test_special_values_are_numpys() -> None:
    x = pt.vector("x")
    fo, fp = (pytensor.function([x], x.sum(), mode=m) for m in (OPWEAVE, PYTHON))
    cases = [
        [-0.0],
        [-0.0] * 20,
        [np.inf, 1.0, -np.inf],
        [np.nan] + [1.0] * 30,
        [-np.inf] * 200,
        [1e308] * 16,
        [],
    ]
    for case in cases:
        a = np.array(case, dtype="float64")
        with np.errstate(over="ignore"):  # 16 * 1e308 is inf, as it should be
            assert bits(fo(a)) == bits(fp(a)), case


def test_a_kept_result_is_rewritten_and_a_returned_one_never_changes() -> None:
    x = pt.vector("x")
    f = pytensor.function([x], [x.sum(), x.sum() * 2.0], mode=OPWEAVE)
    first = f(np.arange(10.0))
    second = f(np.arange(20.0))
    assert first[0] == 45.0 and first[1] == 90.0
    assert second[0] == 190.0 and second[1] == 380.0


def test_outside_its_cases_pytensors_code_runs() -> None:
    m = pt.matrix("m")
    v32 = pt.vector("v", dtype="float32")
    iv = pt.vector("i", dtype="int64")
    assert sum_kernel(m.sum(axis=0).owner) is None  # some axes only
    assert sum_kernel(v32.sum().owner) is None  # float32 (float64 accumulator)
    assert sum_kernel(iv.sum().owner) is None
    assert sum_kernel(pt.scalar("s").sum().owner) is None  # 0-d
    assert sum_kernel(pt.max(m).owner) is None  # not a Sum
    assert sum_kernel(m.sum(axis=(0, 1)).owner) is not None
    fo, fc = (pytensor.function([m], m.sum(axis=0), mode=mo) for mo in (OPWEAVE, PYTENSOR_C))
    a = np.random.default_rng(2).standard_normal((7, 3))
    assert bits(fo(a)) == bits(fc(a))


def test_debug_mode_checks_the_sum_against_perform() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    x = pt.matrix("x")
    f = pytensor.function([x], x.sum() + x[::2].sum(), mode=mode)
    a = np.random.default_rng(3).standard_normal((50, 9))
    np.testing.assert_array_equal(f(a), np.sum(a) + np.sum(a[::2]))

"""CumOp of a vector in one loop (opweave/pytensor/_cumop_kernel.py):
bitwise NumPy's cumsum and cumprod, kept results, and no params in its
module (PyTensor's EnumType support code stops exports)."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from support.pytensor_modes import DEBUG, both  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor._cumop_kernel import CumOpKernel, cumop_kernel  # noqa: E402


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["add", "mul"])
def test_a_vectors_cumulative_sum_and_product_are_numpys(dtype, mode) -> None:
    x = pt.vector("x", dtype=dtype)
    out = pt.cumsum(x) if mode == "add" else pt.cumprod(x)
    fo, fp = both([x], out * 1)
    assert [type(code_op(n)) for n in fo.maker.fgraph.toposort()].count(CumOpKernel) == 1
    rng = np.random.default_rng(3)
    value = rng.normal(size=257) * (1 if mode == "add" else 0.3) + (0 if mode == "add" else 1)
    value = value.astype(dtype)
    for v in (value, value[::-3], value[:1], value[:0]):
        for _ in range(2):  # the kept result
            got, expected = fo(v), fp(v)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(got, (np.cumsum if mode == "add" else np.cumprod)(v))


def test_the_kernel_declines_other_cases_and_debug_mode_agrees() -> None:
    m, i = pt.matrix("m"), pt.lvector("i")
    assert cumop_kernel(pt.cumsum(m, axis=1).owner) is None
    assert cumop_kernel(pt.cumsum(i).owner) is None  # integers: C's overflow is not NumPy's
    assert isinstance(cumop_kernel(pt.cumsum(pt.dvector()).owner), CumOpKernel)
    assert not hasattr(CumOpKernel(pt.cumsum(pt.dvector()).owner.op), "params_type")
    x = pt.dvector("x")
    f = pytensor.function([x], [pt.cumsum(x), pt.cumprod(x)], mode=DEBUG)
    got = f(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(got[0], [1.0, 3.0, 6.0])
    np.testing.assert_array_equal(got[1], [1.0, 2.0, 6.0])

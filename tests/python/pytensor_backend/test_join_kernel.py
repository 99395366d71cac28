"""opweave's ``Join`` of vectors (opweave/pytensor/_join_kernel.py): the
inputs' elements in order, as ``np.concatenate`` and PyTensor's C give
them, at every call, in a kept or a new result."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from pytensor.tensor.basic import Join  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._join_kernel import JoinKernel, join_kernel  # noqa: E402

OPWEAVE = Mode(linker="opweave", optimizer=None)
PYTENSOR_C = Mode(linker="c", optimizer=None)


def both(inputs, outputs):
    return [pytensor.function(inputs, outputs, mode=m) for m in (OPWEAVE, PYTENSOR_C)]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool", "complex128"])
def test_a_gradient_like_join_is_pytensors(dtype) -> None:
    s, v, w = pt.scalar("s", dtype=dtype), pt.vector("v", dtype=dtype), pt.vector("w", dtype=dtype)
    joined = pt.concatenate([s[None], v, s[None], w[::2], v])
    fo, fc = both([s, v, w], [joined, joined * 1])  # returned, and kept inside
    assert any(isinstance(code_op(n), JoinKernel) for n in fo.maker.fgraph.toposort())
    rng = np.random.default_rng(0)
    for n in (5, 5, 0, 3):
        args = [
            np.array(rng.normal() * 4).astype(dtype),
            (rng.normal(size=n) * 4).astype(dtype),
            (rng.normal(size=2 * n + 1) * 4).astype(dtype),
        ]
        got, expected = fo(*args), fc(*args)
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)
        np.testing.assert_array_equal(
            got[0], np.concatenate([args[0][None], args[1], args[0][None], args[2][::2], args[1]])
        )


def test_a_returned_join_never_changes() -> None:
    v = pt.vector("v")
    f = pytensor.function([v], pt.concatenate([v, v * 2.0]), mode=OPWEAVE)
    first = f(np.array([1.0]))
    f(np.array([3.0]))
    np.testing.assert_array_equal(first, [1.0, 2.0])


def test_outside_its_cases_pytensors_code_runs() -> None:
    m, v = pt.matrix("m"), pt.vector("v")
    i = pt.vector("i", dtype="int32")
    assert join_kernel(pt.concatenate([m, m]).owner) is None  # matrices
    assert join_kernel(pt.concatenate([v, i]).owner) is None  # mixed dtypes: an upcast
    assert join_kernel(Join(0).make_node(v, v)) is not None
    fo, fc = both([v, i], pt.concatenate([v, i]))
    args = (np.array([0.5, 1.5]), np.array([7, 8], dtype="int32"))
    np.testing.assert_array_equal(fo(*args), fc(*args))


def test_debug_mode_checks_the_join_against_perform() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    v, s = pt.vector("v"), pt.scalar("s")
    f = pytensor.function([v, s], pt.concatenate([s[None], v[::-1], v]), mode=mode)
    got = f(np.array([1.0, 2.0]), np.array(9.0))
    np.testing.assert_array_equal(got, [9.0, 2.0, 1.0, 1.0, 2.0])

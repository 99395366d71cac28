"""opweave's ``IncSubtensor`` of vectors (opweave/pytensor/_inc_subtensor_kernel.py):
``x[i] (+)= y`` and ``x[a:b:c] (+)= y`` as PyTensor's C and NumPy give them,
in place or on a copy, with PyTensor's messages and NumPy's broadcasting."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode, get_mode  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._inc_subtensor_kernel import (  # noqa: E402
    IncSubtensorKernel,
    inc_subtensor_kernel,
)

OPWEAVE = Mode(linker="opweave", optimizer=None)
# PyTensor's whole-graph "c" linker crashes on an IncSubtensor of an
# intermediate (its copy reads py_x, which that linker leaves None): "cvm".
PYTENSOR_C = Mode(linker="cvm", optimizer=None)
# PyTensor's rewrites make the increments in place (the sampler's graphs).
OPWEAVE_REWRITTEN = get_mode("OPWEAVE")
C_REWRITTEN = get_mode("CVM")


def uses_kernel(f) -> bool:
    return any(isinstance(code_op(n), IncSubtensorKernel) for n in f.maker.fgraph.toposort())


UPDATES = [
    ("x[2] += s", lambda x, s, v: pt.inc_subtensor(x[2], s)),
    ("x[-1] = s", lambda x, s, v: pt.set_subtensor(x[-1], s)),
    ("x[1:] += v[:-1]", lambda x, s, v: pt.inc_subtensor(x[1:], v[:-1])),
    ("x[:-1] = v[1:]", lambda x, s, v: pt.set_subtensor(x[:-1], v[1:])),
    ("x[::-2] += v[::2][:3]", lambda x, s, v: pt.inc_subtensor(x[::-2], v[::2][:3])),
    ("x[1:5:2] = v[3:5]", lambda x, s, v: pt.set_subtensor(x[1:5:2], v[3:5])),
    ("x[4:2] += v[:0]", lambda x, s, v: pt.inc_subtensor(x[4:2], v[:0])),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "int8"])
@pytest.mark.parametrize("modes", ["plain", "rewritten"])
@pytest.mark.parametrize("name,update", UPDATES, ids=[u[0] for u in UPDATES])
def test_updates_are_pytensors(name, update, dtype, modes) -> None:
    x, s, v = pt.vector("x", dtype=dtype), pt.scalar("s", dtype=dtype), pt.vector("v", dtype=dtype)
    x2 = x * np.array(2, dtype=dtype)  # an intermediate: updated in place once rewritten
    out = update(x2, s, v)
    pair = (OPWEAVE, PYTENSOR_C) if modes == "plain" else (OPWEAVE_REWRITTEN, C_REWRITTEN)
    fo, fc = (pytensor.function([x, s, v], [out, out * np.array(3, dtype=dtype)], mode=m,
                                on_unused_input="ignore")
              for m in pair)  # fmt: skip
    assert uses_kernel(fo)
    rng = np.random.default_rng(0)
    for _ in range(3):  # a kept copy is refilled at every call
        args = [
            (rng.normal(size=6) * 40).astype(dtype),
            np.array(rng.normal() * 40).astype(dtype),
            (rng.normal(size=6) * 40).astype(dtype),
        ]
        for g, e in zip(fo(*args), fc(*args), strict=True):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)


def test_inputs_are_untouched_unless_the_update_is_in_place() -> None:
    x, s = pt.vector("x"), pt.scalar("s")
    f = pytensor.function([x, s], pt.inc_subtensor(x[0], s), mode=OPWEAVE)
    assert uses_kernel(f)
    a = np.array([1.0, 2.0, 3.0])
    first = f(a, np.array(10.0))
    second = f(a, np.array(20.0))
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(first, [11.0, 2.0, 3.0])  # returned: never reused
    np.testing.assert_array_equal(second, [21.0, 2.0, 3.0])


def test_broadcasting_and_errors_are_numpys() -> None:
    x, v = pt.vector("x"), pt.vector("v")
    i = pt.scalar("i", dtype="int64")
    inc = pt.inc_subtensor(x[1:4], v)
    fo, fc = (pytensor.function([x, v], inc, mode=m) for m in (OPWEAVE, PYTENSOR_C))
    assert uses_kernel(fo)
    a = np.arange(6.0)
    np.testing.assert_array_equal(fo(a, np.array([5.0])), fc(a, np.array([5.0])))  # broadcast
    messages = []
    for f in (fo, fc):
        with pytest.raises(ValueError) as raised:
            f(a, np.array([1.0, 2.0]))
        messages.append(str(raised.value).split("\n")[0])
    assert messages[0] == messages[1]
    set_at = pt.set_subtensor(x[i], 7.0)
    go, gc = (pytensor.function([x, i], set_at, mode=m) for m in (OPWEAVE, PYTENSOR_C))
    messages = []
    for g in (go, gc):
        with pytest.raises(IndexError) as raised:
            g(a, np.array(6))
        messages.append(str(raised.value).split("\n")[0])
    assert messages[0] == messages[1]
    np.testing.assert_array_equal(go(a, np.array(-6)), gc(a, np.array(-6)))


def test_outside_its_cases_pytensors_code_runs() -> None:
    m, x = pt.matrix("m"), pt.vector("x")
    i32, b = pt.vector("i", dtype="int32"), pt.vector("b", dtype="bool")
    assert inc_subtensor_kernel(pt.inc_subtensor(m[0], x).owner) is None  # a matrix
    assert inc_subtensor_kernel(pt.inc_subtensor(x[1:], i32[1:]).owner) is None  # an upcast
    assert inc_subtensor_kernel(pt.inc_subtensor(b[1:], b[:-1]).owner) is None  # bool: or
    assert inc_subtensor_kernel(pt.inc_subtensor(x[1:], 1.0).owner) is None  # y broadcast
    assert inc_subtensor_kernel(pt.inc_subtensor(x[1:], x[:-1]).owner) is not None
    fo, fc = (pytensor.function([m, x], pt.inc_subtensor(m[0], x), mode=mo)
              for mo in (OPWEAVE, PYTENSOR_C))  # fmt: skip
    args = (np.ones((2, 3)), np.arange(3.0))
    np.testing.assert_array_equal(fo(*args), fc(*args))


def test_debug_mode_checks_the_updates_against_perform() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    x, s = pt.vector("x"), pt.scalar("s")
    y = pt.inc_subtensor((x * 2.0)[0], s)
    z = pt.set_subtensor(y[1:], x[:-1] + s)
    f = pytensor.function([x, s], [y, z], mode=mode)
    got = f(np.array([1.0, 2.0, 3.0]), np.array(0.5))
    np.testing.assert_array_equal(got[0], [2.5, 4.0, 6.0])
    np.testing.assert_array_equal(got[1], [2.5, 1.5, 2.5])


@pytest.mark.parametrize("mode", [OPWEAVE, OPWEAVE_REWRITTEN], ids=["plain", "rewritten"])
def test_a_returned_view_of_a_kept_copy_never_changes(mode) -> None:
    x, s = pt.vector("x"), pt.scalar("s")
    f = pytensor.function([x, s], pt.inc_subtensor(x[0], s)[1:], mode=mode)
    first = f(np.array([1.0, 2.0, 3.0]), np.array(5.0))
    second = f(np.array([7.0, 8.0, 9.0]), np.array(5.0))
    np.testing.assert_array_equal(first, [2.0, 3.0])
    np.testing.assert_array_equal(second, [8.0, 9.0])

"""opweave's ``DimShuffle`` (opweave/pytensor/_dimshuffle_kernel.py): the
view PyTensor's code makes, kept from the last call when it is the same
view. Results are PyTensor's at every call, a result already returned never
changes, and a bad drop fails as PyTensor's C fails."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from pytensor.tensor.elemwise import DimShuffle  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._dimshuffle_kernel import DimShuffleKernel, dimshuffle_kernel  # noqa: E402

OPWEAVE = Mode(linker="opweave", optimizer=None)
PYTENSOR_C = Mode(linker="c", optimizer=None)


def both(inputs, outputs):
    return [pytensor.function(inputs, outputs, mode=m) for m in (OPWEAVE, PYTENSOR_C)]


def test_expanded_scalars_joined_are_right_at_every_call() -> None:
    s = pt.scalar("s")
    parts = [pt.exp(s), s * 2.0, s - 1.0]
    fo, fc = both([s], pt.concatenate([p[None] for p in parts]))
    nodes = [n for n in fo.maker.fgraph.toposort() if isinstance(n.op, DimShuffle)]
    assert nodes and all(isinstance(code_op(n), DimShuffleKernel) for n in nodes)
    for value in (0.5, -3.0, 0.5, 7.25):  # the kept views see each call's values
        got = fo(np.array(value))
        np.testing.assert_array_equal(got, fc(np.array(value)))
        np.testing.assert_array_equal(got, [np.exp(value), value * 2.0, value - 1.0])


@pytest.mark.parametrize(
    ("shape", "order", "layout"),
    [
        ((4, 3), (1, 0), "C"),
        ((4, 3), (1, "x", 0), "strided"),
        ((1, 5), (1,), "C"),
        ((2, 1, 3), (2, 0), "F"),
        ((5,), ("x", 0, "x"), "strided"),
        ((0, 3), (1, 0), "C"),
    ],
)
def test_shapes_strides_and_values_are_pytensors(shape, order, layout) -> None:
    x = pt.tensor("x", shape=tuple(1 if n == 1 else None for n in shape))
    y = (x * 2.0).dimshuffle(order)
    fo, fc = both([x], [y + 1.0, y.sum()])
    rng = np.random.default_rng(0)
    if layout == "strided":
        value = rng.normal(size=(*shape[:-1], 2 * shape[-1]))[..., ::2]
    else:
        value = rng.normal(size=shape)
        value = np.asfortranarray(value) if layout == "F" else value
    for _ in range(3):
        got, expected = fo(value), fc(value)
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape
            np.testing.assert_array_equal(g, e)


def test_a_new_shape_gets_a_new_view() -> None:
    x = pt.matrix("x")
    fo, fc = both([x], (x * 1.0).T * 3.0)
    rng = np.random.default_rng(1)
    for shape in [(2, 3), (2, 3), (4, 1), (3, 2), (3, 2)]:
        value = rng.normal(size=shape)
        np.testing.assert_array_equal(fo(value), fc(value))
        np.testing.assert_array_equal(fo(value), value.T * 3.0)


def test_a_returned_view_never_changes() -> None:
    s = pt.vector("s")
    f = pytensor.function([s], (s * 2.0).dimshuffle("x", 0), mode=OPWEAVE)
    first = f(np.array([1.0, 2.0]))
    second = f(np.array([5.0, 6.0]))
    np.testing.assert_array_equal(first, [[2.0, 4.0]])
    np.testing.assert_array_equal(second, [[10.0, 12.0]])
    assert not np.shares_memory(first, second)


def test_dropping_an_axis_longer_than_one_fails_as_pytensors() -> None:
    x = pt.tensor("x", shape=(None, None))
    drop = DimShuffle(input_ndim=2, new_order=(1,))
    node = drop.make_node(x * 1.0)
    assert isinstance(dimshuffle_kernel(node), DimShuffleKernel)
    fo, fc = both([x], node.outputs[0] + 1.0)
    np.testing.assert_array_equal(fo(np.ones((1, 3))), fc(np.ones((1, 3))))
    errors = []
    for f in (fo, fc):
        with pytest.raises(ValueError) as raised:
            f(np.ones((2, 3)))
        errors.append(str(raised.value).split("\n")[0])
    assert errors[0] == errors[1] and "cannot drop axis 0" in errors[0]


def test_debug_mode_checks_the_views_and_their_references() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    x, s = pt.matrix("x"), pt.scalar("s")
    f = pytensor.function([x, s], [(x * s).T + 1.0, pt.exp(s)[None] * 2.0], mode=mode)
    value = np.arange(6.0).reshape(2, 3)
    for scale in (1.0, 2.0):
        got = f(value, np.array(scale))
        np.testing.assert_array_equal(got[0], (value * scale).T + 1.0)
        np.testing.assert_array_equal(got[1], [np.exp(scale) * 2.0])

"""opweave's ``Split`` (opweave/pytensor/_split_kernel.py): the pieces
``np.split`` gives, as views of the input kept while they are the same,
with PyTensor's checks and messages."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._split_kernel import SplitKernel, split_kernel  # noqa: E402

OPWEAVE = Mode(linker="opweave", optimizer=None)
PYTENSOR_C = Mode(linker="cvm", optimizer=None)


def uses_kernel(f) -> bool:
    return any(isinstance(code_op(n), SplitKernel) for n in f.maker.fgraph.toposort())


@pytest.mark.parametrize("axis,shape", [(0, (7,)), (0, (7, 3)), (1, (2, 7)), (1, (3, 7, 2))])
def test_pieces_are_np_splits(axis, shape) -> None:
    x = pt.tensor("x", dtype="float64", shape=(None,) * len(shape))
    sizes = pt.vector("sizes", dtype="int64")
    pieces = pt.split(x * 2.0, sizes, n_splits=3, axis=axis)  # views of an intermediate
    outs = [pieces[0], pieces[1] + 1.0, pieces[2][::-1]]  # returned, used, viewed
    fo, fc = (pytensor.function([x, sizes], outs, mode=m) for m in (OPWEAVE, PYTENSOR_C))
    assert uses_kernel(fo)
    rng = np.random.default_rng(0)
    for split in ([1, 6, 0], [3, 2, 2], [3, 2, 2], [0, 0, 7]):
        a = rng.normal(size=shape)
        got, expected = fo(a, np.array(split)), fc(a, np.array(split))
        parts = np.split(a * 2.0, np.cumsum(split[:-1]), axis=axis)
        for g, e, p in zip(got, expected, [parts[0], parts[1] + 1.0, parts[2][::-1]], strict=True):
            np.testing.assert_array_equal(g, e)
            np.testing.assert_array_equal(g, p)


def test_a_returned_piece_never_changes() -> None:
    x = pt.vector("x")
    first_piece, rest = pt.split(x * 2.0, [1, 2])
    f = pytensor.function([x], [first_piece, rest], mode=OPWEAVE)
    first = f(np.array([1.0, 2.0, 3.0]))
    f(np.array([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(first[0], [2.0])
    np.testing.assert_array_equal(first[1], [4.0, 6.0])


@pytest.mark.parametrize("split", [[4, 4], [-1, 8], [2, 2, 3]])
def test_bad_sizes_fail_as_pytensors(split) -> None:
    x, sizes = pt.vector("x"), pt.vector("sizes", dtype="int64")
    a, b = pt.split(x, sizes, n_splits=2)
    fo, fc = (pytensor.function([x, sizes], [a, b], mode=m) for m in (OPWEAVE, PYTENSOR_C))
    messages = []
    for f in (fo, fc):
        with pytest.raises(ValueError) as raised:
            f(np.arange(7.0), np.array(split))
        messages.append(str(raised.value).split("\n")[0])
    # PyTensor's C prints a size through "%ld" from an int (4294967295 for
    # -1); opweave prints the size
    assert re.sub(r"\(-?\d+\)", "(N)", messages[0]) == re.sub(r"\(-?\d+\)", "(N)", messages[1])
    if min(split) < 0:
        assert messages[0] == "Split: you try to take a negative number (-1) of elements."


def test_outside_its_cases_pytensors_code_runs() -> None:
    x = pt.vector("x")
    assert split_kernel(pt.split(x, pt.vector("s", dtype="uint64"), n_splits=2)[0].owner) is None
    assert split_kernel(pt.split(x, [1, 2])[0].owner) is not None


def test_debug_mode_checks_the_pieces_against_perform() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    x = pt.matrix("x")
    a, b = pt.split(x + 1.0, [1, 2], axis=0)
    f = pytensor.function([x], [a * 2.0, b], mode=mode)
    got = f(np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(got[0], [[2.0, 4.0]])
    np.testing.assert_array_equal(got[1], [[3.0, 4.0], [5.0, 6.0]])

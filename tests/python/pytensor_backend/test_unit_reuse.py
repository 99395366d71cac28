"""Cached units reused by an edit (link/c/_unit_reuse.py) under PyTensor's
``mode="OPWEAVE"``: a graph of PyTensor's ops large enough to be compiled
in units, edited in one term, links the cached units that hold its
unchanged nodes, and computes what PyTensor's own C back end computes."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import get_mode  # noqa: E402

import opweave.pytensor  # noqa: E402, F401


def wide(offset: float) -> tuple[list, list]:
    """24 terms, each a matrix-vector product, a column sum of an
    exponential, a reversed view and an indexed element (about 100 nodes,
    that fusion cannot merge); ``offset`` edits the 13th term."""
    ms = [pt.dmatrix(f"m{k}") for k in range(4)]
    xs = [pt.dvector(f"x{k}") for k in range(4)]
    terms = []
    for k in range(24):
        scale = 0.01 * k + (offset if k == 12 else 0.0)
        product = pt.dot(ms[k % 4], xs[(k + 1) % 4] * scale)
        column = pt.exp(ms[(k + 2) % 4] * scale).sum(axis=0)
        terms.append(product * column[::-1] + xs[k % 4][k % 3])
    return [*ms, *xs], [pt.add(*terms)]


def test_an_edited_term_links_the_cached_units_of_the_rest(caplog) -> None:
    rng = np.random.default_rng(0)
    args = [*(rng.normal(size=(3, 3)) for _ in range(4)), *(rng.normal(size=3) for _ in range(4))]
    pytensor.function(*wide(0.0), mode=get_mode("OPWEAVE"))
    with caplog.at_level(logging.DEBUG, logger="opweave.link.c"):
        edited = pytensor.function(*wide(0.5), mode=get_mode("OPWEAVE"))
    reused = [r.args for r in caplog.records if r.getMessage().startswith("units reused for")]
    assert reused and reused[0][0] > 0  # structs taken from cached units
    reference = pytensor.function(*wide(0.5), mode=get_mode("CVM"))
    np.testing.assert_allclose(edited(*args)[0], reference(*args)[0], rtol=1e-12)

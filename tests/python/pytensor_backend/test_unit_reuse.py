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


def terms(offset: float) -> tuple[list, list]:
    """A sum of 24 terms, each a matrix-vector product through a scaled
    ``tanh``, summed and weighted by an element: a fused loop with
    constants of its own per term (so about 50 distinct node codes);
    ``offset`` edits the 13th term."""
    m, x = pt.dmatrix("m"), pt.dvector("x")
    parts = [
        pt.tanh(pt.dot(m, x) * (0.1 * k + (offset if k == 12 else 0.0)) + k).sum() * x[k % 3]
        for k in range(24)
    ]
    return [m, x], [pt.add(*parts)]


def test_an_edited_term_links_the_cached_units_of_the_rest(caplog) -> None:
    rng = np.random.default_rng(0)
    args = [rng.normal(size=(3, 3)), rng.normal(size=3)]
    pytensor.function(*terms(0.0), mode=get_mode("OPWEAVE"))
    with caplog.at_level(logging.DEBUG, logger="opweave.link.c"):
        edited = pytensor.function(*terms(0.5), mode=get_mode("OPWEAVE"))
    reused = [r.args for r in caplog.records if r.getMessage().startswith("units reused for")]
    assert reused and reused[0][0] > 0  # structs taken from cached units
    reference = pytensor.function(*terms(0.5), mode=get_mode("CVM"))
    np.testing.assert_allclose(edited(*args)[0], reference(*args)[0], rtol=1e-12)

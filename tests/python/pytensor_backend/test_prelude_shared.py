"""One precompiled prelude serves a PyTensor graph's texts: the 1-op
module of an ``Elemwise`` and every text of a graph compiled in units (its
body, of the types' headers, and its units, of the ops') start their
includes with the same lines (``shared_headers``), so the prelude built for
them is one, holds PyTensor's C++ headers, and an edited term compiles
with it (issue 41)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import get_mode  # noqa: E402

import opweave.pytensor  # noqa: E402, F401
from opweave import _core, config  # noqa: E402
from opweave.link.c import cmodule  # noqa: E402

pytestmark = pytest.mark.skipif(
    not config.cxx or not _core.supports_prelude(cmodule.get_compiler()),
    reason="precompiled preludes need GCC",
)


def hier(offset: float) -> tuple[list, list]:
    """A hierarchical normal log-density and its gradient (the benchmark's
    "hier"): about 30 KB of node code, compiled in units with 2 jobs;
    ``offset`` edits one term."""
    mu, log_tau = pt.dscalar("mu"), pt.dscalar("log_tau")
    theta, y, sigma = pt.dvector("theta"), pt.dvector("y"), pt.dvector("sigma")
    tau = pt.exp(log_tau)
    logp = (
        (
            -0.5 * ((theta - mu) / tau) ** 2
            - log_tau
            - 0.5 * ((y - theta) / sigma) ** 2
            - pt.log(sigma)
        ).sum()
        - 0.5 * mu**2 / 25.0
        + pt.log1p(tau**2) * -1.0
        + log_tau
        + offset
    )
    return [mu, log_tau, theta, y, sigma], [logp, *pytensor.grad(logp, [mu, log_tau, theta])]


def entries(cache: Path, kind: str) -> list[dict]:
    found = []
    for meta in sorted(cache.glob("v2/entries/*/*/meta.json")):
        record = json.loads(meta.read_text())
        if record["kind"] == kind:
            found.append(record)
    return found


def test_a_graph_s_texts_and_its_ops_1_op_modules_share_one_prelude(isolated_cache: Path) -> None:
    mode = get_mode("OPWEAVE")
    with config.change_flags(compile__jobs=2):
        w = pt.dvector("w")
        pytensor.function([w], pt.exp(w), mode=mode)  # wants the prelude once
        first = pytensor.function(*hier(0.0), mode=mode)  # twice: it is built
        assert cmodule.wait_for_prelude_builds(timeout=300)
        preludes = entries(isolated_cache, "prelude")
        assert len(preludes) == 1, [p["label"] for p in preludes]
        # The lines the texts start with: Python's, then PyTensor's headers.
        assert preludes[0]["label"].endswith("numpy/npy_math.h vector algorithm")
        units_before = {u["key"] for u in entries(isolated_cache, "unit")}
        assert len(units_before) >= 2  # the body and the node code, side by side
        edited = pytensor.function(*hier(0.5), mode=mode)
    new_units = [u for u in entries(isolated_cache, "unit") if u["key"] not in units_before]
    assert new_units, "the edit compiled no unit"
    for unit in new_units:  # compiled with the one prelude
        assert "-include" in unit["command"] and "opweave_prelude.h" in unit["command"]
    rng = np.random.default_rng(0)
    args = [np.array(0.1), np.array(-0.2), *rng.normal(size=(2, 7)), rng.random(7) + 0.5]
    c = get_mode("CVM")
    for fn, offset in ((first, 0.0), (edited, 0.5)):
        expected = pytensor.function(*hier(offset), mode=c)(*args)
        for got, want in zip(fn(*args), expected, strict=True):
            np.testing.assert_array_equal(got, want)

"""A PyMC model under mode="OPWEAVE": the same log-density and gradient as
PyTensor's C back end, and NUTS samples with it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")
pm = pytest.importorskip("pymc", reason="needs PyMC (.ci/run installs it with the extra)")

from support.pymc_models import eight_schools  # noqa: E402

import opweave.pytensor  # noqa: E402, F401
from opweave import _core  # noqa: E402


def test_log_density_and_gradient_match_pytensors_c_back_end() -> None:
    model = eight_schools()
    point = model.initial_point()
    point = {name: value + 0.3 for name, value in point.items()}
    ours = model.compile_logp(mode="OPWEAVE"), model.compile_dlogp(mode="OPWEAVE")
    theirs = model.compile_logp(mode="CVM"), model.compile_dlogp(mode="CVM")
    assert isinstance(ours[0].f.vm, _core.CellCall)
    np.testing.assert_allclose(ours[0](point), theirs[0](point), rtol=1e-12)
    np.testing.assert_allclose(ours[1](point), theirs[1](point), rtol=1e-12)


def test_nuts_samples() -> None:
    model = eight_schools()
    with model:
        idata = pm.sample(
            draws=100,
            tune=100,
            chains=1,
            cores=1,
            compile_kwargs={"mode": "OPWEAVE"},
            progressbar=False,
            random_seed=1,
            nuts_sampler="pymc",
        )
    mu = idata.posterior["mu"].values
    assert mu.shape == (1, 100)
    assert np.isfinite(mu).all() and np.unique(mu).size > 10

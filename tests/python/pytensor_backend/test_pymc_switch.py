"""The one-line switch (issue 37): after ``opweave.pytensor.use()``, building
a PyMC model, ``pm.sample(chains=2, cores=2)`` and
``pm.sample_posterior_predictive`` construct no NumbaLinker and write
nothing to PyTensor's compiledir, PyMC's explicit FAST_COMPILE functions
included. Run in a fresh process: the switch is global."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")
pytest.importorskip("pymc", reason="needs PyMC (.ci/run installs it with the extra)")

pytestmark = pytest.mark.slow  # processes that compile and sample

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import pytensor
    import opweave.pytensor
    from pytensor.link.numba.linker import NumbaLinker

    made = []
    original = NumbaLinker.__init__

    def recorded(self, *args, **kwargs):
        made.append(1)
        original(self, *args, **kwargs)

    NumbaLinker.__init__ = recorded
    opweave.pytensor.use()  # the switch
    import pymc as pm

    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        sd = pm.HalfNormal("sd", 1)
        pm.Normal("y", mu, sd, observed=np.random.default_rng(0).normal(1.0, 1.0, size=40))
        idata = pm.sample(draws=60, tune=60, chains=2, cores=2, progressbar=False,
                          random_seed=1, compute_convergence_checks=False)
        pp = pm.sample_posterior_predictive(idata, progressbar=False, random_seed=2)
    print(json.dumps({
        "numba": len(made),
        "mode": str(pytensor.config.mode),
        "mu": float(idata.posterior["mu"].mean()),
        "draws": int(idata.posterior["mu"].size),
        "predicted": int(pp.posterior_predictive["y"].size),
    }))
    """
)


def test_one_call_sends_everything_pymc_compiles_to_opweave(tmp_path: Path) -> None:
    pytensor_dir = tmp_path / "pytensor"
    env = dict(
        os.environ,
        PYTENSOR_FLAGS=f"base_compiledir={pytensor_dir}",
        OPWEAVE_FLAGS=f"compiledir={tmp_path / 'opweave'}",
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["numba"] == 0
    assert got["mode"] == "OPWEAVE"
    assert got["draws"] == 120 and got["predicted"] == 120 * 40
    assert 0.3 < got["mu"] < 1.7  # the data's mean is about 1
    written = [p for p in pytensor_dir.rglob("*") if p.is_file()] if pytensor_dir.exists() else []
    assert written == []  # nothing in PyTensor's compiledir, lazylinker_ext included
    assert any((tmp_path / "opweave").rglob("*.so"))  # opweave compiled the model

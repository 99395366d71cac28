"""PyMC's workers under mode="OPWEAVE": ``pm.sample(chains=4, cores=4)``
compiles once, and its workers compile nothing (forked ones keep the
parent's memos, which stay valid; those a fork server starts find every
module in the cache). tests/python/link/c/test_remote_fork.py checks that a
forked child never uses its parent's connection to the remote tier."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")
pytest.importorskip("pymc", reason="needs PyMC (.ci/run installs it with the extra)")

pytestmark = pytest.mark.slow  # processes that compile and sample

SAMPLE = """
import json, sys
import numpy as np
import pymc as pm
import opweave.pytensor  # noqa: F401
from opweave.link.c.cmodule import get_module_cache
from support.pymc_models import eight_schools


def counters():
    cache = get_module_cache()
    cache.flush_counters()
    found = cache.stats().counters
    return {"builds": found.builds, "hits": found.hits}


if __name__ == "__main__":
    with eight_schools():
        kwargs = dict(draws=30, tune=30, random_seed=1, progressbar=False,
                      compile_kwargs={"mode": "OPWEAVE"}, nuts_sampler="pymc")
        pm.sample(chains=1, cores=1, **kwargs)  # compiles what sampling needs
        before = counters()
        idata = pm.sample(chains=4, cores=4, mp_ctx=sys.argv[1], **kwargs)
    after = counters()
    mu = idata.posterior["mu"].values
    print(json.dumps({"before": before, "after": after, "shape": list(mu.shape),
                      "finite": bool(np.isfinite(mu).all())}))
"""


@pytest.mark.parametrize("context", ["fork", "forkserver"])
def test_four_chains_on_four_cores_compile_nothing_in_the_workers(
    tmp_path: Path, context: str
) -> None:
    script = tmp_path / "sample.py"
    script.write_text(SAMPLE)
    env = dict(os.environ)
    tests = str(Path(__file__).parent.parent)  # for support.pymc_models
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [tests, env.get("PYTHONPATH", "")]))
    env["OPWEAVE_FLAGS"] = f"compiledir={tmp_path / 'cache'}"
    env["PYTENSOR_FLAGS"] = ",".join(
        filter(None, [f"compiledir={tmp_path / 'pt-cache'}", env.get("PYTENSOR_FLAGS", "")])
    )
    done = subprocess.run(
        [sys.executable, str(script), context],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["shape"] == [4, 30] and found["finite"]
    assert found["before"]["builds"] > 0
    assert found["after"]["builds"] == found["before"]["builds"]  # no worker compiled
    if context == "forkserver":  # fresh processes: their modules are cache hits
        assert found["after"]["hits"] > found["before"]["hits"]

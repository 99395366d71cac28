"""Graph records travel (link/c/_graph_index.py, docs/scale-out.md): a worker
whose cache is fed from a CI machine's, by an export file, a read-only
layer or the remote tier, links a graph it never saw, asking no op for code
and running no compiler, though opweave and the ops' package are installed
at other paths there; a worker whose helper module differs is refused the
record and asks its ops.

A "site" is a directory on PYTHONPATH holding a copy of opweave (with its
_core extension) and of the ops' package, so each machine imports them from
its own path. The processes run without site initialisation (``-S``: an
editable install's import hook would find this checkout first), with NumPy's
site directory after the site. The worker's compiler launcher fails every
run and logs it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy
import opweave.examples
import pytest
from support.redis_server import redis_server

import opweave
from opweave import _core

pytestmark = pytest.mark.slow

OPS = '''
"""Ops that write each hook call to $HOOK_LOG."""
import os

from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.tensor import as_tensor_variable

from travel_ops import helper


def note(what):
    with open(os.environ["HOOK_LOG"], "a") as log:
        log.write(what + "\\n")


class Shift(COp):
    """z = x + helper.TERM (a C expression from another module)."""

    __props__ = ()

    def make_node(self, x):
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def c_code_cache_version(self):
        note("version")
        return (1,)

    def c_code(self, node, name, inputs, outputs, sub):
        note("c_code")
        (x,), (z,), fail = inputs, outputs, sub["fail"]
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
        if ({z} == NULL) {{ {fail} }}
        for (npy_intp i = 0, n = PyArray_SIZE({z}); i < n; ++i)
            ((npy_float64*)PyArray_DATA({z}))[i] += {helper.TERM};
        """
'''

RUN = """
import json, os
import numpy as np
import opweave
from opweave.examples.quadratic import QuadraticExternal
from travel_ops import Shift

x = opweave.tensor.dmatrix("x")
f = opweave.function([x], Shift()(QuadraticExternal(1, 0, 2)(x)))
value = f(np.array([[1.0, 2.0]]))
print(json.dumps({"value": value.tolist(), "outcome": f.cache_outcome,
                  "opweave": os.path.dirname(opweave.__file__)}))
"""


def _site(root: Path, term: str = "1.0") -> Path:
    """A site: opweave and travel_ops, copied below ``root``."""
    package = Path(opweave.__file__).parent
    shutil.copytree(package, root / "opweave", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(_core.__file__, root / "opweave" / Path(_core.__file__).name)
    examples = root / "opweave" / "examples"  # installed there; in a checkout, beside
    if not examples.exists():
        shutil.copytree(opweave.examples.__path__[0], examples)
    ops = root / "travel_ops"
    ops.mkdir()
    (ops / "__init__.py").write_text("from travel_ops import helper\n" + OPS)
    (ops / "helper.py").write_text(f"TERM = {term!r}\n")
    (root / "run.py").write_text(RUN)
    return root


def _launcher(tmp_path: Path) -> tuple[Path, Path]:
    """A compiler launcher that logs its arguments and fails."""
    log = tmp_path / "launcher.log"
    launcher = tmp_path / "failing-launcher"
    launcher.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexit 1\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return launcher, log


def _env(site: Path, cache: Path, **options: object) -> dict[str, str]:
    """The environment of a process of ``site``, with cache root ``cache``
    and more OPWEAVE_FLAGS ``options``."""
    flags = ",".join(f"{k}={v}" for k, v in {"compiledir": cache, **options}.items())
    numpy_site = str(Path(numpy.__file__).parent.parent)
    path = os.pathsep.join([str(site), numpy_site])
    return {**os.environ, "PYTHONPATH": path, "OPWEAVE_FLAGS": flags}


def _run(site: Path, cache: Path, tmp_path: Path, **options: object) -> tuple[dict, list[str]]:
    """Runs the site's run.py in a fresh process (cache root ``cache``, more
    OPWEAVE_FLAGS ``options``); its report and the hooks its ops ran."""
    log = tmp_path / "hooks.log"
    log.write_text("")
    env = {**_env(site, cache, **options), "HOOK_LOG": str(log)}
    done = subprocess.run(
        [sys.executable, "-S", str(site / "run.py")],
        env=env,
        cwd=site,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["opweave"] == str(site / "opweave")  # the site's own copy ran
    return report, log.read_text().split()


def _cli(site: Path, cache: Path, *args: str, **options: object) -> str:
    done = subprocess.run(
        [sys.executable, "-S", "-m", "opweave", "cache", *args],
        env=_env(site, cache, **options),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


EXPECTED = [[1.0 + 2.0 + 1.0, 4.0 + 2.0 + 1.0]]  # x**2 + 2, then + TERM


@pytest.fixture
def sites(tmp_path: Path) -> tuple[Path, Path]:
    """The CI machine's site and the worker's, at another path."""
    return _site(tmp_path / "ci-site"), _site(tmp_path / "worker-site")


def _ci(site: Path, cache: Path, tmp_path: Path, **options: object) -> None:
    report, hooks = _run(site, cache, tmp_path, **options)
    assert (report["value"], report["outcome"]) == (EXPECTED, "built")
    assert "c_code" in hooks


def _worker_hits(site: Path, cache: Path, tmp_path: Path, **options: object) -> None:
    """The worker links the graph asking no op and running no compiler."""
    launcher, log = _launcher(tmp_path)
    report, hooks = _run(site, cache, tmp_path, cxx_launcher=launcher, **options)
    assert (report["value"], report["outcome"], hooks) == (EXPECTED, "hit", [])
    assert not log.exists(), log.read_text()


def test_an_imported_export_serves_a_worker_at_another_path(
    tmp_path: Path, sites: tuple[Path, Path]
) -> None:
    ci, worker = sites
    _ci(ci, tmp_path / "ci-cache", tmp_path)
    export = tmp_path / "ci.tar.gz"
    _cli(ci, tmp_path / "ci-cache", "export", str(export))
    out = _cli(worker, tmp_path / "worker-cache", "import", str(export), "--trust-unsigned")
    assert "imported" in out
    listed = _cli(worker, tmp_path / "worker-cache", "list")
    assert " graph " in listed  # the record came as an entry of its own
    _worker_hits(worker, tmp_path / "worker-cache", tmp_path)


def test_a_read_only_layer_serves_a_worker_at_another_path(
    tmp_path: Path, sites: tuple[Path, Path]
) -> None:
    ci, worker = sites
    _ci(ci, tmp_path / "ci-cache", tmp_path)
    _worker_hits(
        worker, tmp_path / "worker-cache", tmp_path, cache__shared_dirs=tmp_path / "ci-cache"
    )


def test_the_remote_tier_serves_a_worker_at_another_path(
    tmp_path: Path, sites: tuple[Path, Path]
) -> None:
    ci, worker = sites
    secret = tmp_path / "secret"
    secret.write_text("a shared secret\n")
    secret.chmod(0o600)
    with redis_server(tmp_path) as url:
        remote = {"cache__remote": url, "cache__remote_secret": f"file:{secret}"}
        _ci(ci, tmp_path / "ci-cache", tmp_path, **remote)
        _worker_hits(worker, tmp_path / "worker-cache", tmp_path, **remote)
        # Adopted into the worker's own cache: a later process needs no server.
        _worker_hits(worker, tmp_path / "worker-cache", tmp_path)


def test_a_worker_whose_helper_differs_asks_its_ops(tmp_path: Path) -> None:
    ci = _site(tmp_path / "ci-site")
    worker = _site(tmp_path / "worker-site", term="100.0")
    _ci(ci, tmp_path / "ci-cache", tmp_path)
    report, hooks = _run(
        worker, tmp_path / "worker-cache", tmp_path, cache__shared_dirs=tmp_path / "ci-cache"
    )
    assert report["value"] == [[103.0, 106.0]] and report["outcome"] == "built"
    assert "c_code" in hooks
    # Its own record then: a hit, though the layer's record still differs.
    report, hooks = _run(
        worker, tmp_path / "worker-cache", tmp_path, cache__shared_dirs=tmp_path / "ci-cache"
    )
    assert (report["value"], report["outcome"], hooks) == ([[103.0, 106.0]], "hit", [])

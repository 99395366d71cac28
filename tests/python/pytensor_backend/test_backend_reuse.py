"""What opweave.pytensor reuses of what it compiled: a second function() of an
equal graph asks no op for code, a changed flag is never served from the
memo, a fresh process hits through the graph index without asking any
version, and graphs that differ in a fused constant or an unread input's
dtype get their own modules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")
pt = pytest.importorskip("pytensor.tensor")

from .test_backend import compiled  # noqa: E402


def _logp_graph():
    mu, sigma = pt.dscalar("mu"), pt.dscalar("sigma")
    y = pt.dvector("y")
    logp = (-0.5 * ((y - mu) / sigma) ** 2 - pt.log(sigma)).sum()
    return [mu, sigma, y], [logp, *pytensor.grad(logp, [mu, sigma])]


def test_a_second_function_of_an_equal_graph_asks_no_op_for_code() -> None:
    inputs, outputs = _logp_graph()
    f = compiled(inputs, outputs)
    inputs, outputs = _logp_graph()
    g = compiled(inputs, outputs)
    assert set(g.vm.function.compile_seconds) == {"lookup"}  # from the process's memo
    assert g.vm.function.cache_outcome == "hit"
    args = (np.array(0.5), np.array(2.0), np.array([1.0, -1.0, 3.0]))
    for got, want in zip(g(*args), f(*args), strict=True):
        np.testing.assert_allclose(got, want)


def test_a_changed_pytensor_flag_is_not_served_from_the_memo() -> None:
    inputs, outputs = _logp_graph()
    compiled(inputs, outputs)
    with pytensor.config.change_flags(check_input=not pytensor.config.check_input):
        inputs, outputs = _logp_graph()
        g = compiled(inputs, outputs)
    assert "hooks" in g.vm.function.compile_seconds  # its ops were asked again


def test_graphs_differing_only_in_an_unread_inputs_dtype() -> None:
    # second(x, y) keeps y broadcast to x's shape: x is read for its shape
    # only, and the rewritten graphs differ in x's dtype alone.
    from pytensor.tensor.basic import second

    y = np.arange(6, dtype="int8").reshape(3, 2)
    for dtype in ("int16", "int32", "float64"):
        x = pt.tensor("x", dtype=dtype, shape=(4, 2, 3, 2))  # its shape is known: unread
        yv = pt.tensor("y", dtype="int8", shape=(None, None))
        f = compiled([x, yv], second(x, yv))
        got = f(np.ones((4, 2, 3, 2), dtype=dtype), y)
        np.testing.assert_array_equal(got, np.broadcast_to(y, (4, 2, 3, 2)))


FRESH_HIT = """
import json
import numpy as np
import pytensor
import pytensor.tensor as pt
import opweave.pytensor  # noqa: F401
from pytensor.tensor.blas.blas_c import CGemv

versions = []
asked = CGemv.c_code_cache_version
CGemv.c_code_cache_version = lambda self: versions.append(1) or asked(self)
m, x = pt.dmatrix("m"), pt.dvector("x")
f = pytensor.function([m, x], pt.dot(m, x * 2.0) + x[::-1], mode="OPWEAVE")
assert any(type(n.op).__name__ == "CGemv" for n in f.maker.fgraph.apply_nodes)
value = f(np.arange(6.0).reshape(2, 3)[:, :2], np.array([1.0, 2.0]))
print(json.dumps({"value": value.tolist(), "outcome": f.vm.function.cache_outcome,
                  "versions": len(versions)}))
"""


def test_a_hit_in_a_fresh_process_asks_no_version(tmp_path: Path) -> None:
    """CGemv's version hook compiles and runs a test program in each
    process; the graph index finds the module without it."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env["OPWEAVE_FLAGS"] = f"compiledir={tmp_path / 'opweave'}"
    env["PYTENSOR_FLAGS"] = ",".join(
        [f"compiledir={tmp_path / 'pytensor'}", *filter(None, [env.get("PYTENSOR_FLAGS", "")])]
    )
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", FRESH_HIT], env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    expected = (np.arange(6.0).reshape(2, 3)[:, :2] @ np.array([2.0, 4.0]) + [2.0, 1.0]).tolist()
    assert runs[0]["value"] == runs[1]["value"] == expected
    assert runs[0]["outcome"] == "built" and runs[0]["versions"] > 0
    assert runs[1]["outcome"] == "hit" and runs[1]["versions"] == 0


def test_graphs_differing_in_a_fused_constant_get_their_own_modules() -> None:
    """The constants of a fused Composite are in its inner graph: each one
    names the graph, in the process's memo and in the graph index."""
    m = pt.dmatrix("m")
    values = np.arange(6.0).reshape(2, 3)
    results = []
    for scale in (0.25, 0.5, 0.75):
        out = pt.exp(m * scale).sum(axis=0) * scale + m[0] * (scale + 1.0)
        f, g = compiled([m], out), pytensor.function([m], out, mode="CVM")
        np.testing.assert_allclose(f(values), g(values), rtol=1e-12)
        results.append(f(values).tolist())
    assert len({tuple(r) for r in results}) == 3

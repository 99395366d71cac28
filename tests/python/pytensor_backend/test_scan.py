"""Scan and OpFromGraph on opweave (issue 38): their inner functions are
linked and cached by opweave (never PyTensor's cvm and its compiledir),
updates included (Scan's loop calls the inner function's vm directly and
relies on it to feed preallocated gradient taps back), with the C back
end's values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.builders import OpFromGraph  # noqa: E402
from pytensor.scan.op import Scan  # noqa: E402
from pytensor.scan.utils import until as until_  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave import _core  # noqa: E402
from opweave.pytensor import _inner_on_opweave  # noqa: E402


def step(x, w):
    y = pt.tanh(pt.dot(w, x)) * 0.5 + x * 0.5
    return pt.exp(-y * y) + pt.log1p(y * y) - pt.sin(y) + pt.cos(x) * 0.1


def scan_graph(n_steps: int = 50):
    x0, w = pt.dvector("x0"), pt.dmatrix("w")
    out = pytensor.scan(
        step, outputs_info=[x0], non_sequences=[w], n_steps=n_steps, return_updates=False
    )
    cost = out[-1].sum()
    return [x0, w], [cost, *pytensor.grad(cost, [x0, w])]


ARGS = (np.linspace(-1, 1, 5), np.random.default_rng(0).normal(size=(5, 5)) * 0.3)


def test_a_scan_and_its_gradient_have_the_c_back_ends_values() -> None:
    inputs, outputs = scan_graph()
    fo = pytensor.function(inputs, outputs, mode="OPWEAVE")
    fc = pytensor.function(inputs, outputs, mode="CVM")
    for _ in range(2):
        for got, expected in zip(fo(*ARGS), fc(*ARGS), strict=True):
            np.testing.assert_array_equal(got, expected)


def test_scan_inner_functions_are_opweaves() -> None:
    inputs, outputs = scan_graph(5)
    f = pytensor.function(inputs, outputs, mode="OPWEAVE")
    scans = [n for n in f.maker.fgraph.toposort() if isinstance(n.op, Scan)]
    assert len(scans) == 2  # the loop and its gradient's
    for node in scans:
        mine = _inner_on_opweave(node.op)
        assert mine is not node.op and mine == node.op
        assert isinstance(mine._fn.vm, _core.CellCall)
        assert type(mine._fn.maker.linker).__name__ == "OpweaveLinker"
        assert node.op._fn is None  # the shared op is left to other back ends


def test_sequences_taps_and_while_loops() -> None:
    seq, x0 = pt.dvector("seq"), pt.dvector("x0")
    outs = pytensor.scan(
        lambda s, xm2, xm1: xm1 * 0.5 + xm2 * 0.25 + s,
        sequences=[seq],
        outputs_info=[{"initial": x0, "taps": [-2, -1]}],
        return_updates=False,
    )
    total = pt.dscalar("total")

    def until(acc):
        new = acc * 1.5 + 1.0
        return new, until_(new > total)

    grown = pytensor.scan(
        until, outputs_info=[pt.constant(1.0, dtype="float64")], n_steps=100, return_updates=False
    )
    fo = pytensor.function([seq, x0, total], [outs, grown], mode="OPWEAVE")
    fc = pytensor.function([seq, x0, total], [outs, grown], mode="CVM")
    args = (np.arange(7.0), np.array([1.0, 2.0]), np.array(50.0))
    for got, expected in zip(fo(*args), fc(*args), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_an_op_from_graph_with_a_python_node_links_its_inner_function_with_opweave() -> None:
    x = pt.dvector("x")
    inner = pt.sort(x) * 2.0  # SortOp has no C code: the OpFromGraph is not inlined
    ofg = OpFromGraph([x], [inner])
    y = pt.dvector("y")
    fo = pytensor.function([y], ofg(y) + 1.0, mode="OPWEAVE")
    fc = pytensor.function([y], ofg(y) + 1.0, mode="CVM")
    value = np.array([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(fo(value), fc(value))
    (node,) = [n for n in fo.maker.fgraph.toposort() if isinstance(n.op, OpFromGraph)]
    assert isinstance(_inner_on_opweave(node.op)._fn.vm, _core.CellCall)


FRESH = """
import numpy as np, pytensor, pytensor.tensor as pt
import opweave.pytensor
x0, w = pt.dvector("x0"), pt.dmatrix("w")
out = pytensor.scan(lambda x, w: pt.tanh(pt.dot(w, x)) + x * 0.5, outputs_info=[x0],
                    non_sequences=[w], n_steps=20, return_updates=False)
cost = out[-1].sum()
f = pytensor.function([x0, w], [cost, *pytensor.grad(cost, [x0, w])], mode="OPWEAVE")
print(float(f(np.ones(3), np.eye(3) * 0.5)[0]))
"""


@pytest.mark.slow
def test_a_scan_adds_nothing_to_pytensors_compiledir(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["OPWEAVE_FLAGS"] = f"compiledir={tmp_path / 'opweave'}"
    env["PYTENSOR_FLAGS"] = ",".join(
        [f"compiledir={tmp_path / 'pytensor'}", *filter(None, [env.get("PYTENSOR_FLAGS", "")])]
    )
    done = subprocess.run(
        [sys.executable, "-c", FRESH], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert np.isfinite(float(done.stdout.strip().splitlines()[-1]))
    pytensor_dir = tmp_path / "pytensor"
    modules = list(pytensor_dir.rglob("*.so")) if pytensor_dir.exists() else []
    assert modules == []

"""OpFromGraph under "OPWEAVE" (issue 37): a node whose inner graph is C
code is inlined after PyTensor's rewrites, so the graph is one opweave
module and PyTensor's compiledir is not used; one whose inner graph has a
node without C code stays an OpFromGraph. Values equal the C back end's
("CVM")."""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.builders import OpFromGraph  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave import _core  # noqa: E402


def op_from_graph_nodes(f) -> list:
    return [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, OpFromGraph)]


def test_an_op_from_graph_of_c_code_is_inlined_into_one_module() -> None:
    a, b = pt.dvector("a"), pt.dvector("b")
    inner = OpFromGraph([a, b], [pt.exp(a) * b + pt.log1p(b * b)])
    x, y = pt.dvector("x"), pt.dvector("y")
    out = inner(x, y) * 2 + inner(y, x)
    grads = pytensor.grad(out.sum(), [x, y])
    f = pytensor.function([x, y], [out, *grads], mode="OPWEAVE")
    assert op_from_graph_nodes(f) == []
    assert isinstance(f.vm, _core.CellCall)
    assert getattr(f.vm.function, "node_outcomes", None) is None  # one whole-graph module
    reference = pytensor.function([x, y], [out, *grads], mode="CVM")
    xv, yv = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 2.0, 5)
    for got, want in zip(f(xv, yv), reference(xv, yv), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_an_op_from_graph_with_a_python_node_stays_whole() -> None:
    a = pt.dvector("a")
    inner = OpFromGraph([a], [pt.sort(a) * 2])  # SortOp has no C code
    x = pt.dvector("x")
    f = pytensor.function([x], inner(x) + 1, mode="OPWEAVE")
    assert len(op_from_graph_nodes(f)) == 1
    np.testing.assert_array_equal(f(np.array([3.0, 1.0, 2.0])), [3.0, 5.0, 7.0])


@pytest.mark.slow  # compiles a PyMC model with the C back end too
def test_a_mixtures_gradient_is_one_module_with_the_c_back_ends_values() -> None:
    pm = pytest.importorskip("pymc", reason="needs PyMC (.ci/run installs it with the extra)")
    rng = np.random.default_rng(0)
    data = np.concatenate([rng.normal(-2, 1, 60), rng.normal(2, 1, 60)])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        ordered = pm.distributions.transforms.ordered
        mu = pm.Normal("mu", 0, 5, shape=2, transform=ordered, initval=[-1.0, 1.0])
        pm.NormalMixture("y", w, mu, sigma=1.0, observed=data)
    ours = model.logp_dlogp_function(ravel_inputs=True, mode="OPWEAVE")
    theirs = model.logp_dlogp_function(ravel_inputs=True, mode="CVM")
    fn = ours._pytensor_function
    assert op_from_graph_nodes(fn) == []
    assert getattr(fn.vm.function, "node_outcomes", None) is None  # one module, all C
    point = np.array([0.1, -1.5, 0.7])
    ours.set_extra_values({})
    theirs.set_extra_values({})
    (logp, grad), (want_logp, want_grad) = ours(point), theirs(point)
    np.testing.assert_allclose(logp, want_logp, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12)

"""A fused ``Composite``'s switches compute only the arm they take
(opweave/pytensor/_composite_code.py), in opweave's flat loop for
``Elemwise``: values bitwise those of PyTensor's C back end, whichever arm
each element takes, and the same errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from pytensor.scalar.basic import Composite  # noqa: E402
from pytensor.tensor.elemwise import Elemwise  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.pytensor._composite_code import composite_task  # noqa: E402

OPWEAVE = Mode(linker="opweave", optimizer="fast_run")
PYTENSOR_C = Mode(linker="c", optimizer="fast_run")
SUB = {"fail": "{ FAIL_HERE; }", "id": 3}


def composites(f) -> list[Composite]:
    """The Composite scalar ops of ``f``'s fused nodes."""
    ops = [n.op for n in f.maker.fgraph.toposort() if isinstance(n.op, Elemwise)]
    return [op.scalar_op for op in ops if isinstance(op.scalar_op, Composite)]


def task(composite: Composite) -> str | None:
    """The arranged code of ``composite``, with plain names."""
    inputs = [f"in{k}" for k in range(composite.nin)]
    outputs = [f"out{k}" for k in range(composite.nout)]
    return composite_task(composite, "node_scalar_", inputs, outputs, SUB)


def check(inputs, outputs, values) -> list[str]:
    """Compiles the graph under opweave and PyTensor's C linker, checks
    their values bitwise, and returns the arranged code of each of
    opweave's Composites (None where PyTensor's is kept)."""
    ours, theirs = (pytensor.function(inputs, outputs, mode=m) for m in (OPWEAVE, PYTENSOR_C))
    got, expected = ours(*values), theirs(*values)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g.view(np.uint8), e.view(np.uint8))
    return [task(c) for c in composites(ours)]


def logits(n: int = 4096) -> np.ndarray:
    """Logits over every branch of softplus, and the odd ones."""
    x = np.random.default_rng(0).normal(0, 20, n)
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 40.0]
    return x


def test_bernoulli_logit_computes_one_softplus_per_element():
    x, y = pt.dvector("x"), pt.bvector("y")
    logp = pt.switch(y, -pt.softplus(-x), -pt.softplus(x))
    out = pt.switch(pt.isnan(x), -np.inf, logp) + pt.sigmoid(x)
    ys = (np.random.default_rng(1).random(4096) < 0.5).astype("int8")
    (code,) = check([x, y], [out], [logits(), ys])
    assert code is not None
    # Each softplus (a log1p) is inside one arm of the switch on y.
    branch = code.index("if (in1)")
    assert code.count("log1p") == 2 and code.index("log1p") > branch
    assert code[branch:].index("} else {") < code.rindex("log1p") - branch


def test_a_node_both_arms_of_two_switches_need_is_computed_once_before_them():
    x, c = pt.dvector("x"), pt.dvector("c")
    e = pt.exp(x)
    out = pt.switch(c > 0, pt.log(e + 2.0), 0.0) + pt.switch(c > 1, pt.cos(e), 1.0)
    values = [logits(), np.random.default_rng(2).normal(0.5, 1.0, 4096)]
    (code,) = check([x, c], [out], values)
    assert code is not None
    assert code.count("exp(") == 1 and code.index("exp(") < code.index("if (")
    # Each arm's own call is inside its branch.
    assert code.count("if (") == 2 and code.count("log(") == 1 and code.count("cos(") == 1
    assert min(code.index("log("), code.index("cos(")) > code.index("if (")


def test_nested_switches_and_mixed_dtypes():
    x, c = pt.fvector("x"), pt.ivector("c")
    inner = pt.switch(c > 1, pt.log(pt.abs(x)), pt.exp(x))
    out = pt.switch(c > 0, inner, pt.cast(c * 3, "int8"))
    ints = np.random.default_rng(3).integers(-1, 3, 4096).astype("int32")
    (code,) = check([x, c], [out], [logits().astype("float32"), ints])
    assert code is not None and code.count("if (") == 2


def test_cheap_arms_keep_pytensors_code():
    x = pt.dvector("x")
    out = pt.switch(x > 0, x * 2.0, x - 1.0) + 3.0
    assert check([x], [out], [logits()]) == [None]


def test_a_node_that_can_fail_is_computed_whatever_the_switch_takes():
    x, a, b = pt.dvector("x"), pt.lvector("a"), pt.lvector("b")
    out = pt.switch(b > 5, pt.exp(x) + a // b, 0.0)
    ints = np.random.default_rng(4).integers(0, 10, 4096)
    ints[-1] = 0  # integer division by zero where the switch takes 0.0
    values = [logits(), ints, ints]
    for mode in (OPWEAVE, PYTENSOR_C):
        f = pytensor.function([x, a, b], out, mode=mode)
        with pytest.raises(ZeroDivisionError):
            f(*values)
    f = pytensor.function([x, a, b], out, mode=OPWEAVE)
    (code,) = [task(c) for c in composites(f)]
    assert code is not None
    branch = re.search(r"^if \(V3_tmp\d+\) \{$", code, re.M)
    assert branch is not None
    assert code.index("FAIL_HERE") < branch.start() < code.index("exp(")

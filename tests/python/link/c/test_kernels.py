"""The kernel registry (opweave.link.c.kernels): C code registered for an
op class that has none is what every build shape compiles (mode "C", the
default's per-node linking, the whole graph, node exports and keys), the op
keeps its class and perform, a provider may decline, and a registration
covers one class exactly."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pytest
from support.ops import PyPlusOne
from support.unit_hook_ops import hook_chain

import opweave
from opweave.compile.function import function
from opweave.graph.basic import Apply
from opweave.link.c.basic import MissingCCode
from opweave.link.c.kernels import code_op, register_kernel, registered_kernels, unregister_kernel
from opweave.tensor import dvector, fvector


class PlusOneKernel:
    """C code for PyPlusOne on float64 vectors: z = x + step (1.0)."""

    __props__ = ("op",)
    step = 1.0

    def __init__(self, op: object) -> None:
        self.op = op

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.op == other.op  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.op))

    def c_support_code(self, **kwargs):
        return f"static double opw_kernel_step(void) {{ return {self.step!r}; }}"

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
        if (!{z}) {sub["fail"]}
        for (npy_intp i = 0; i < PyArray_SIZE({z}); ++i)
            ((double*)PyArray_DATA({z}))[i] += opw_kernel_step();
        """


def float64_only(node: Apply) -> PlusOneKernel | None:
    return PlusOneKernel(node.op) if node.inputs[0].type.dtype == "float64" else None


class Subclass(PyPlusOne):
    """A subclass: a registration for PyPlusOne does not cover it."""


@pytest.fixture
def registered() -> Iterator[None]:
    register_kernel(PyPlusOne, float64_only)
    yield
    unregister_kernel(PyPlusOne)


def test_registered_c_code_runs_in_every_mode_and_the_op_keeps_its_class(
    registered: None,
) -> None:
    x = dvector("x")
    for mode in ("C", None, "c|py"):
        f = function([x], PyPlusOne()(PyPlusOne()(x)), mode=mode)
        np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [3.0, 4.0])
        # Mode "C" compiles only C code (it raises MissingCCode otherwise);
        # per-node linking says what ran each node: no node ran perform.
        assert None not in getattr(f, "node_outcomes", []), mode
    node = PyPlusOne()(x).owner
    assert type(node.op) is PyPlusOne and not hasattr(PyPlusOne, "c_code")
    assert isinstance(code_op(node), PlusOneKernel)
    # Python mode still runs perform.
    np.testing.assert_array_equal(function([x], PyPlusOne()(x), mode="py")([1.0]), [2.0])


@pytest.mark.parametrize("threshold", [24, 0])
def test_a_kernel_among_hook_ops_gives_the_same_values_cut_in_units_or_not(
    registered: None, threshold: int
) -> None:
    x = dvector("x")
    ks = [round(0.5 + 0.01 * k, 6) for k in range(40)]
    graph = hook_chain(PyPlusOne()(hook_chain(x, ks[:20])), ks[20:])
    values = np.linspace(-2.0, 2.0, 7)
    expected = function([x], graph, mode="py")(values)
    with opweave.config.change_flags(cmodule__unit_threshold=threshold):
        got = function([x], graph, mode="C")(values)
    np.testing.assert_array_equal(got, expected)


def test_a_declining_provider_leaves_the_node_in_python_and_says_so(
    registered: None, caplog: pytest.LogCaptureFixture
) -> None:
    v = fvector("v")
    with caplog.at_level(logging.INFO, logger="opweave.link.c.kernels"):
        f = function([v], PyPlusOne()(v))
    np.testing.assert_array_equal(f(np.ones(2, dtype="float32")), [2.0, 2.0])
    assert f.node_outcomes == [None]
    assert "registered C code for PyPlusOne does not cover these inputs" in caplog.text
    with pytest.raises(MissingCCode, match="PyPlusOne"):
        function([v], PyPlusOne()(v), mode="C")


def test_a_registration_covers_one_class_exactly(registered: None) -> None:
    x = dvector("x")
    f = function([x], Subclass()(x))
    assert f.node_outcomes == [None]
    np.testing.assert_array_equal(f([1.0]), [2.0])


def test_a_changed_kernel_is_compiled_again_not_served_stale(
    registered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = dvector("x")
    np.testing.assert_array_equal(function([x], PyPlusOne()(x), mode="C")([1.0]), [2.0])
    monkeypatch.setattr(PlusOneKernel, "step", 5.0)
    np.testing.assert_array_equal(function([x], PyPlusOne()(x), mode="C")([1.0]), [6.0])


def test_unregistering_restores_python_and_bad_registrations_raise() -> None:
    register_kernel(PyPlusOne, float64_only)
    assert registered_kernels()[PyPlusOne] is float64_only
    unregister_kernel(PyPlusOne)
    assert PyPlusOne not in registered_kernels()
    x = dvector("x")
    assert function([x], PyPlusOne()(x)).node_outcomes == [None]
    with pytest.raises(TypeError, match="op class"):
        register_kernel(PyPlusOne(), float64_only)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        register_kernel(PyPlusOne, "not a provider")  # type: ignore[arg-type]

"""Mode(linker="c|py"): one cached module per node with C code, perform for
the others, a Python loop between them."""

from __future__ import annotations

import numpy as np
import pytest
from opweave.examples.vector_times_scalar import VectorTimesScalar
from opweave.examples.vector_times_vector import VectorTimesVector
from support.helpers import compiled_modules
from support.ops import PyPlusOne, TwoWays

import opweave
from opweave.compile.mode import Mode
from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.link.c.basic import MissingCCode
from opweave.link.c.op import COp
from opweave.tensor import dscalar, dvector, fvector, vector


class HalfOk(TwoWays):
    _f16_ok = True


def test_mixed_graph_runs_c_nodes_in_c_and_the_rest_in_python() -> None:
    x, y, a = dvector("x"), dvector("y"), dscalar("a")
    out = VectorTimesScalar()(PyPlusOne()(VectorTimesVector()(x, y)), a)
    two = TwoWays()(out)
    f = opweave.function([x, y, a], [out, two], mode="c|py")
    values = (np.array([1.0, 2.0]), np.array([3.0, 4.0]), 2.0)
    first, second = f(*values)
    np.testing.assert_array_equal(first, [8.0, 18.0])
    np.testing.assert_array_equal(second, first + 1)  # TwoWays ran its C code
    py_first, py_second = opweave.function([x, y, a], [out, PyPlusOne()(out)], mode="py")(*values)
    np.testing.assert_array_equal(py_first, first)
    np.testing.assert_array_equal(py_second, first + 1)
    assert f.mode == Mode("c|py") and opweave.function([x], x, mode="CVM").mode == Mode("c|py")


def test_single_node_regions_are_shared_by_graphs_using_the_same_op_and_types() -> None:
    x, y, z = dvector("x"), dvector("y"), dvector("z")
    op = VectorTimesVector()
    f = opweave.function([x, y], op(x, y), mode="c|py")
    assert len(compiled_modules()) == 1
    # A different graph whose C regions are single applies of the op on
    # float64 vectors, between Python nodes: nothing new to compile.
    g = opweave.function([x, y, z], PyPlusOne()(op(PyPlusOne()(op(x, y)), z)), mode="c|py")
    assert len(compiled_modules()) == 1
    assert f.node_outcomes == ["built"] and g.node_outcomes == ["hit", None, "hit", None]
    np.testing.assert_array_equal(g(np.ones(2), np.full(2, 2.0), np.full(2, 3.0)), [10.0, 10.0])
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 5.0)), [5.0, 5.0])
    # Consecutive C nodes whose code is compiled: nothing new either.
    chained = PyPlusOne()(op(op(x, y), z))
    h2 = opweave.function([x, y, z], chained, mode="c|py")
    assert len(compiled_modules()) == 1 and h2.node_outcomes == ["hit", "hit", None]
    np.testing.assert_array_equal(h2(np.ones(2), np.full(2, 2.0), np.full(2, 3.0)), [7.0, 7.0])
    # New code with it: the region is one module, compiled once.
    s = dscalar("s")
    mixed = PyPlusOne()(VectorTimesScalar()(op(x, y), s))
    h3 = opweave.function([x, y, s], mixed, mode="c|py")
    assert len(compiled_modules()) == 2 and h3.node_outcomes == ["built", "built", None]
    again = opweave.function([x, y, s], mixed, mode="c|py")
    assert len(compiled_modules()) == 2 and again.node_outcomes == ["hit", "hit", None]
    np.testing.assert_array_equal(again(np.ones(2), np.full(2, 2.0), 3.0), [7.0, 7.0])
    # Other input types are another module.
    a, b = fvector("a"), vector("b", dtype="int16")
    h = opweave.function([a, b], op(a, b), mode="c|py")
    assert len(compiled_modules()) == 3
    assert h(np.ones(2, "float32"), np.ones(2, "int16")).dtype == np.float32


def test_float16_runs_perform_unless_the_op_says_f16_ok() -> None:
    h = vector("h", dtype="float16")
    data = np.array([1.0, 2.0], dtype="float16")
    plain = opweave.function([h], TwoWays()(h), mode="c|py")
    np.testing.assert_array_equal(plain(data), data + 2)  # perform
    ok = opweave.function([h], HalfOk()(h), mode="c|py")
    # The C code ran: it adds 1 to npy_float16, which is the raw bit pattern
    # (the reason ops must opt in with _f16_ok).
    np.testing.assert_array_equal(ok(data).view("uint16"), data.view("uint16") + 1)
    f32 = fvector("f")
    np.testing.assert_array_equal(
        opweave.function([f32], TwoWays()(f32), mode="c|py")(np.ones(2, "float32")), [2.0, 2.0]
    )


def test_errors_from_node_code_keep_their_type_and_name_the_node() -> None:
    x, y = dvector("x"), dvector("y")
    f = opweave.function([x, y], VectorTimesVector()(x, y), mode="c|py")
    with pytest.raises(ValueError, match="Shape mismatch") as info:
        f(np.ones(2), np.ones(3))
    assert any("node 0 (VectorTimesVector)" in note for note in info.value.__notes__)
    np.testing.assert_array_equal(f(np.ones(2), np.ones(2)), [1.0, 1.0])


def test_inexact_values_between_nodes_are_converted() -> None:
    class PyFloat(Op):
        """Returns a Python list where the next op's C code wants an array."""

        __props__ = ()

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = [float(v) * 10 for v in inputs[0]]

    x = dvector("x")
    f = opweave.function([x], TwoWays()(PyFloat()(x)), mode="c|py")
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [11.0, 21.0])


def test_a_node_with_neither_c_nor_perform_is_an_error_at_compile_time() -> None:
    class Nothing(Op):
        __props__ = ()

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

    x = dvector("x")
    with pytest.raises(MissingCCode, match=r"node 0 \(Nothing\) can run neither"):
        opweave.function([x], Nothing()(x), mode="c|py")


def test_linker_spellings_name_the_per_node_linker() -> None:
    from opweave.link.c.basic import CLinker, OpWiseCLinker

    for spelling in ("c|py", "CVM", "cvm", "vm", OpWiseCLinker()):
        assert Mode(linker=spelling) == Mode("c|py")
    assert Mode(linker=CLinker()) == Mode("c")
    with pytest.raises(TypeError, match="linker must be"):
        Mode(linker=object())
    x = dvector("x")
    f = opweave.function([x], TwoWays()(x), mode=Mode(linker=OpWiseCLinker()))
    np.testing.assert_array_equal(f(np.zeros(1)), [1.0])


def test_constant_inputs_reach_c_code_as_constants() -> None:
    from opweave.graph.basic import Constant
    from opweave.tensor import constant

    class AddConstant(COp):
        """Writes the constant's value into its C code, as an op may."""

        __props__ = ()

        def make_node(self, x, k):
            return Apply(self, [x, k], [x.type()])

        def c_code(self, node, name, inp, out, sub):
            assert isinstance(node.inputs[1], Constant)
            value = float(node.inputs[1].data)
            (x, _), (z,) = inp, out
            return f"""
            Py_XDECREF({z});
            {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
            if (!{z}) {sub["fail"]}
            for (npy_intp i = 0; i < PyArray_SIZE({z}); ++i)
                ((double*)PyArray_DATA({z}))[i] += {value!r};
            """

    x = dvector("x")
    for mode in ("c", "c|py"):
        f = opweave.function([x], AddConstant()(x, constant(4.0)), mode=mode)
        np.testing.assert_array_equal(f(np.ones(2)), [5.0, 5.0])

"""ParamsType in compiled functions: ops reading tensor, scalar, generic and
nested fields, modules shared by ops that differ only in their params,
params in struct init code and as graph inputs, and the errors of ops
without params or params types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.helpers import compiled_modules

import opweave
from opweave.graph.basic import Apply
from opweave.link.c.enum_type import EnumList
from opweave.link.c.op import COp
from opweave.link.c.params_type import ParamsType
from opweave.link.c.type import generic
from opweave.scalar.basic import float64, int64
from opweave.tensor import dvector

from .test_params_type import quadratic_type

MODES = ["C", "CVM"]


class Quadratic(COp):
    """z = a*x**2 + b*x + c; a is a 0-d tensor, b a scalar, c any Python number."""

    __props__ = ("a", "b", "c")
    params_type = quadratic_type()

    def __init__(self, a: float, b: float, c: float) -> None:
        self.a, self.b, self.c = a, b, c

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,), params = inputs, outputs, sub["params"]
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS({x}), NPY_FLOAT64, 0);
        if (!{z}) {sub["fail"]}
        {{
            npy_float64 a = *(npy_float64*)PyArray_DATA({params}->a);
            npy_float64 b = {params}->b;
            double c = PyFloat_AsDouble({params}->c);
            if (c == -1.0 && PyErr_Occurred()) {sub["fail"]}
            for (npy_intp i = 0; i < PyArray_DIMS({x})[0]; ++i) {{
                double v = *(double*)PyArray_GETPTR1({x}, i);
                *(double*)PyArray_GETPTR1({z}, i) = a * v * v + b * v + c;
            }}
        }}
        """


@pytest.mark.parametrize("mode", MODES)
def test_op_reads_tensor_scalar_and_generic_fields(mode: str) -> None:
    x = dvector("x")
    f = opweave.function([x], Quadratic(2.0, -3.0, 0.5)(x), mode=mode)
    values = np.array([0.0, 1.0, 2.5, -4.0])
    np.testing.assert_allclose(f(values), 2.0 * values**2 - 3.0 * values + 0.5)


def test_ops_differing_only_in_params_share_one_module() -> None:
    x = dvector("x")
    values = np.array([1.0, 2.0, 3.0])
    f = opweave.function([x], Quadratic(1.0, 0.0, 0.0)(x))
    g = opweave.function([x], Quadratic(0.0, 4.0, -1.0)(x))
    np.testing.assert_allclose(f(values), values**2)
    np.testing.assert_allclose(g(values), 4.0 * values - 1.0)
    assert (f.cache_outcome, g.cache_outcome) == ("built", "hit")
    assert len(compiled_modules()) == 1 and f.library == g.library
    # A graph with both ops is another module, still with one struct definition.
    both = opweave.function([x], [Quadratic(1.0, 0.0, 0.0)(x), Quadratic(0.0, 4.0, -1.0)(x)])
    first, second = both(values)
    np.testing.assert_allclose(first, values**2)
    np.testing.assert_allclose(second, 4.0 * values - 1.0)
    assert len(compiled_modules()) == 2
    source = Path(both.source).read_text()
    assert source.count(f"struct {Quadratic.params_type.name} {{") == 1


class Accumulate(COp):
    """Keeps a running sum in the struct, started at a param in c_init_code_struct."""

    __props__ = ("start", "mode")
    params_type = ParamsType(start=float64, mode=EnumList(("ADD", "add"), ("SUB", "sub")))

    def __init__(self, start: float, mode: str) -> None:
        self.start, self.mode = start, mode

    def make_node(self, x):
        return Apply(self, [x], [float64()])

    def c_support_code_struct(self, node, name):
        return f"double total_{name};"

    def c_init_code_struct(self, node, name, sub):
        return f"total_{name} = {sub['params']}->start;"

    def c_code(self, node, name, inputs, outputs, sub):
        params = sub["params"]
        return f"""
        total_{name} += ({params}->mode == ADD ? 1.0 : -1.0) * {inputs[0]};
        {outputs[0]} = total_{name};
        """


def test_params_reach_c_init_code_struct() -> None:
    x = float64("x")
    up = opweave.function([x], Accumulate(10.0, "add")(x))
    down = opweave.function([x], Accumulate(10.0, "sub")(x))
    assert [up(1.0), up(2.0)] == [11.0, 13.0]
    assert [down(1.0), down(2.0)] == [9.0, 7.0]
    assert down.cache_outcome == "hit"


class ReadParams(COp):
    """z = p.n + p.x, for a ParamsType graph input p."""

    __props__ = ()

    def make_node(self, params):
        return Apply(self, [params], [float64()])

    def c_code(self, node, name, inputs, outputs, sub):
        return f"{outputs[0]} = (double){inputs[0]}->n + {inputs[0]}->x;"


def test_params_as_a_graph_input_and_the_c_extraction_errors() -> None:
    params_type = ParamsType(n=int64, x=float64)
    p = params_type("p")
    f = opweave.function([p], ReadParams()(p))
    assert f(params_type.get_params(n=2, x=0.5)) == 2.5
    assert f({"n": 3, "x": 0.25}) == 3.25  # C rejects the inexact dict, filter converts it
    exact = opweave.function([p], ReadParams()(p), trust_input=True)
    assert exact(params_type.get_params(n=2, x=0.5)) == 2.5
    with pytest.raises(TypeError, match=r"ParamsType\(n, x\): the params value has no field 'x'"):
        exact({"n": np.int64(1)})
    with pytest.raises(ValueError, match="expected a Params value, got None"):
        exact(None)
    with pytest.raises(TypeError, match=r"expected a Params value .* got list"):
        exact([1, 2])
    with pytest.raises(TypeError, match=r"ParamsType field 'x': expected a numpy\.float64") as info:
        exact({"n": np.int64(1), "x": 0.5})
    assert isinstance(info.value.__cause__, TypeError)


class Nested(COp):
    """z = x * outer.inner.k + outer.shift, with a ParamsType inside a ParamsType."""

    __props__ = ("inner", "shift")
    inner_type = ParamsType(k=int64, mode=EnumList("KEEP", "NEGATE"))
    params_type = ParamsType(inner=inner_type, shift=float64)

    def __init__(self, k: int, mode: str, shift: float) -> None:
        self.inner = self.inner_type.get_params(k=k, mode=mode)
        self.shift = shift

    def make_node(self, x):
        return Apply(self, [x], [float64()])

    def c_code(self, node, name, inputs, outputs, sub):
        params = sub["params"]
        return f"""
        {outputs[0]} = {inputs[0]} * (double){params}->inner->k + {params}->shift;
        if ({params}->inner->mode == NEGATE) {outputs[0]} = -{outputs[0]};
        """


def test_a_params_type_can_hold_another() -> None:
    x = float64("x")
    f = opweave.function([x], [Nested(3, "KEEP", 0.5)(x), Nested(2, "NEGATE", 1.0)(x)])
    assert f(2.0) == [6.5, -5.0]
    support = Nested.params_type.c_support_code()
    inner = support.index(Nested.inner_type.c_support_code()[-1])
    assert inner == len(support) - 2  # the inner struct comes just before the outer one


def test_params_type_without_params_and_params_without_params_type_are_errors() -> None:
    class NoParams(COp):
        __props__ = ()
        params_type = EnumList("ADD", "SUB")

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def c_code(self, node, name, inp, out, sub):
            return ""

    class NoType(NoParams):
        params_type = None

        def get_params(self, node):
            return 1

    x = opweave.tensor.dvector("x")
    with pytest.raises(TypeError, match=r"NoParams has a params_type .* but no params"):
        opweave.function([x], NoParams()(x))
    with pytest.raises(TypeError, match="returned a value but the op has no params_type"):
        opweave.function([x], NoType()(x))


def test_params_holding_arrays_in_a_generic_field_compile_for_two_nodes() -> None:
    class WithArray(COp):
        __props__ = ("tag",)
        params_type = ParamsType(g=generic)

        def __init__(self, tag):
            self.tag = tag
            self.g = np.arange(3.0) + tag

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def c_code(self, node, name, inp, out, sub):
            (z,) = out
            return f"""
            Py_XDECREF({z});
            {z} = (PyArrayObject*)PyArray_FromAny({sub["params"]}->g,
                PyArray_DescrFromType(NPY_FLOAT64), 1, 1, NPY_ARRAY_ENSURECOPY, NULL);
            if (!{z}) {sub["fail"]}
            """

    x = dvector("x")
    f = opweave.function([x], [WithArray(0)(x), WithArray(10)(x)])
    first, second = f(np.zeros(3))
    np.testing.assert_array_equal(first, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(second, [10.0, 11.0, 12.0])

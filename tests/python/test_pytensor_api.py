"""PyTensor's op-author API: the names and behaviours op authors use."""

from __future__ import annotations

import numpy as np
import pytest
from support.api_ops import Plus

import opweave
import opweave.scalar as ps
from opweave.compile.function import function
from opweave.errors import MissingGXX, OpweaveError
from opweave.graph.basic import Apply
from opweave.graph.type import Type
from opweave.graph.utils import MethodNotDefined
from opweave.link.c.op import COp
from opweave.link.c.type import EnumList, Generic
from opweave.tensor import dvector
from opweave.tensor import type as tensor_type


def test_as_scalar() -> None:
    i = ps.int32("i")
    assert ps.as_scalar(i) is i
    three = ps.as_scalar(3)
    assert three.type == ps.int64 and three.data == 3
    assert ps.as_scalar(np.float32(1.5)).type == ps.float32
    with pytest.raises(TypeError, match="not a ScalarType"):
        ps.as_scalar(dvector("v"))
    with pytest.raises(TypeError, match="cannot make a scalar"):
        ps.as_scalar([1, 2])


def test_dtype_lists() -> None:
    assert tensor_type.int_dtypes == ["int8", "int16", "int32", "int64"]
    assert tensor_type.uint_dtypes == ["uint8", "uint16", "uint32", "uint64"]
    assert tensor_type.float_dtypes == ["float16", "float32", "float64"]
    assert tensor_type.complex_dtypes == ["complex64", "complex128"]
    assert tensor_type.continuous_dtypes == [*tensor_type.float_dtypes, "complex64", "complex128"]
    assert tensor_type.discrete_dtypes == [
        "bool",
        *tensor_type.int_dtypes,
        *tensor_type.uint_dtypes,
    ]
    assert sorted(tensor_type.all_dtypes) == sorted(
        tensor_type.discrete_dtypes + tensor_type.continuous_dtypes
    )


def test_plural_constructors() -> None:
    from opweave.tensor import dvectors, fmatrices, matrices, scalars

    x, y = dvectors("x", "y")
    assert (x.name, y.name, x.type) == ("x", "y", tensor_type.dvector)
    assert dvectors("x").name == "x"  # one name: one variable
    assert [v.name for v in fmatrices("ab")] == ["a", "b"]
    assert [v.name for v in matrices(3)] == [None, None, None]
    assert scalars("s").type.ndim == 0
    assert tensor_type.dvectors is dvectors  # also where PyTensor defines them
    with pytest.raises(TypeError, match="names must be strings"):
        dvectors("x", 2)


def test_type_relations() -> None:
    exact = tensor_type.TensorType("float64", shape=(3,))
    loose = tensor_type.TensorType("float64", shape=(None,))
    assert loose.is_super(exact) and not exact.is_super(loose)
    v = exact("v")
    assert loose.convert_variable(v) is v and exact.convert_variable(loose()) is None
    assert exact.clone(shape=(None,)) == loose
    generic = Generic()
    assert generic.in_same_class(Generic()) and generic.is_super(Generic())
    assert generic.convert_variable(dvector("x")) is None

    class Tagged(Type):
        def __init__(self, tag: str) -> None:
            self.tag_name = tag

        def __eq__(self, other: object) -> bool:
            return type(other) is Tagged and other.tag_name == self.tag_name

        def __hash__(self) -> int:
            return hash(self.tag_name)

    assert Tagged("a").clone(tag_name="b") == Tagged("b")
    with pytest.raises(TypeError, match="no attribute"):
        Tagged("a").clone(size=2)


def test_c_extract_out_initialises_none_and_extracts_the_rest() -> None:
    code = Generic().c_extract_out("V1", {"fail": "goto fail;"})
    assert code.startswith("if (py_V1 == Py_None) {\nV1 = NULL;")
    assert "Py_INCREF(py_V1);\nV1 = py_V1;" in code.split("else", 1)[1]


def test_exceptions_module() -> None:
    from opweave.link.c import exceptions

    assert exceptions.CompileError is opweave.CompileError
    assert issubclass(exceptions.MissingGXX, OpweaveError)
    x = dvector("x")
    with (
        opweave.config.change_flags(cxx=""),
        pytest.raises(MissingGXX, match="no C\\+\\+ compiler"),
    ):
        function([x], Plus()(x, x), mode="C")


def test_configdefaults_and_the_default_mode() -> None:
    from opweave.configdefaults import config

    assert config is opweave.config and config.mode == "FAST_RUN"
    x = dvector("x")
    with config.change_flags(mode="py"):
        f = function([x], Plus(wrong=True)(x, x))
    np.testing.assert_array_equal(f(np.ones(1)), [3.0])  # perform ran
    with pytest.raises(ValueError, match="unknown mode"):
        config.mode = "FASTEST"


def test_cmodule_debug_defines_debug_and_enum_names() -> None:
    class WhichBuild(COp):
        __props__ = ("choice",)
        params_type = EnumList("FIRST", "SECOND")

        def __init__(self, choice: int) -> None:
            self.choice = choice

        def get_params(self, node):
            return self.choice

        def make_node(self):
            return Apply(self, [], [Generic()()])

        def c_code(self, node, name, inp, out, sub):
            (z,) = out
            return f"""
            #ifdef DEBUG
            char text[32];
            if (opweave_enum_to_string_int({sub["params"]}, text) != 0) {{ {sub["fail"]} }}
            {z} = PyUnicode_FromString(text);
            #else
            {z} = PyUnicode_FromString("release");
            #endif
            """

    assert function([], WhichBuild(1)())() == "release"
    with opweave.config.change_flags(cmodule__debug=True):
        assert function([], WhichBuild(1)())() == "SECOND"
        assert function([], WhichBuild(0)())() == "FIRST"


def test_make_thunk_runs_c_or_perform_and_fills_the_maps() -> None:
    x, y = dvector("x"), dvector("y")
    node = Plus(wrong=True)(x, y).owner  # perform adds one more than C
    out = node.outputs[0]

    def thunk_result(impl: str | None) -> list[float]:
        storage = {x: [np.ones(1)], y: [np.ones(1)], out: [None]}
        computed = {x: [True], y: [True], out: [False]}
        thunk = node.op.make_thunk(node, storage, computed, [], impl=impl)
        assert thunk() is None and computed[out][0]
        return storage[out][0].tolist()

    assert thunk_result(None) == [2.0] and thunk_result("c") == [2.0]
    assert thunk_result("py") == [3.0]


def test_make_thunk_without_c_code_or_perform() -> None:
    class OnlyPython(COp):
        __props__ = ()

        def make_node(self, v):
            return Apply(self, [v], [v.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = inputs[0] * 3

    class Nothing(COp):
        __props__ = ()

        def make_node(self, v):
            return Apply(self, [v], [v.type()])

    x = dvector("x")
    for op, impl, expected in ((OnlyPython(), None, [3.0]), (OnlyPython(), "py", [3.0])):
        node = op(x).owner
        storage = {x: [np.ones(1)], node.outputs[0]: [None]}
        op.make_thunk(node, storage, {node.outputs[0]: [False]}, [], impl=impl)()
        assert storage[node.outputs[0]][0].tolist() == expected
    node = OnlyPython()(x).owner
    with pytest.raises(MethodNotDefined, match="no C code"):
        node.op.make_thunk(node, {x: [None], node.outputs[0]: [None]}, {}, [], impl="c")
    node = Nothing()(x).owner
    with pytest.raises(MethodNotDefined, match="no perform"):
        node.op.make_thunk(node, {x: [None], node.outputs[0]: [None]}, {}, [])


def test_perform_gets_params_when_it_takes_them() -> None:
    class Scaled(COp):
        __props__ = ("factor",)
        params_type = Generic()

        def __init__(self, factor: float) -> None:
            self.factor = factor

        def get_params(self, node):
            return self.factor

        def make_node(self, v):
            return Apply(self, [v], [v.type()])

        def perform(self, node, inputs, outputs, factor):
            outputs[0][0] = inputs[0] * factor

    x = dvector("x")
    np.testing.assert_array_equal(function([x], Scaled(4.0)(x), mode="py")(np.ones(1)), [4.0])

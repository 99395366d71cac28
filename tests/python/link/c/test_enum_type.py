"""EnumType, EnumList and CEnumType: validation, aliases, filtering, their C
code, and ops that use them as params in compiled functions."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import numpy as np
import pytest
from support.helpers import compiled_modules

import opweave
from opweave.errors import CompileError
from opweave.graph.basic import Apply
from opweave.link.c.enum_type import CEnumType, EnumList, EnumType
from opweave.link.c.op import COp
from opweave.scalar.basic import float64, int32, uint32

DATA = Path(__file__).resolve().parents[2] / "support" / "data"
MODES = ["C", "CVM"]


# --- validation --------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "_A", "0", "A-B", "Ab"])
def test_constant_names_must_be_upper_case_identifiers(name: str) -> None:
    with pytest.raises(AttributeError, match="invalid constant name"):
        EnumList("GOOD", name)
    with pytest.raises(AttributeError, match="invalid constant name"):
        EnumType(**{"GOOD": 1, name: 2})


def test_values_must_be_numbers_that_fit_the_ctype() -> None:
    with pytest.raises(TypeError, match="must be an int or a float"):
        EnumType(A=1, B="two")
    with pytest.raises(TypeError, match="holds integers"):
        EnumType(A=1.5, ctype="int")
    with pytest.raises(ValueError, match=r"does not fit ctype 'unsigned char'"):
        EnumType(A=256, ctype="unsigned char")
    with pytest.raises(ValueError, match="does not fit"):
        EnumType(A=-1, ctype="size_t")
    with pytest.raises(ValueError, match="finite"):
        EnumType(A=float("nan"))
    with pytest.raises(ValueError, match="unsupported ctype 'complex'"):
        EnumType(A=1, ctype="complex")
    with pytest.raises(ValueError, match="cname must be a C identifier"):
        EnumType(A=1, cname="my enum")
    with pytest.raises(ValueError, match="at least one constant"):
        EnumType()
    assert EnumType(A=255, B=0, ctype="unsigned char") == EnumType(
        A=255, B=0, ctype="unsigned char"
    )


def test_bools_become_ints_and_equal_enums_hash_alike() -> None:
    with_bools = EnumType(C1=True, C2=(("c2", False)), C3=5, ctype="int")
    with_ints = EnumType(C1=1, C2=("c2", 0), C3=5, ctype="int")
    assert with_bools == with_ints and hash(with_bools) == hash(with_ints)
    assert type(with_bools["C1"]) is int and with_bools.C2 == 0
    # Anything else that shapes the C code makes them differ.
    assert with_ints != EnumType(C1=1, C2=0, C3=5, ctype="int")  # no alias
    assert with_ints != EnumType(C1=1, C2=("c2", 0), C3=5, ctype="long")
    assert with_ints != EnumType(C1=1, C2=("c2", 0), C3=5, ctype="int", cname="other")
    assert EnumList("A", "B") != EnumType(A=0, B=1, ctype="int")
    # Values compare as numbers, as in PyTensor, and equal enums write one C text.
    mixed = EnumType(C1=True, C2=12, C3=True, C4=-1, C5=False, C6=0.0)
    plain = EnumType(C1=1, C2=12, C3=1, C4=-1.0, C5=0.0, C6=0)
    assert mixed == plain and not (mixed != plain) and hash(mixed) == hash(plain)
    assert mixed.c_support_code() == plain.c_support_code()
    assert EnumType(A=1) == EnumType(A=1.0) and EnumType(A=1.5) != EnumType(A=1)
    assert EnumType(A=2.0, ctype="int").A == 2  # an integral float fits an int ctype
    assert EnumList("A", "B") != EnumType(A=0, B=1, ctype="int")


def test_aliases_filter_and_fromalias() -> None:
    enum = EnumType(A=("alpha", 0), B=("beta", 1), C=2, ctype="int")
    assert enum.filter("beta") == enum.fromalias("beta") == enum.B == 1
    assert enum.fromalias("C") == 2  # a constant name when no alias matches
    assert enum.filter("C") == 2
    assert enum.has_alias("alpha") and not enum.has_alias("C")
    assert enum.get_aliases() == ("alpha", "beta")
    assert enum.alias_of("B") == "beta" and enum.alias_of("C") is None
    with pytest.raises(KeyError, match="gamma"):
        enum.fromalias("gamma")
    with pytest.raises(TypeError, match="gamma"):
        enum.filter("gamma")
    with pytest.raises(TypeError, match="got 'beta'"):
        enum.filter("beta", strict=True)
    with pytest.raises(TypeError, match="got 7"):
        enum.filter(7)
    assert enum.filter(np.int64(1)) == 1 and type(enum.filter(np.int64(1))) is int
    assert enum.filter(True) == 1
    assert enum.values_eq("beta", 1) and not enum.values_eq("alpha", 1)


def test_aliases_must_be_unique_and_differ_from_constant_names() -> None:
    with pytest.raises(TypeError, match="alias 'B' of A is also a constant name"):
        EnumType(A=("B", 0), B=1)
    with pytest.raises(TypeError, match="used by both A and B"):
        EnumType(A=("x", 0), B=("x", 1))
    with pytest.raises(TypeError, match="non-empty string alias"):
        EnumType(A=(3, 0))


def test_enum_is_immutable_and_pickles() -> None:
    enum = EnumList(("ADD", "+"), "SUB", ctype="unsigned long long")
    with pytest.raises(TypeError, match="immutable"):
        enum["MUL"] = 2  # type: ignore[index]
    with pytest.raises(TypeError, match="immutable"):
        enum.ADD = 3
    with pytest.raises(AttributeError, match="MUL"):
        _ = enum.MUL
    for value in (enum, EnumType(X=("ex", 1.5), Y=2), CEnumType("MILLION", ("BILLION", "b"))):
        copy = pickle.loads(pickle.dumps(value))
        assert copy == value and type(copy) is type(value) and copy.aliases == value.aliases


def test_enum_list_values_are_positions() -> None:
    enum = EnumList("ZERO", ("ONE", "one"), "TWO")
    assert dict(enum) == {"ZERO": 0, "ONE": 1, "TWO": 2} and enum.ctype == "int"
    assert str(enum) == "EnumList<int>(ZERO=0, ONE=('one', 1), TWO=2)"
    with pytest.raises(ValueError, match="ONE is given twice"):
        EnumList("ONE", "ONE")
    with pytest.raises(TypeError, match="a name or"):
        EnumList(("ONE", "one", "uno"))


# --- C code -------------------------------------------------------------------


def test_support_code_defines_every_constant_in_name_order() -> None:
    huge = EnumType(TOP=2**64 - 1, ctype="unsigned long long")
    assert "#define TOP 18446744073709551615ULL\n" in huge.c_support_code()
    with pytest.raises(ValueError, match="does not fit"):
        EnumType(NEG=-3, ctype="unsigned long long")
    enum = EnumType(ZED=-3, ALPHA=("a", 7), MID=2**40, ctype="long long")
    lines = enum.c_support_code().splitlines()
    defines = [line for line in lines if line.startswith("#define")]
    assert defines == ["#define ALPHA 7", "#define MID 1099511627776", "#define ZED (-3)"]
    assert "#ifndef MID" in lines and "static_assert(MID == 1099511627776" in "\n".join(lines)
    half = EnumType(HALF=0.5, TWO=2.0, MINUS=-1.25)
    assert "#define HALF 0.5\n" in half.c_support_code()
    assert "#define MINUS (-1.25)\n" in half.c_support_code()
    assert CEnumType("MILLION", "BILLION").c_support_code() == ""


def test_c_declaration_and_version() -> None:
    enum = EnumList("A", "B", ctype="size_t")
    assert enum.c_declare("V1", {}) == "size_t V1;\n"
    assert enum.c_init("V1", {}) == "V1 = (size_t)0;\n"
    assert enum.c_code_cache_version() == EnumList("A", "B", ctype="size_t").c_code_cache_version()
    assert enum.c_code_cache_version() != EnumList("A", "C", ctype="size_t").c_code_cache_version()
    assert CEnumType("A", "B").c_code_cache_version() != EnumList("A", "B").c_code_cache_version()
    with pytest.raises(NotImplementedError, match="cannot be the type of an op's output"):
        enum.c_sync("V1", {"fail": ""})


def test_enum_types_are_importable_from_link_c_type() -> None:
    from opweave.link.c import type as c_type

    assert c_type.EnumType is EnumType and c_type.EnumList is EnumList
    assert c_type.CEnumType is CEnumType
    assert {"EnumType", "EnumList", "CEnumType"} <= set(c_type.__all__)


# --- ops with enum params -------------------------------------------------------------


class Arithmetic(COp):
    """z = a <op> b for int32 scalars; the operation is an EnumList param."""

    __props__ = ("operation",)
    params_type = EnumList(
        ("ADD", "+"), ("SUB", "-"), ("MULTIPLY", "*"), ("DIVIDE", "/"), ctype="unsigned long long"
    )

    def __init__(self, operation: str) -> None:
        self.operation = operation

    def get_params(self, node):
        return self.operation  # an alias: filter turns it into the value

    def make_node(self, a, b):
        return Apply(self, [a, b], [int32()])

    def c_code(self, node, name, inputs, outputs, sub):
        (a, b), (z,) = inputs, outputs
        return f"""
        switch ({sub["params"]}) {{
            case ADD: {z} = {a} + {b}; break;
            case SUB: {z} = {a} - {b}; break;
            case MULTIPLY: {z} = {a} * {b}; break;
            case DIVIDE: {z} = {a} / {b}; break;
            default:
                PyErr_SetString(PyExc_ValueError, "unknown operation");
                {sub["fail"]}
        }}
        """


@pytest.mark.parametrize("mode", MODES)
def test_op_with_enumlist(mode: str) -> None:
    a, b = int32("a"), int32("b")
    outputs = [Arithmetic(symbol)(a, b) for symbol in "+-*/"]
    f = opweave.function([a, b], outputs, mode=mode)
    assert f(np.int32(12), np.int32(15)) == [27, -3, 180, 0]  # C integer division
    assert f(np.int32(-7), np.int32(2)) == [-5, -9, -14, -3]


def test_default_get_params_asks_to_override_it_for_an_enum() -> None:
    class NoOverride(COp):
        params_type = EnumList("A")

    with pytest.raises(NotImplementedError, match="override get_params"):
        NoOverride().get_params(None)


class Scale(COp):
    """z = x * factor, the factor an EnumType of doubles."""

    __props__ = ("factor",)
    params_type = EnumType(HALF=("half", 0.5), DOUBLE=("double", 2.0), cname="scale_factor")

    def __init__(self, factor: str) -> None:
        self.factor = factor

    def get_params(self, node):
        return self.factor

    def make_node(self, x):
        return Apply(self, [x], [float64()])

    def c_code(self, node, name, inputs, outputs, sub):
        params = sub["params"]
        return f"""
        if ({params} != HALF && {params} != DOUBLE) {{
            PyErr_SetString(PyExc_ValueError, "not a constant");
            {sub["fail"]}
        }}
        {outputs[0]} = {inputs[0]} * {params};
        """


def test_op_with_double_enum_and_the_shared_module() -> None:
    x = float64("x")
    half = opweave.function([x], Scale("half")(x))
    double = opweave.function([x], Scale("double")(x))
    assert (half(3.0), double(3.0)) == (1.5, 6.0)
    # The factor is data, not code: both functions run one module.
    assert (half.cache_outcome, double.cache_outcome) == ("built", "hit")
    assert len(compiled_modules()) == 1


class Decide(COp):
    """z = x + mode, where mode is a graph input of an EnumType."""

    __props__ = ()

    def make_node(self, x, mode):
        return Apply(self, [x, mode], [float64()])

    def c_code(self, node, name, inputs, outputs, sub):
        (x, mode), (z,) = inputs, outputs
        return f"{z} = {x} + (double){mode};"


def test_enum_as_a_graph_input_takes_values_and_aliases() -> None:
    mode_type = EnumType(LOW=("low", 1), HIGH=("high", 100), ctype="int")
    x, mode = float64("x"), mode_type("mode")
    f = opweave.function([x, mode], Decide()(x, mode))
    assert f(0.5, 1) == 1.5
    assert f(0.5, "high") == 100.5  # C rejects the string, filter converts it
    assert f(0.5, "HIGH") == 100.5
    with pytest.raises(TypeError, match="got 7"):
        f(0.5, 7)


def test_enum_extraction_errors_in_c() -> None:
    mode_type = EnumType(LOW=("low", 1), HIGH=("high", 100), ctype="int")
    x, mode = float64("x"), mode_type("mode")
    f = opweave.function([x, mode], Decide()(x, mode), trust_input=True)
    x_value = np.float64(0.5)
    assert f(x_value, 100) == 100.5
    with pytest.raises(ValueError, match="7 is not the value of one of its constants"):
        f(x_value, 7)
    with pytest.raises(TypeError, match="expected an int, got str"):
        f(x_value, "high")


class Big(COp):
    """z = the C constant of a CEnumType param (from tests/python/support/data/test_cenum.h)."""

    __props__ = ("which",)
    params_type = CEnumType(
        ("MILLION", "million"),
        ("BILLION", "billion"),
        ("TWO_BILLIONS", "two billions"),
        ctype="size_t",
    )

    def __init__(self, which: str) -> None:
        self.which = which

    def get_params(self, node):
        return self.which

    def make_node(self, x):
        return Apply(self, [x], [uint32()])

    def c_headers(self, **kwargs):
        return ["test_cenum.h"]

    def c_header_dirs(self, **kwargs):
        return [str(DATA)]

    def c_code(self, node, name, inputs, outputs, sub):
        return f"{outputs[0]} = (npy_uint32)({sub['params']} + {inputs[0]});"


@pytest.mark.parametrize("mode", MODES)
def test_op_with_cenumtype(mode: str) -> None:
    x = uint32("x")
    names = ("million", "billion", "two billions")
    f = opweave.function([x], [Big(name)(x) for name in names], mode=mode)
    assert f(np.uint32(0)) == [1_000_000, 1_000_000_000, 2_000_000_000]
    assert f(np.uint32(7)) == [1_000_007, 1_000_000_007, 2_000_000_007]
    # The Python value is the index; C holds the header's constant.
    assert Big.params_type.filter("billion") == 1


@pytest.mark.parametrize("mode", ["c", "c|py", "py"])
def test_two_enums_with_one_name_for_two_values_do_not_compile_silently(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    class Pick(COp):
        __props__ = ("order",)

        def __init__(self, order):
            self.order = order
            self.params_type = EnumList(*order)

        def get_params(self, node):
            return "ADD"

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            params = self.params_type.filter(self.get_params(node))
            outputs[0][0] = inputs[0] + (1 if params == self.params_type.ADD else -1)

        def c_code(self, node, name, inp, out, sub):
            (x,), (z,) = inp, out
            return f"{z} = {x} + (({sub['params']} == ADD) ? 1 : -1);"

    x = int32("x")
    graph = [Pick(("ADD", "SUB"))(x), Pick(("SUB", "ADD"))(x)]
    if mode == "c":
        # Both #define ADD, as 0 and as 1: the compile stops with a clear message
        # instead of letting one definition win for both nodes.
        with pytest.raises(CompileError, match="enum constant ADD has two different values"):
            opweave.function([x], graph, mode=mode)
    else:
        with caplog.at_level(logging.INFO, logger="opweave.link.c._regions"):
            assert opweave.function([x], graph, mode=mode)(np.int32(5)) == [6, 6]
        # c|py compiles each node on its own, and says why.
        split = [r.getMessage() for r in caplog.records if "split in two" in r.getMessage()]
        assert len(split) == (1 if mode == "c|py" else 0), split
        assert not split or "enum constant ADD has two different values" in split[0]


def test_enum_names_the_generated_module_uses_are_refused() -> None:
    for name in ("V1", "NPY_FLOAT64", "OPWEAVE_X", "PY_SSIZE_T_CLEAN"):
        with pytest.raises(AttributeError, match="taken in generated modules"):
            EnumList(name)
    assert CEnumType("NPY_FLOAT64").NPY_FLOAT64 == 0  # a header's constant: fine

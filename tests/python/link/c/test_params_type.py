"""ParamsType and Params: validation, equality and hashing, filtering, enums
inside, the C struct, the default get_params, and ops reading their params in
compiled functions."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

from opweave.graph.utils import MethodNotDefined
from opweave.link.c.enum_type import EnumList, EnumType
from opweave.link.c.op import COp
from opweave.link.c.params_type import Params, ParamsType
from opweave.link.c.type import CType, generic
from opweave.scalar.basic import float32, float64, int32, int64
from opweave.tensor.type import TensorType


def scalar_tensor() -> TensorType:
    return TensorType("float64", shape=())


def quadratic_type() -> ParamsType:
    return ParamsType(a=scalar_tensor(), b=float64, c=generic)


# --- validation --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("1a", "not a C identifier"),
        ("a-b", "not a C identifier"),
        ("int", "keyword"),
        ("class", "keyword"),
        ("this", "keyword"),
        ("NULL", "keyword"),
        ("extract", "reserved"),
        ("opweave_x", "reserved"),
        ("params_type", "reserved"),
    ],
)
def test_field_names_must_be_usable_in_the_struct(name: str, why: str) -> None:
    with pytest.raises(AttributeError, match=why):
        ParamsType(**{"ok": float64, name: float64})


def test_fields_are_sorted_and_must_be_c_types() -> None:
    params_type = ParamsType(zeta=int32, alpha=generic, mid=float64)
    assert params_type.fields == ("alpha", "mid", "zeta")
    assert params_type.types == (generic, float64, int32)
    assert params_type.length == 3
    with pytest.raises(TypeError, match="field 'x' must be a CType instance, got int"):
        ParamsType(x=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one field"):
        ParamsType()


def test_lookups_and_extended() -> None:
    params_type = ParamsType(a=int32, b=float64, c=float64)
    assert params_type.has_type(float64) and not params_type.has_type(int64)
    assert params_type.get_type("a") is int32
    assert params_type.get_field(float64) == "b"  # the first field of that type
    with pytest.raises(KeyError, match="no field 'z'"):
        params_type.get_type("z")
    with pytest.raises(KeyError, match="no field of type int64"):
        params_type.get_field(int64)
    bigger = params_type.extended(d=generic)
    assert bigger.fields == ("a", "b", "c", "d") and bigger == ParamsType(
        a=int32, b=float64, c=float64, d=generic
    )
    with pytest.raises(TypeError, match="already has the fields b"):
        params_type.extended(b=int32)


# --- equality and hashing ----------------------------------------------------------


def test_hash_and_eq_params_type() -> None:
    def make(shape: tuple[Any, ...] = (None, 1), name: str = "a") -> ParamsType:
        return ParamsType(**{name: TensorType("float64", shape=shape)}, b=float64, c=generic)

    base = make()
    assert base == make() and hash(base) == hash(make()) and base.name == make().name
    for other in (make(shape=(None, None)), make(shape=(1, 1)), make(name="a2")):
        assert base != other
        assert base.name != other.name
    assert base != ParamsType(a=TensorType("float32", (None, 1)), b=float64, c=generic)
    assert base.name.startswith("OpweaveParams_")


@pytest.mark.slow
def test_name_and_version_do_not_depend_on_the_hash_seed() -> None:
    script = textwrap.dedent(
        """
        from opweave.link.c.enum_type import EnumList
        from opweave.link.c.params_type import ParamsType
        from opweave.link.c.type import generic
        from opweave.scalar.basic import float64
        from opweave.tensor.type import TensorType
        t = ParamsType(a=TensorType("float64", shape=()), b=float64, c=generic,
                       m=EnumList(("ADD", "+"), "SUB"))
        print(t.name, t.c_code_cache_version(), hash(t.get_params(a=1, b=2, c=3, m=0)) != 0)
        """
    )
    outputs = set()
    for seed in ("428", "3849"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
        )
        assert result.returncode == 0, result.stderr
        outputs.add(result.stdout)
    assert len(outputs) == 1 and "OpweaveParams_" in outputs.pop()


def test_hash_and_eq_params() -> None:
    params_type = ParamsType(a=TensorType("int64", shape=(None, None)), b=float64, c=generic)
    matrix = np.arange(12, dtype="int64").reshape(3, 4)

    def make(matrix: np.ndarray = matrix, c: Any = "x", params_type: ParamsType = params_type):
        return Params(params_type, **{params_type.fields[0]: matrix, "b": 1.5, "c": c})

    first = make()
    assert first == make(matrix.copy()) and hash(first) == hash(make(matrix.copy()))
    changed = matrix.copy()
    changed[2, 3] = -1
    assert first != make(changed) and hash(first) != hash(make(changed))
    assert first != make(c="y")
    other_type = ParamsType(a2=TensorType("int64", shape=(None, None)), b=float64, c=generic)
    assert first != make(params_type=other_type)
    assert first != {"a": matrix, "b": 1.5, "c": "x"}  # a plain dict is not a Params
    assert not first.__ne__(make())


def test_equal_params_hash_alike() -> None:
    params_type = ParamsType(s=float64, t=TensorType("float64", shape=(None,)))
    zero = Params(params_type, s=np.float64(0.0), t=np.array([0.0, np.nan]))
    negative_zero = Params(params_type, s=np.float64(-0.0), t=np.array([-0.0, np.nan]))
    assert zero == negative_zero and hash(zero) == hash(negative_zero)
    as_int = Params(ParamsType(s=float64, t=generic), s=5, t=[1])  # an unhashable value
    as_float = Params(ParamsType(s=float64, t=generic), s=5.0, t=[1])
    assert as_int == as_float and hash(as_int) == hash(as_float)


def test_params_need_every_field_and_are_immutable() -> None:
    params_type = quadratic_type()
    with pytest.raises(TypeError, match="missing b, c"):
        Params(params_type, a=np.array(1.0))
    with pytest.raises(TypeError, match="unknown d"):
        Params(params_type, a=np.array(1.0), b=2.0, c=3, d=4)
    with pytest.raises(TypeError, match="needs a ParamsType"):
        Params({"a": float64}, a=1)  # type: ignore[arg-type]
    params = Params(params_type, a=np.array(1.0), b=2.0, c=3)
    assert params.b == params["b"] == 2.0 and params.params_type is params_type
    assert list(params) == ["a", "b", "c"]
    with pytest.raises(TypeError, match="immutable"):
        params["b"] = 3.0
    with pytest.raises(TypeError, match="immutable"):
        params.b = 3.0
    with pytest.raises(TypeError, match="immutable"):
        params.update(b=3.0)
    with pytest.raises(AttributeError, match="no field 'z'"):
        _ = params.z
    copy = pickle.loads(pickle.dumps(params))
    assert copy == params and copy.params_type == params_type


# --- values ----------------------------------------------------------------------


def test_params_type_filtering() -> None:
    params_type = ParamsType(a=TensorType("int32", shape=(None,)), b=float32, c=generic)
    wide = Params(params_type, a=np.array([1, 2], dtype="int64"), b=np.float32(1.0), c=None)
    double = Params(params_type, a=np.array([1, 2], dtype="int32"), b=np.float64(0.1), c=None)
    for params in (wide, double):
        with pytest.raises(TypeError, match=r"field '[ab]'"):
            params_type.filter(params, strict=True)
        with pytest.raises(TypeError, match=r"field '[ab]'"):
            params_type.filter(params, allow_downcast=False)
    filtered = params_type.filter(wide, allow_downcast=True)
    assert filtered.a.dtype == np.int32 and filtered == params_type.filter(filtered, strict=True)
    assert params_type.filter(filtered) is filtered  # nothing to convert: the same object
    assert params_type.values_eq(filtered, params_type.get_params(a=[1, 2], b=1.0, c=None))
    near = Params(params_type, a=[1, 2], b=np.float32(1.0000001), c=None)
    assert params_type.values_eq_approx(filtered, near)
    assert not params_type.values_eq(filtered, Params(params_type, a=[1, 3], b=1.0, c=None))


def test_filter_accepts_mappings_and_objects() -> None:
    params_type = ParamsType(n=int64, label=generic)

    class Holder:
        n = 3
        label = "three"

    from_object = params_type.filter(Holder())
    from_dict = params_type.filter({"n": 3, "label": "three"})
    assert isinstance(from_object, Params) and from_object == from_dict
    assert type(from_dict.n) is np.int64
    with pytest.raises(TypeError, match="missing n"):
        params_type.filter({"label": "x"})
    with pytest.raises(TypeError, match="unknown extra"):
        params_type.filter({"n": 1, "label": "x", "extra": 0})
    with pytest.raises(TypeError, match=r"\(strict\) expects a Params, got dict"):
        params_type.filter({"n": 3, "label": "three"}, strict=True)


def test_get_params_from_objects_and_keywords() -> None:
    params_type = ParamsType(n=int64, x=float64)

    class First:
        n, x = 1, 1.5

    class Second:
        x = 2.5

    params = params_type.get_params(First(), Second())
    assert (params.n, params.x) == (1, 2.5) and type(params.x) is np.float64
    assert params_type.get_params(First(), Second(), n=7).n == 7  # keywords win
    assert params_type.get_params(n=1.0, x=2).n == 1  # downcasts allowed
    with pytest.raises(AttributeError, match="no value for the fields x"):
        params_type.get_params(n=1)
    with pytest.raises(TypeError, match="no fields y"):
        params_type.get_params(n=1, x=1.0, y=2)


def test_params_type_with_enums() -> None:
    with pytest.raises(AttributeError, match="constant A of field 'two'"):
        ParamsType(one=EnumList("A", "B"), two=EnumList("C", "A"))
    with pytest.raises(AttributeError, match="alias 'B' of field 'two'"):
        ParamsType(one=EnumList("A", "B"), two=EnumList(("C", "B")))
    wrapper = ParamsType(
        one=EnumList("A", ("B", "beta"), "C"),
        two=EnumType(D=10, E=("eps", 20), ctype="int"),
        scale=float64,
    )
    assert (wrapper.A, wrapper.B, wrapper.C, wrapper.D, wrapper.E) == (0, 1, 2, 10, 20)
    assert wrapper.get_enum("D") == 10
    assert wrapper.enum_from_alias("beta") == 1 and wrapper.enum_from_alias("eps") == 20
    assert wrapper.enum_from_alias("C") == 2  # a constant name when no alias matches
    with pytest.raises(AttributeError, match="no enum constant 'Z'"):
        wrapper.get_enum("Z")
    with pytest.raises(AttributeError, match="'gamma'"):
        wrapper.enum_from_alias("gamma")
    with pytest.raises(AttributeError, match="'Z'"):
        _ = wrapper.Z
    assert wrapper.fields == ("one", "scale", "two") and wrapper.length == 3
    params = wrapper.get_params(one="beta", two="eps", scale=1)
    assert (params.one, params.two) == (1, 20)


# --- C code ------------------------------------------------------------------------


class Flags(CType):
    """A CType with every collector hook, to see them concatenated."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Flags) and other.tag == self.tag

    def __hash__(self) -> int:
        return hash(self.tag)

    def c_headers(self, **kwargs: Any) -> list[str]:
        return ["<math.h>", f"<{self.tag}.h>"]

    def c_header_dirs(self, **kwargs: Any) -> list[str]:
        return [f"/inc/{self.tag}"]

    def c_libraries(self, **kwargs: Any) -> list[str]:
        return [self.tag]

    def c_lib_dirs(self, **kwargs: Any) -> list[str]:
        return [f"/lib/{self.tag}"]

    def c_compile_args(self, **kwargs: Any) -> list[str]:
        return [f"-D{self.tag.upper()}"]

    def c_no_compile_args(self, c_compiler: Any = None) -> list[str]:
        return [f"-fno-{self.tag}"]

    def c_init_code(self) -> list[str]:
        return ["init_shared();", f"init_{self.tag}();"]

    def c_support_code(self, **kwargs: Any) -> str:
        return f"/* support {self.tag} */"


def test_collectors_concatenate_the_field_types() -> None:
    params_type = ParamsType(p=Flags("zlib"), q=Flags("png"))
    # In field order (p, then q), each item once.
    assert params_type.c_headers(c_compiler=None) == ["<math.h>", "<zlib.h>", "<png.h>", "<new>"]
    assert params_type.c_header_dirs() == ["/inc/zlib", "/inc/png"]
    assert params_type.c_libraries() == ["zlib", "png"]
    assert params_type.c_lib_dirs() == ["/lib/zlib", "/lib/png"]
    assert params_type.c_compile_args() == ["-DZLIB", "-DPNG"]
    assert params_type.c_no_compile_args(c_compiler=None) == ["-fno-zlib", "-fno-png"]
    assert params_type.c_init_code(c_compiler=None) == [
        "init_shared();",
        "init_zlib();",
        "init_png();",
    ]


def test_support_code_is_the_fields_then_the_struct() -> None:
    params_type = ParamsType(
        m=EnumList("ADD", "SUB"), k=EnumList("ADD", "SUB").__class__("MUL"), x=float64
    )
    support = params_type.c_support_code()
    assert support[:2] == sorted(support[:2]) and "#define ADD 0" in support[0] + support[1]
    struct = support[-1]
    name = params_type.name
    assert f"struct {name} {{" in struct and f"#ifndef OPWEAVE_PARAMS_{name.upper()}" in struct
    for field in params_type.fields:
        assert f"void opweave_extract_{field}(PyObject* py_{field})" in struct
    assert "npy_float64 x;" in struct and "int m;" in struct
    duplicated = ParamsType(p=EnumList("ADD"), q=float64, r=float64)
    assert len([s for s in duplicated.c_support_code() if "#define ADD" in s]) == 1


def test_variable_code() -> None:
    params_type = quadratic_type()
    name = params_type.name
    assert params_type.c_declare("V4", {}) == f"{name}* V4;\n"
    assert params_type.c_init("V4", {}) == "V4 = NULL;\n"
    assert params_type.c_cleanup("V4", {}) == "delete V4;\nV4 = NULL;\n"
    extract = params_type.c_extract("V4", {"fail": "FAIL(4)"})
    assert f"V4 = new (std::nothrow) {name};" in extract
    assert [f'PyDict_GetItemString(py_V4, "{f}")' in extract for f in "abc"] == [True] * 3
    with pytest.raises(NotImplementedError, match="cannot be the output"):
        params_type.c_sync("V4", {"fail": ""})
    assert params_type.c_code_cache_version() == quadratic_type().c_code_cache_version()
    assert params_type.c_code_cache_version() != ParamsType(a=float64).c_code_cache_version()


# --- the default get_params ----------------------------------------------------------


def test_default_get_params_reads_the_op_attributes() -> None:
    class WithParams(COp):
        params_type = ParamsType(n=int64, x=float64)
        n, x = 4, 0.25

    params = WithParams().get_params(None)
    assert isinstance(params, Params) and (params.n, params.x) == (4, 0.25)

    class Missing(COp):
        params_type = ParamsType(n=int64, x=float64, y=generic)
        x = 1.0

    with pytest.raises(AttributeError, match=r"missing attributes \(n, y\) for ParamsType"):
        Missing().get_params(None)
    with pytest.raises(MethodNotDefined, match="params_type is None"):
        COp().get_params(None)


def test_the_default_get_params_asks_the_params_type_for_the_value() -> None:
    """Any params type that can make a value from an op (``params_of``) is
    served by the default get_params; one that cannot names the fix."""

    class Scale(COp):
        params_type = generic
        scale = 3

    with pytest.raises(MethodNotDefined, match=r"override get_params\(node\)"):
        Scale().get_params(None)

    class FromOp(type(generic)):  # type: ignore[misc]
        def params_of(self, op: object) -> object:
            return ("made from", type(op).__name__)

    class Custom(COp):
        params_type = FromOp()

    assert Custom().get_params(None) == ("made from", "Custom")


# --- ops with params in compiled functions ------------------------------------------

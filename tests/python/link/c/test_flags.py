"""Compile flags as groups (link/c/_flags.py): an option that takes its
argument as the next word is de-duplicated and removed with it, in the
compile job of a real graph and in the module's compiler command."""

from __future__ import annotations

import numpy as np
import pytest

from opweave.compile.function import function
from opweave.graph.basic import Apply
from opweave.graph.fg import FunctionGraph
from opweave.link.c._flags import group_flags, remove_flags, uniq_flags
from opweave.link.c.basic import CLinker
from opweave.link.c.cmodule import get_compiler, get_module_cache
from opweave.link.c.op import COp
from opweave.link.c.sanitize import is_clang
from opweave.tensor import dvector

PARAMS = ["--param", "max-inline-insns-single=100", "--param", "large-function-growth=200"]


def test_group_flags_keeps_options_with_their_arguments():
    flags = [
        *PARAMS,
        "-O2",
        "-Xlinker",
        "--as-needed",
        "-include",
        "a.h",
        "-isystem",
        "/d",
        "-x",
        "c++",
        "-DX",
        "-D",
        "Y=1",
        "-I",
        "/inc",
        "-l",
        "m",
    ]
    assert group_flags(flags) == [
        ("--param", "max-inline-insns-single=100"),
        ("--param", "large-function-growth=200"),
        ("-O2",),
        ("-Xlinker", "--as-needed"),
        ("-include", "a.h"),
        ("-isystem", "/d"),
        ("-x", "c++"),
        ("-DX",),
        ("-D", "Y=1"),
        ("-I", "/inc"),
        ("-l", "m"),
    ]
    assert group_flags(["-o"]) == [("-o",)]  # a dangling option stays alone
    # A pass-through option whose argument is an option with an argument.
    assert group_flags(["-Xlinker", "-rpath", "-Xlinker", "/a", "-Xlinker", "-rpath"]) == [
        ("-Xlinker", "-rpath", "-Xlinker", "/a"),
        ("-Xlinker", "-rpath"),
    ]


def test_uniq_and_remove_work_on_groups():
    assert uniq_flags([*PARAMS, *PARAMS, "-O2", "-O2"]) == [*PARAMS, "-O2"]
    assert uniq_flags(["-Xlinker", "a", "-Xlinker", "b", "-Xlinker", "a"]) == [
        "-Xlinker",
        "a",
        "-Xlinker",
        "b",
    ]
    rpaths = ["-Xlinker", "-rpath", "-Xlinker", "/a", "-Xlinker", "-rpath", "-Xlinker", "/b"]
    assert uniq_flags(rpaths) == rpaths
    assert uniq_flags(["-D", "A", "-D", "B", "-D", "A"]) == ["-D", "A", "-D", "B"]
    assert remove_flags([*PARAMS, "-O2"], ["--param", "max-inline-insns-single=100"]) == [
        "--param",
        "large-function-growth=200",
        "-O2",
    ]
    # A word that is another option's argument is not removed by itself.
    assert remove_flags(["-x", "c++", "c++"], ["c++"]) == ["-x", "c++"]


class Scaled(COp):
    """z = x * SCALE_A * SCALE_B, the two factors defined by its flags (two-word
    ``-D``: word-by-word de-duplication would break the command line)."""

    __props__ = ("args", "no_args")

    def __init__(self, args=(), no_args=()):
        self.args, self.no_args = tuple(args), tuple(no_args)

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def c_compile_args(self, **kwargs):
        return ["-D", "SCALE_A=3", "-D", "SCALE_B=5", *self.args]

    def c_no_compile_args(self, **kwargs):
        return list(self.no_args)

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS({x}), NPY_FLOAT64, 0);
        if (!{z}) {sub["fail"]}
        for (npy_intp i = 0; i < PyArray_DIMS({x})[0]; ++i)
            ((double*)PyArray_DATA({z}))[i] =
                *(double*)PyArray_GETPTR1({x}, i) * SCALE_A * SCALE_B;
        """


def _job_flags(output):
    linker = CLinker().accept(FunctionGraph([output.owner.inputs[0]], [output]))
    compiler = get_compiler()
    return list(linker.compile_job(linker._objects(), compiler).flags)


def _contains(flags, words):
    return any(flags[i : i + len(words)] == words for i in range(len(flags)))


@pytest.mark.skipif(is_clang(get_compiler()), reason="--param is GCC's")
def test_two_params_reach_the_compile_job_and_the_compiler():
    x = dvector("x")
    op = Scaled(args=PARAMS)
    flags = _job_flags(op(x))
    assert _contains(flags, PARAMS)
    assert _contains(flags, ["-D", "SCALE_A=3", "-D", "SCALE_B=5"])
    f = function([x], op(x))
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [15.0, 30.0])
    [command] = [e.command for e in get_module_cache().list() if e.kind == "module"]
    words = command.split()
    assert _contains(words, PARAMS) and _contains(words, ["-D", "SCALE_B=5"])


def test_two_ops_repeating_groups_give_each_group_once():
    x = dvector("x")
    second = Scaled(args=["-D", "SCALE_A=3", "-include", "math.h"])
    y = Scaled(args=["-include", "math.h"])(second(x))
    flags = _job_flags(y)
    assert flags.count("SCALE_A=3") == 1 and flags.count("SCALE_B=5") == 1
    assert flags.count("math.h") == 1 and flags.count("-D") == 2
    f = function([x], y, mode="C")
    np.testing.assert_array_equal(f(np.array([1.0])), [225.0])


def test_no_compile_args_removes_a_whole_group():
    x = dvector("x")
    op = Scaled(args=["-D", "EXTRA=1", "-D", "EXTRA2=2"], no_args=["-D", "EXTRA=1"])
    flags = _job_flags(op(x))
    assert "EXTRA=1" not in flags
    assert _contains(flags, ["-D", "SCALE_A=3", "-D", "SCALE_B=5", "-D", "EXTRA2=2"])
    np.testing.assert_array_equal(function([x], op(x))(np.array([2.0])), [30.0])


def test_params_type_collects_its_fields_flags_as_groups():
    from opweave.link.c.params_type import ParamsType
    from opweave.scalar.basic import float64

    class Flagged(type(float64)):
        def __init__(self, flags):
            super().__init__("float64")
            self.flags = flags

        def c_compile_args(self, **kwargs):
            return list(self.flags)

    params = ParamsType(a=Flagged(["--param", "a=1"]), b=Flagged(["--param", "b=2", "-O2"]))
    assert params.c_compile_args() == ["--param", "a=1", "--param", "b=2", "-O2"]
    params = ParamsType(a=Flagged(["-D", "X", "-O2"]), b=Flagged(["-D", "X", "-D", "Y"]))
    assert params.c_compile_args() == ["-D", "X", "-O2", "-D", "Y"]

"""The whole-graph C linker: errors, recompiles, configuration, compiler
choice, hooks in every style, struct state and constants."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from opweave.examples.double_ops import double
from opweave.examples.vector_times_vector import VectorTimesVector
from support.ops import PyPlusOne

import opweave
from opweave.compile.function import function
from opweave.compile.mode import get_default_mode, get_mode
from opweave.errors import CompileError, OpweaveError
from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.link.c.basic import CLinker, MissingCCode
from opweave.link.c.cmodule import get_module_cache
from opweave.link.c.op import COp
from opweave.tensor import constant, dvector


class Scale(COp):
    """z = x * factor, with `factor` baked into the C code."""

    __props__ = ()
    factor = 2.0

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS({x}), NPY_FLOAT64, 0);
        if (!{z}) {sub["fail"]}
        for (npy_intp i = 0; i < PyArray_DIMS({x})[0]; ++i)
            ((double*)PyArray_DATA({z}))[i] = *(double*)PyArray_GETPTR1({x}, i) * {self.factor!r};
        """


def scale_function(**kwargs):
    x = dvector("x")
    return function([x], Scale()(x), **kwargs)


def test_op_without_c_code_is_named_in_c_mode_and_runs_in_python_otherwise() -> None:
    x = dvector("x")
    named = r"node 0 \(PyPlusOne\).*no C implementation.*mode='FAST_RUN' \(the default\) runs it"
    with pytest.raises(MissingCCode, match=named):
        function([x], PyPlusOne()(x), mode="C")
    np.testing.assert_array_equal(function([x], PyPlusOne()(x), mode="py")(np.ones(2)), [2.0, 2.0])
    # The default mode, FAST_RUN however it is named, runs such nodes in
    # Python and the others in C, as PyTensor's does.
    for mode in (None, "FAST_RUN", get_mode("FAST_RUN"), get_default_mode()):
        default = function([x], Scale()(PyPlusOne()(x)), mode=mode)
        np.testing.assert_array_equal(default(np.ones(2)), [4.0, 4.0])
        assert default.mode.linker_name == "c|py"
        assert default.node_outcomes[0] is None and default.node_outcomes[1] is not None
    assert get_mode("FAST_RUN") == get_default_mode() != get_mode("C")


def test_editing_c_code_recompiles_without_a_version_bump(monkeypatch: pytest.MonkeyPatch) -> None:
    first = scale_function()
    assert first.cache_outcome == "built"
    np.testing.assert_array_equal(first(np.ones(2)), [2.0, 2.0])
    assert scale_function().cache_outcome == "hit"
    monkeypatch.setattr(Scale, "factor", 5.0)
    edited = scale_function()
    assert edited.cache_outcome == "built"
    np.testing.assert_array_equal(edited(np.ones(2)), [5.0, 5.0])
    np.testing.assert_array_equal(first(np.ones(2)), [2.0, 2.0])


def test_compile_error_names_the_node_hook_and_line() -> None:
    class Broken(Scale):
        def c_code(self, node, name, inp, out, sub):
            return "int fine = 1;\nthis is not C;\n"

    x = dvector("x")
    with pytest.raises(CompileError) as caught:
        function([x], Broken()(x))
    text = str(caught.value)
    assert "in node 0 (Broken) c_code, line 2 of its code" in text
    assert Path(caught.value.source).is_file()


def test_runtime_error_keeps_its_type_and_names_the_node() -> None:
    class Checked(Scale):
        def c_code(self, node, name, inp, out, sub):
            (x,) = inp
            return (
                f"if (PyArray_DIMS({x})[0] == 0) {{ PyErr_SetString(PyExc_ZeroDivisionError, "
                f'"empty"); {sub["fail"]} }}\n' + super().c_code(node, name, inp, out, sub)
            )

    x = dvector("x")
    f = function([x], Checked()(x))
    with pytest.raises(ZeroDivisionError, match="empty") as caught:
        f(np.ones(0))
    assert "node 0 (Checked)" in " ".join(getattr(caught.value, "__notes__", []))
    np.testing.assert_array_equal(f(np.ones(1)), [2.0])


def test_gcc_cxxflags_and_remove_gxx_opt_reach_the_compiler() -> None:
    class UsesMacro(Scale):
        def c_code(self, node, name, inp, out, sub):
            return super().c_code(node, name, inp, out, sub).replace("2.0", "OPW_FACTOR")

    x = dvector("x")
    with opweave.config.change_flags(
        gcc__cxxflags="-DOPW_FACTOR=7.0", cmodule__remove_gxx_opt=True
    ):
        f = function([x], UsesMacro()(x))
    np.testing.assert_array_equal(f(np.ones(1)), [7.0])
    modules = [e for e in get_module_cache().list() if e.kind == "module"]
    [entry] = [e for e in modules if "OPW_FACTOR" in e.command]
    assert " -O0 " in entry.command and " -g " in entry.command
    assert " -O3 " not in entry.command


def test_c_no_compile_args_removes_a_default_flag() -> None:
    class NoMathErrno(Scale):
        def c_no_compile_args(self, **kwargs):
            return ["-fno-math-errno"]

    x = dvector("x")
    f = function([x], NoMathErrno()(x))
    np.testing.assert_array_equal(f(np.ones(1)), [2.0])
    commands = [e.command for e in get_module_cache().list() if e.kind == "module"]
    assert len(commands) == 1 and "-fno-math-errno" not in commands[0]


def test_check_input_false_drops_checks_except_on_graph_inputs() -> None:
    class Unchecked(Scale):
        check_input = False

    x = dvector("x")
    # An intermediate result made and used only by unchecked ops loses its
    # typedef and checks.
    # Each variable's type code is a cell struct named by its text: the input
    # and the intermediate get different cells, and only one has the typedef.
    graph = opweave.graph.FunctionGraph([x], [Unchecked()(Unchecked()(x))])
    text = CLinker().accept(graph).get_src_code()
    cells = re.findall(r"^struct (cell_\w+) \{", text, re.M)
    assert len(cells) == 2
    assert text.count("typedef npy_float64 dtype_V;") == 1
    assert text.index("typedef npy_float64 dtype_V;") < text.index(f"struct {cells[1]} {{")
    # The checked cell holds the input; the unchecked one the intermediate
    # and the output.
    assert re.search(rf"^{cells[0]} {cells[0]}_v\[1\];$", text, re.M)
    assert re.search(rf"^{cells[1]} {cells[1]}_v\[2\];$", text, re.M)
    checked = CLinker().accept(opweave.graph.FunctionGraph([x], [Scale()(Scale()(x))]))
    checked_text = checked.get_src_code()
    assert len(re.findall(r"^struct cell_\w+ \{", checked_text, re.M)) == 1
    assert checked_text.count("typedef npy_float64 dtype_V;") == 1
    # Graph inputs stay checked: the checks are what turns a bad argument
    # into a TypeError instead of a misread pointer.
    f = function([x], Unchecked()(x))
    with pytest.raises(TypeError, match="input 0"):
        f("not an array")
    np.testing.assert_array_equal(f([1.0, 2.0]), [2.0, 4.0])


def test_c_compiler_is_honoured() -> None:
    gxx = shutil.which("g++")
    assert gxx is not None

    class WithCompiler(Scale):
        def c_compiler(self):
            return gxx

    x = dvector("x")
    f = function([x], WithCompiler()(x))
    np.testing.assert_array_equal(f(np.ones(1)), [2.0])
    [module] = [e for e in get_module_cache().list() if e.kind == "module"]
    cd, compile_line = module.command.split("\n", 1)
    assert cd == f"cd {module.dir}"  # the compile runs there, with relative names
    assert compile_line.startswith(gxx)

    class Missing(Scale):
        def c_compiler(self):
            return "/nonexistent/opweave-cxx"

    with pytest.raises(OpweaveError, match="opweave-cxx"):
        function([x], Missing()(x))


def test_theano_style_hooks_without_keywords() -> None:
    class OldStyle(Scale):
        def c_support_code(self):
            return "static double opw_twice(double v) { return 2 * v; }"

        def c_headers(self):
            return ["<math.h>"]

        def c_compile_args(self):
            return ["-DOPW_OLD_STYLE=1"]

        def c_code(self, node, name, inp, out, sub):
            return (
                super()
                .c_code(node, name, inp, out, sub)
                .replace("* 2.0", "* opw_twice(OPW_OLD_STYLE)")
            )

    x = dvector("x")
    np.testing.assert_array_equal(function([x], OldStyle()(x))(np.ones(1)), [2.0])


def test_struct_state_persists_across_calls_and_is_released_with_the_function() -> None:
    class Counter(Op):
        __props__ = ()

        def make_node(self, x):
            return Apply(self, [x], [double()])

        def c_support_code_struct(self, node, name):
            return f"double count_{name};"

        def c_init_code_struct(self, node, name, sub):
            return f"count_{name} = 0;"

        def c_cleanup_code_struct(self, node, name):
            return (
                'PyObject* log = PySys_GetObject("opweave_test_log");\n'
                f"if (log) {{ PyObject* v = PyFloat_FromDouble(count_{name}); "
                "if (v) { PyList_Append(log, v); Py_DECREF(v); } }"
            )

        def c_code(self, node, name, inp, out, sub):
            return f"count_{name} += {inp[0]}; {out[0]} = count_{name};"

    sys.opweave_test_log = []  # type: ignore[attr-defined]
    x = double("x")
    f = function([x], Counter()(x))
    assert [f(1.0), f(2.0), f(3.5)] == [1.0, 3.0, 6.5]
    other = function([x], Counter()(x))
    assert other(1.0) == 1.0  # its own struct
    del f
    assert sys.opweave_test_log == [6.5]  # type: ignore[attr-defined]
    del other
    assert sys.opweave_test_log == [6.5, 1.0]  # type: ignore[attr-defined]
    del sys.opweave_test_log  # type: ignore[attr-defined]


def test_failing_struct_init_raises_from_function() -> None:
    class BadInit(Scale):
        def c_init_code_struct(self, node, name, sub):
            return f'PyErr_SetString(PyExc_MemoryError, "no room"); {sub["fail"]}'

    x = dvector("x")
    with pytest.raises(MemoryError, match="no room"):
        function([x], BadInit()(x))


def test_tensor_constants_are_extracted_at_creation_and_share_the_module() -> None:
    x = dvector("x")
    op = VectorTimesVector()
    f = function([x], op(x, constant(np.array([1.0, 2.0, 3.0]))))
    np.testing.assert_array_equal(f(np.ones(3)), [1.0, 2.0, 3.0])
    g = function([x], op(x, constant(np.array([4.0, 5.0, 6.0]))))
    assert (f.cache_outcome, g.cache_outcome) == ("built", "hit")
    np.testing.assert_array_equal(g(np.ones(3)), [4.0, 5.0, 6.0])


def test_function_constructor_rejects_bad_arguments() -> None:
    from opweave import _core

    with pytest.raises(TypeError, match="exactly one of module= and impl="):
        _core.Function()
    with pytest.raises(TypeError, match="impl must be callable"):
        _core.Function(impl=3)
    # Each kind has its own constructor: orphans and a fallback are a graph module's.
    with pytest.raises(TypeError, match="takes no orphans= or fallback="):
        _core.Function(impl=print, orphans=[1.0])
    with pytest.raises(TypeError, match="takes no orphans= or fallback="):
        _core.Function(impl=print, fallback=print)
    module = scale_function().fgraph  # any object without an ABI capsule
    with pytest.raises(AttributeError):
        _core.Function(module=module)


def test_function_in_a_reference_cycle_is_collected() -> None:
    import gc
    import weakref

    f = scale_function()
    f.myself = f  # a cycle through the instance dict
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is None


def test_a_constant_output_of_a_type_without_copy_code_survives_cleanup() -> None:
    """The constant is the module's output itself (its type registers no
    DeepCopyOp code): the module's cleanup must not store it (there are no
    outputs then). Used to crash when the function was freed."""
    import gc

    from opweave.graph.basic import Constant
    from opweave.link.c.type import Generic

    f = function([], Constant(Generic(), "kept"), mode="C")
    assert [f(), f()] == ["kept", "kept"]
    del f
    gc.collect()

"""ExternalCOp: C code from files split into #section blocks, its macros,
its function-call mode, its errors and its cache version."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from opweave.examples.external_vector_times_vector import VectorTimesVector

import opweave
from opweave.errors import CompileError
from opweave.graph.basic import Apply
from opweave.link.c.op import ExternalCOp
from opweave.link.c.sections import parse_sections
from opweave.tensor import dvector, fvector, vector


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


class Copy(ExternalCOp):
    """z = x + offset, from any C file given at construction."""

    __props__ = ("path",)

    def __init__(self, path, func_name=None):
        self.path = str(path)
        super().__init__(path, func_name)

    def make_node(self, x):
        return Apply(self, [x], [x.type()])


ADD_ONE = """
#section support_code
static double add_one(double v) { return v + 1.0; }

#section support_code_apply
int APPLY_SPECIFIC(run)(PyArrayObject* x, PyArrayObject** z)
{
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_CORDER);
    if (!*z) return 1;
    DTYPE_OUTPUT_0* data = (DTYPE_OUTPUT_0*)PyArray_DATA(*z);
    for (npy_intp i = 0; i < PyArray_SIZE(*z); ++i) data[i] = add_one(data[i]);
    return 0;
}
"""


def test_tutorial_op_as_written_runs_two_dtypes_in_one_graph() -> None:
    x, y = fvector("x"), vector("y", dtype="int16")
    a, b = dvector("a"), vector("b", dtype="int64")
    op = VectorTimesVector()
    assert op.func_files[0].name == "vectorTimesVector.c"
    f = opweave.function([x, y, a, b], [op(x, y), op(a, b)])
    first, second = f(
        np.arange(4, dtype="float32"),
        np.array([1, 2, 3, 4], dtype="int16"),
        np.linspace(0, 1, 3),
        np.array([2, 3, 4]),
    )
    assert first.dtype == np.float32 and second.dtype == np.float64
    np.testing.assert_array_equal(first, [0, 2, 6, 12])
    np.testing.assert_allclose(second, [0, 1.5, 4])
    with pytest.raises(ValueError, match="Shape mismatch"):
        f(np.ones(2, "float32"), np.ones(3, "int16"), np.ones(1), np.ones(1, "int64"))


def test_sections_are_merged_in_file_order_and_relative_paths_follow_the_class(
    tmp_path: Path,
) -> None:
    write(tmp_path / "a.c", "#section support_code\nint A;\n#section code\nX\n")
    write(tmp_path / "b.c", "#section support_code\nint B;\n")
    op = Copy([tmp_path / "a.c", tmp_path / "b.c"])
    support = op.c_support_code()
    assert support.index("int A;") < support.index("int B;")
    assert f'#line 2 "{tmp_path / "a.c"}"' in support
    assert f'#line 2 "{tmp_path / "b.c"}"' in support
    # A relative path is taken from the folder of the module defining the class.
    assert (
        VectorTimesVector().func_files[0].parent
        == Path(sys.modules[VectorTimesVector.__module__].__file__).parent
    )


def test_unknown_tag_names_the_tag_the_file_and_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "odd.c", "#section support_code\nint a;\n#section suport_code_aply\n")
    with pytest.raises(ValueError, match=r"odd\.c:3: unknown section tag 'suport_code_aply'"):
        Copy(path)


def test_code_before_the_first_section_and_files_without_sections_are_errors(
    tmp_path: Path,
) -> None:
    stray = tmp_path / "stray.c"
    stray.write_text("\n// a comment\n#section code\n")
    with pytest.raises(ValueError, match=r"stray\.c:2: code before the first '#section'"):
        Copy(stray)
    with pytest.raises(ValueError, match="no '#section <tag>' line"):
        parse_sections("\n\n", "empty.c")
    with pytest.raises(OSError, match="cannot read its C file"):
        Copy(tmp_path / "missing.c")
    both = write(tmp_path / "both.c", "#section code\nX\n")
    with pytest.raises(ValueError, match="func_name"):
        Copy(both, "f")


def test_macros_are_scoped_to_their_sections(tmp_path: Path) -> None:
    path = write(tmp_path / "m.c", "#section support_code_apply\nBODY\n#section init_code\nINIT\n")
    x = vector("x", dtype="int32")
    node = Copy(path).make_node(x)
    apply_code = node.op.c_support_code_apply(node, "node_3")
    for line in (
        "#define APPLY_SPECIFIC(str) str##_node_3",
        "#define DTYPE_INPUT_0 npy_int32",
        f"#define TYPENUM_INPUT_0 {np.dtype('int32').num}",
        "#define ITEMSIZE_INPUT_0 4",
        "#define DTYPE_OUTPUT_0 npy_int32",
        "#undef APPLY_SPECIFIC",
        "#undef DTYPE_INPUT_0",
    ):
        assert line in apply_code
    assert apply_code.index("BODY") < apply_code.index("#undef")
    # init_code and support_code get no macros.
    assert node.op.c_init_code() == [f'#line 4 "{path}"\nINIT\n']
    # check_input=False drops the dtype macros.
    node.op.check_input = False
    assert "DTYPE_INPUT_0" not in node.op.c_support_code_apply(node, "node_3")
    sub = {"fail": "OPWEAVE_FAIL(4)", "id": "4", "params": "V9"}
    write(path, "#section code\nBODY\n#section code_cleanup\nCLEAN\n")
    op = Copy(path)
    code = op.c_code(node, "node_3", ["V1"], ["V2"], sub)
    for line in ("#define FAIL OPWEAVE_FAIL(4)", "#define PARAMS V9", "#define INPUT_0 V1"):
        assert line in code
    assert "#define OUTPUT_0 V2" in op.c_code_cleanup(node, "node_3", ["V1"], ["V2"], sub)


def test_code_section_with_input_output_and_fail_macros_runs(tmp_path: Path) -> None:
    path = write(
        tmp_path / "neg.c",
        """
        #section code
        if (PyArray_SIZE(INPUT_0) == 0) {
            PyErr_SetString(PyExc_ValueError, "empty input");
            FAIL;
        }
        Py_XDECREF(OUTPUT_0);
        OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_CORDER);
        if (!OUTPUT_0) FAIL;
        for (npy_intp i = 0; i < PyArray_SIZE(OUTPUT_0); ++i)
            ((DTYPE_OUTPUT_0*)PyArray_DATA(OUTPUT_0))[i] *= -1;
        """,
    )
    x = dvector("x")
    f = opweave.function([x], Copy(path)(x))
    np.testing.assert_array_equal(f(np.array([1.0, -2.0])), [-1.0, 2.0])
    with pytest.raises(ValueError, match="empty input"):
        f(np.array([]))


def test_function_call_mode_pads_with_null_and_reports_silent_failures(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pad.c",
        """
        #section support_code_apply
        int APPLY_SPECIFIC(run)(PyArrayObject* x, PyArrayObject* extra,
                                PyArrayObject** z, PyArrayObject** unused)
        {
            if (extra != NULL || unused != NULL) return 2;
            if (PyArray_SIZE(x) == 0) return 3;  /* no exception set */
            Py_XDECREF(*z);
            *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_CORDER);
            return *z ? 0 : 1;
        }
        """,
    )

    class Padded(Copy):
        _cop_num_inputs = 2
        _cop_num_outputs = 2

    x = dvector("x")
    f = opweave.function([x], Padded(path, "APPLY_SPECIFIC(run)")(x))
    np.testing.assert_array_equal(f(np.array([4.0, 5.0])), [4.0, 5.0])
    with pytest.raises(RuntimeError, match=r"returned 3 without setting an exception"):
        f(np.array([]))


def test_compile_error_points_at_the_c_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.c", ADD_ONE.replace("return 0;", "return undefined_name;"))
    x = dvector("x")
    with pytest.raises(CompileError) as info:
        opweave.function([x], Copy(path, "APPLY_SPECIFIC(run)")(x))
    line = ADD_ONE.lstrip("\n").splitlines().index("    return 0;") + 1
    assert f"broken.c:{line}:" in str(info.value)
    assert "undefined_name" in str(info.value)


def test_cache_version_follows_the_file_contents(tmp_path: Path) -> None:
    path = write(tmp_path / "v.c", ADD_ONE)
    first = Copy(path, "APPLY_SPECIFIC(run)").c_code_cache_version()
    assert first == Copy(path, "APPLY_SPECIFIC(run)").c_code_cache_version()
    write(path, ADD_ONE.replace("1.0", "2.0"))
    assert Copy(path, "APPLY_SPECIFIC(run)").c_code_cache_version() != first


SCRIPT = """
import sys
import numpy as np
import opweave
from opweave.graph.basic import Apply
from opweave.link.c.op import ExternalCOp

class AddOne(ExternalCOp):
    __props__ = ()
    def __init__(self):
        super().__init__("./op.c", "APPLY_SPECIFIC(run)")
    def make_node(self, x):
        return Apply(self, [x], [x.type()])

x = opweave.tensor.dvector()
f = opweave.function([x], AddOne()(x))
print(f.cache_outcome, f(np.array([1.0]))[0])
"""


def test_edited_c_file_is_recompiled_in_a_fresh_process(tmp_path: Path) -> None:
    write(tmp_path / "op.c", ADD_ONE)
    write(tmp_path / "run_op.py", SCRIPT)
    env = dict(os.environ)

    def run() -> list[str]:
        done = subprocess.run(
            [sys.executable, str(tmp_path / "run_op.py")],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return done.stdout.split()

    assert run() == ["built", "2.0"]
    assert run() == ["hit", "2.0"]
    write(tmp_path / "op.c", ADD_ONE.replace("v + 1.0", "v + 10.0"))
    assert run() == ["built", "11.0"]


THEANO_OP = """
import theano
from theano import gof

class VectorTimesVector(gof.COp):
    __props__ = ()

    func_file = "./vectorTimesVector.c"
    func_name = "APPLY_SPECIFIC(vector_times_vector)"

    def __init__(self):
        super(VectorTimesVector, self).__init__(self.func_file,
                                                self.func_name)

    def make_node(self, x, y):
        # Validate the inputs' type
        if x.type.ndim != 1:
            raise TypeError('x must be a 1-d vector')
        if y.type.ndim != 1:
            raise TypeError('y must be a 1-d vector')

        # Create an output variable of the same type as x
        output_var = theano.tensor.TensorType(
                        dtype=theano.scalar.upcast(x.dtype, y.dtype),
                        broadcastable=[False])()

        return gof.Apply(self, [x, y], [output_var])
"""


def test_theano_tutorial_gof_cop_runs_with_imports_renamed(tmp_path: Path) -> None:
    import importlib.util

    source = Path(sys.modules[VectorTimesVector.__module__].__file__).with_name(
        "vectorTimesVector.c"
    )
    (tmp_path / "vectorTimesVector.c").write_text(source.read_text())
    module_path = tmp_path / "theano_vtv.py"
    module_path.write_text(THEANO_OP.replace("theano", "opweave"))
    spec = importlib.util.spec_from_file_location("theano_vtv", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, y = vector("x", dtype="int32"), fvector("y")
    f = opweave.function([x, y], module.VectorTimesVector()(x, y))
    out = f(np.array([1, 2, 3], dtype="int32"), np.array([0.5, 0.5, 2.0], dtype="float32"))
    assert out.dtype == np.float64  # upcast(int32, float32)
    np.testing.assert_array_equal(out, [0.5, 1.0, 6.0])


STRUCT_SECTIONS = """
#section support_code
static int opw_module_inits = 0;

#section init_code_apply
opw_module_inits += 1;

#section support_code_struct
npy_int64 APPLY_SPECIFIC(calls);
int* APPLY_SPECIFIC(buffer);

#section init_code_struct
APPLY_SPECIFIC(calls) = 0;
APPLY_SPECIFIC(buffer) = (int*)malloc(16 * sizeof(int));
if (APPLY_SPECIFIC(buffer) == NULL) {
    PyErr_NoMemory();
    FAIL;
}

#section cleanup_code_struct
free(APPLY_SPECIFIC(buffer));
APPLY_SPECIFIC(buffer) = NULL;

#section code
APPLY_SPECIFIC(calls) += 1;
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_CORDER);
if (!OUTPUT_0) FAIL;
((DTYPE_OUTPUT_0*)PyArray_DATA(OUTPUT_0))[0] = (DTYPE_OUTPUT_0)APPLY_SPECIFIC(calls);
((DTYPE_OUTPUT_0*)PyArray_DATA(OUTPUT_0))[1] = (DTYPE_OUTPUT_0)opw_module_inits;
"""


def test_struct_sections_keep_state_per_function_and_init_code_apply_runs_at_load(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "state.c", STRUCT_SECTIONS)
    x = dvector("x")
    f = opweave.function([x], Copy(path)(x))
    g = opweave.function([x], Copy(path)(x))  # same module, a struct of its own
    data = np.zeros(2)
    assert [f(data)[0] for _ in range(3)] == [1.0, 2.0, 3.0]
    assert g(data)[0] == 1.0
    # init_code_apply ran once, when the module was loaded, not per function.
    assert f(data)[1] == 1.0 and g(data)[1] == 1.0
    assert f.library == g.library


def test_files_without_final_newline_form_feeds_and_bad_encodings(tmp_path: Path) -> None:
    first = tmp_path / "a.c"
    first.write_text("#section support_code\nstatic int opw_a = 1;")  # no final newline
    second = write(tmp_path / "b.c", ADD_ONE)
    x = dvector("x")
    f = opweave.function([x], Copy([first, second], "APPLY_SPECIFIC(run)")(x))
    np.testing.assert_array_equal(f(np.zeros(1)), [1.0])
    # A form feed is not a line break for the compiler; nor for the #line.
    feed = tmp_path / "feed.c"
    feed.write_text("#section support_code\n/*\f*/\nint broken = undefined_here;\n")
    with pytest.raises(CompileError, match=r"feed\.c:3:"):
        opweave.function([x], Copy(feed, "f")(x))
    latin = tmp_path / "latin.c"
    latin.write_bytes("#section support_code\n/* caf\xe9 */\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin\.c is not UTF-8"):
        Copy(latin)


def test_headers_next_to_the_c_file_are_found_and_their_edits_recompile(tmp_path: Path) -> None:
    header = tmp_path / "offset.h"
    header.write_text("#define OPW_OFFSET 1.0\n")
    path = write(
        tmp_path / "uses_header.c",
        '#section support_code\n#include "offset.h"\n'
        + ADD_ONE.replace("#section support_code\n", "").replace("v + 1.0", "v + OPW_OFFSET"),
    )
    x = dvector("x")
    f = opweave.function([x], Copy(path, "APPLY_SPECIFIC(run)")(x))
    assert f(np.zeros(1))[0] == 1.0
    header.write_text("#define OPW_OFFSET 5.0\n")
    g = opweave.function([x], Copy(path, "APPLY_SPECIFIC(run)")(x))
    assert g.cache_outcome == "built" and g(np.zeros(1))[0] == 5.0

"""DebugMode: each check with a deliberately broken op, and correct ops
passing every check with the right values."""

from __future__ import annotations

import numpy as np
import pytest
from support.debug_ops import (
    ADD,
    DOUBLE_REUSING,
    FRESH_COPY,
    COnlyOp,
    DebugOp,
    add_perform,
    double_perform,
    vector,
)

import opweave
import opweave.tensor as pt
from opweave.compile.debugmode import (
    BadDestroyMap,
    BadRefcount,
    BadThunkOutput,
    BadViewMap,
    DebugMode,
    DebugModeError,
    InvalidValueError,
)

ALL = DebugMode(check_preallocated_output=["ALL"])


def run(op, *values, mode=ALL):
    inputs = [pt.TensorType("float64", shape=(None,) * np.ndim(v))() for v in values]
    outputs = op(*inputs)
    return opweave.function(inputs, outputs, mode=mode)(*values)


DOUBLE = DebugOp("Double", DOUBLE_REUSING, double_perform)


# --- the mode itself ------------------------------------------------------------


def test_mode_names_and_paths_give_debugmode():
    from opweave.compile.debug.debugmode import DebugMode as Alias

    assert Alias is DebugMode
    x = pt.dvector("x")
    for mode in ("DebugMode", "DEBUG_MODE", DebugMode()):
        f = opweave.function([x], DOUBLE(x), mode=mode)
        assert isinstance(f.mode, DebugMode)
        np.testing.assert_array_equal(f(vector([1, 2])), [2, 4])


def test_options_defaults_and_validation():
    mode = DebugMode()
    assert (mode.check_c_code, mode.check_py_code, mode.check_isfinite) == (True, True, True)
    assert mode.check_refcounts is True
    assert mode.check_preallocated_output == ()
    assert DebugMode(check_preallocated_output=["ALL"]).check_preallocated_output == (
        "previous",
        "c_contiguous",
        "f_contiguous",
        "strided",
        "wrong_size",
    )
    with pytest.raises(ValueError, match="unknown preallocated output kind 'sideways'"):
        DebugMode(check_preallocated_output=["sideways"])
    with pytest.raises(ValueError, match="check_c_code or check_py_code"):
        DebugMode(check_c_code=False, check_py_code=False)
    assert issubclass(BadRefcount, DebugModeError) and issubclass(BadViewMap, DebugModeError)


def test_correct_op_passes_every_check_and_returns_the_c_result():
    twice = DebugOp("TwiceReusing", DOUBLE_REUSING, double_perform)
    x = pt.dvector("x")
    f = opweave.function([x], twice(x), mode=ALL)
    for n in (3, 5, 5, 0):
        values = np.arange(n, dtype="float64")
        np.testing.assert_array_equal(f(values), values * 2)
        np.testing.assert_array_equal(values, np.arange(n))  # the caller's input untouched
    (check,) = f.node_checks
    assert set(check.thunks) == {"perform", "c_code"}


def test_the_value_passed_on_is_the_c_result_and_perform_only_nodes_run_perform():
    # C computes x + 1 and perform x + 2: with check_py_code=False only C runs.
    from support.ops import TwoWays

    x = pt.dvector("x")
    f = opweave.function([x], TwoWays()(x), mode=DebugMode(check_py_code=False))
    np.testing.assert_array_equal(f(vector([1])), [2])
    f = opweave.function([x], TwoWays()(x), mode=DebugMode(check_c_code=False))
    np.testing.assert_array_equal(f(vector([1])), [3])
    python_only = DebugOp("PythonOnly", None, double_perform)
    np.testing.assert_array_equal(run(python_only, vector([3])), [6])
    c_only = COnlyOp("COnly", DOUBLE_REUSING)
    np.testing.assert_array_equal(run(c_only, vector([3])), [6])


# --- Python against C -----------------------------------------------------------


def test_wrong_python_result_is_bad_thunk_output_showing_both_values():
    def off_by_one(node, inputs, outputs):
        outputs[0][0] = inputs[0] * 2 + 1

    op = DebugOp("OffByOne", DOUBLE_REUSING, off_by_one)
    with pytest.raises(BadThunkOutput) as caught:
        run(op, vector([1, 2]), mode=DebugMode())
    text = str(caught.value)
    assert "OffByOne" in text and "perform" in text and "c_code" in text
    assert "[3., 5.]" in text and "[2., 4.]" in text
    assert caught.value.thunk1 == "perform" and caught.value.thunk2 == "c_code"
    np.testing.assert_array_equal(caught.value.val1, [3, 5])


# --- destroy and view maps --------------------------------------------------------

WRITES_INPUT = "*(double*)PyArray_DATA(%(x)s) = 42;\n" + FRESH_COPY


def _writes_input(node, inputs, outputs):
    inputs[0][0] = 42
    outputs[0][0] = inputs[0].copy()


@pytest.mark.parametrize("thunk", ["c_code", "perform"])
def test_writing_an_input_without_destroy_map_is_bad_destroy_map(thunk):
    op = DebugOp("WritesInput", WRITES_INPUT, _writes_input)
    mode = DebugMode(check_py_code=thunk == "perform", check_c_code=thunk == "c_code")
    with pytest.raises(BadDestroyMap) as caught:
        run(op, vector([1, 2]), mode=mode)
    assert caught.value.perform == thunk and caught.value.idx == 0
    assert "WritesInput" in str(caught.value) and "destroy_map" in str(caught.value)


def test_declared_destroy_map_passes():
    op = DebugOp("DestroysInput", WRITES_INPUT, _writes_input, destroy_map={0: [0]})
    values = vector([1, 2])
    np.testing.assert_array_equal(run(op, values), [42, 2])
    np.testing.assert_array_equal(values, [1, 2])


RETURNS_INPUT = "Py_XDECREF(%(z)s);\n%(z)s = %(x)s;\nPy_INCREF(%(z)s);\n"


def _returns_input(node, inputs, outputs):
    outputs[0][0] = inputs[0]


def test_returning_a_view_without_view_map_is_bad_view_map():
    op = DebugOp("ReturnsInput", RETURNS_INPUT, _returns_input)
    with pytest.raises(BadViewMap) as caught:
        run(op, vector([1, 2]))
    assert caught.value.in_alias_idx == 0 and caught.value.output_idx == 0
    assert "ReturnsInput" in str(caught.value)

    def slice_view(node, inputs, outputs):
        outputs[0][0] = inputs[0][1:]

    with pytest.raises(BadViewMap):
        run(DebugOp("SliceView", None, slice_view), vector([1, 2]))


def test_declared_view_passes_with_the_input_value():
    op = DebugOp("ViewsInput", RETURNS_INPUT, _returns_input, view_map={0: [0]})
    np.testing.assert_array_equal(run(op, vector([1, 2]), mode=DebugMode()), [1, 2])


ALIASED_OUTPUTS = FRESH_COPY + "Py_XDECREF(%(w)s);\n%(w)s = %(z)s;\nPy_INCREF(%(w)s);\n"


def test_an_output_aliasing_another_output_both_read_later_is_bad_view_map():
    # (Both only returned is allowed: test_debugmode_aliasing.py.)
    def aliased(node, inputs, outputs):
        outputs[0][0] = inputs[0].copy()
        outputs[1][0] = outputs[0][0]

    op = DebugOp("AliasedOutputs", ALIASED_OUTPUTS, aliased, n_out=2)
    add = DebugOp("Add", ADD, add_perform)
    x = pt.dvector("x")
    for mode in (DebugMode(check_py_code=False), DebugMode(check_c_code=False)):
        f = opweave.function([x], add(*op(x)), mode=mode)
        with pytest.raises(BadViewMap) as caught:
            f(vector([1, 2]))
        assert caught.value.out_alias_idx == 1 and caught.value.in_alias_idx is None


# --- invalid and non-finite values -----------------------------------------------

FLOAT32_FROM_C = """
Py_XDECREF(%(z)s);
%(z)s = (PyArrayObject*)PyArray_Cast(%(x)s, NPY_FLOAT32);
if (!%(z)s) %(fail)s
"""


MATRIX_FROM_C = """
npy_intp dims[2] = {1, PyArray_SIZE(%(x)s)};
Py_XDECREF(%(z)s);
%(z)s = (PyArrayObject*)PyArray_ZEROS(2, dims, NPY_FLOAT64, 0);
if (!%(z)s) %(fail)s
"""


@pytest.mark.parametrize(
    ("name", "code", "reason"),
    [("Float32FromC", FLOAT32_FROM_C, "float32"), ("MatrixFromC", MATRIX_FROM_C, "dimensions")],
)
def test_a_wrong_dtype_or_ndim_from_c_is_invalid_value_error(name, code, reason):
    with pytest.raises(InvalidValueError) as caught:
        run(COnlyOp(name, code), vector([1, 2]))
    message = str(caught.value)
    assert "c_code" in message and name in message and reason in message
    # The value never reached Python: the message says so, not "None".
    assert "value: not seen" in message and "value: None" not in message


def test_a_wrong_dtype_or_ndim_from_python_is_invalid_value_error():
    def as_float32(node, inputs, outputs):
        outputs[0][0] = inputs[0].astype("float32")

    with pytest.raises(InvalidValueError, match="perform"):
        run(DebugOp("Float32FromPy", None, as_float32), vector([1, 2]))

    def as_matrix(node, inputs, outputs):
        outputs[0][0] = inputs[0].reshape(1, -1)

    with pytest.raises(InvalidValueError, match="dimensions"):
        run(DebugOp("MatrixFromPy", None, as_matrix), vector([1, 2]))


LOG_IN_C = (
    FRESH_COPY
    + """
for (npy_intp i = 0; i < PyArray_SIZE(%(z)s); ++i)
    ((double*)PyArray_DATA(%(z)s))[i] = log(((double*)PyArray_DATA(%(z)s))[i]);
"""
)


def test_a_nan_is_invalid_value_error_only_with_check_isfinite():
    def log(node, inputs, outputs):
        with np.errstate(invalid="ignore", divide="ignore"):
            outputs[0][0] = np.log(inputs[0])

    op = DebugOp("Log", LOG_IN_C, log)
    with pytest.raises(InvalidValueError, match="NaN or Inf"):
        run(op, vector([-1.0, 1.0]))
    result = run(op, vector([-1.0, 1.0]), mode=DebugMode(check_isfinite=False))
    assert np.isnan(result[0]) and result[1] == 0


# --- preallocated outputs ---------------------------------------------------------

ASSUMES_ZEROED = """
{
    npy_intp n = PyArray_DIMS(%(x)s)[0];
    if (%(z)s == NULL || PyArray_NDIM(%(z)s) != 1 || PyArray_DIMS(%(z)s)[0] != n) {
        Py_XDECREF(%(z)s);
        %(z)s = (PyArrayObject*)PyArray_ZEROS(1, &n, NPY_FLOAT64, 0);
        if (!%(z)s) %(fail)s
    }
    for (npy_intp i = 0; i < n; ++i)
        *(double*)PyArray_GETPTR1(%(z)s, i) += 2 * *(double*)PyArray_GETPTR1(%(x)s, i);
}
"""

# Reuses any offered vector without checking its length.
IGNORES_SIZE = """
{
    npy_intp n = PyArray_DIMS(%(x)s)[0];
    if (%(z)s == NULL) {
        %(z)s = (PyArrayObject*)PyArray_EMPTY(1, &n, NPY_FLOAT64, 0);
        if (!%(z)s) %(fail)s
    }
    npy_intp m = PyArray_DIMS(%(z)s)[0] < n ? PyArray_DIMS(%(z)s)[0] : n;
    for (npy_intp i = 0; i < m; ++i)
        *(double*)PyArray_GETPTR1(%(z)s, i) = 2 * *(double*)PyArray_GETPTR1(%(x)s, i);
}
"""

# Reuses an offered matrix of the right shape, writing it as if it were
# C-contiguous.
RAW_POINTER_2D = """
{
    npy_intp rows = PyArray_DIMS(%(x)s)[0], cols = PyArray_DIMS(%(x)s)[1];
    if (%(z)s == NULL || PyArray_DIMS(%(z)s)[0] != rows || PyArray_DIMS(%(z)s)[1] != cols) {
        Py_XDECREF(%(z)s);
        %(z)s = (PyArrayObject*)PyArray_EMPTY(2, PyArray_DIMS(%(x)s), NPY_FLOAT64, 0);
        if (!%(z)s) %(fail)s
    }
    double* out = (double*)PyArray_DATA(%(z)s);
    for (npy_intp i = 0; i < rows; ++i)
        for (npy_intp j = 0; j < cols; ++j)
            out[i * cols + j] = 2 * *(double*)PyArray_GETPTR2(%(x)s, i, j);
}
"""

MATRIX = np.arange(6, dtype="float64").reshape(2, 3)


@pytest.mark.parametrize(
    ("kind", "body", "value"),
    [
        ("previous", ASSUMES_ZEROED, vector([1, 2, 3])),
        ("c_contiguous", ASSUMES_ZEROED, vector([1, 2, 3])),
        ("strided", ASSUMES_ZEROED, vector([1, 2, 3])),
        ("f_contiguous", RAW_POINTER_2D, MATRIX),
        ("strided", RAW_POINTER_2D, MATRIX),
        ("wrong_size", IGNORES_SIZE, vector([1, 2, 3])),
    ],
)
def test_each_preallocated_kind_catches_its_bug_in_c(kind, body, value):
    op = COnlyOp(f"Broken_{kind}", body)
    np.testing.assert_array_equal(run(op, value, mode=DebugMode()), value * 2)  # reference ok
    with pytest.raises(BadThunkOutput) as caught:
        run(op, value, mode=DebugMode(check_preallocated_output=[kind]))
    assert f"c_code with preallocated {kind}" in caught.value.thunk2
    np.testing.assert_array_equal(caught.value.val1, value * 2)


def test_a_correct_op_passes_every_preallocated_kind_over_calls():
    op = COnlyOp("ReusesCorrectly", DOUBLE_REUSING)
    x = pt.dvector("x")
    f = opweave.function([x], op(x), mode=ALL)
    for n in (4, 4, 2, 0, 3):
        values = np.arange(n, dtype="float64")
        np.testing.assert_array_equal(f(values), values * 2)


def test_perform_runs_with_preallocated_outputs_too():
    def assumes_zeroed(node, inputs, outputs):
        if outputs[0][0] is None or outputs[0][0].shape != inputs[0].shape:
            outputs[0][0] = np.zeros_like(inputs[0])
        outputs[0][0] += inputs[0] * 2

    op = DebugOp("PerformAssumesZeroed", None, assumes_zeroed)
    np.testing.assert_array_equal(run(op, vector([1, 2]), mode=DebugMode()), [2, 4])
    with pytest.raises(BadThunkOutput, match="perform with preallocated c_contiguous"):
        run(op, vector([1, 2]), mode=DebugMode(check_preallocated_output=["c_contiguous"]))


# --- reference counts ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "extra", "message"),
    [
        ("LeaksInput", "Py_INCREF(%(x)s);", "holds 1 more reference"),
        ("LeaksOutput", "Py_INCREF(%(z)s);", "holds 1 reference(s) besides its storage"),
        ("DecrefsBorrowed", "Py_DECREF(%(x)s);", "lost 1 reference(s)"),
    ],
)
def test_reference_count_mistakes_are_bad_refcount(label, extra, message):
    op = COnlyOp(label, FRESH_COPY + extra)
    values = vector([1, 2])
    with pytest.raises(BadRefcount) as caught:
        run(op, values, mode=DebugMode())
    assert message in str(caught.value) and label in str(caught.value)
    assert caught.value.variable is not None
    np.testing.assert_array_equal(values, [1, 2])  # the caller's value survives
    if label.startswith("Leaks"):  # without the check, a leak goes unseen
        result = run(op, values, mode=DebugMode(check_refcounts=False))
        np.testing.assert_array_equal(result, values)


def test_an_over_release_is_repaired_so_the_input_survives():
    import gc
    import sys

    op = COnlyOp("DecrefsBorrowed2", FRESH_COPY + "Py_DECREF(%(x)s);")
    values = vector([5, 6])
    count = sys.getrefcount(values)
    for _ in range(3):
        with pytest.raises(BadRefcount):
            run(op, values, mode=DebugMode())
    gc.collect()
    assert sys.getrefcount(values) == count
    np.testing.assert_array_equal(values + 1, [6, 7])


def test_a_temporary_leaked_on_every_call_is_bad_refcount():
    leaks = FRESH_COPY + "{ PyObject* leaked = PyLong_FromLong(1000000 + PyArray_SIZE(%(x)s));\n"
    leaks += "(void)leaked; }\n"
    with pytest.raises(BadRefcount, match="allocated blocks grow"):
        run(COnlyOp("LeaksTemporary", leaks), vector([1, 2]), mode=DebugMode())


def test_immortal_and_shared_objects_are_left_out():
    from opweave.compile._debug_refcount import has_real_refcount

    assert not any(has_real_refcount(v) for v in (None, True, 3, (), "", int, Ellipsis))
    assert has_real_refcount(vector([1])) and has_real_refcount(10**20)

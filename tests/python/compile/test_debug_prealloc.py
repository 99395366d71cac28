"""The preallocated outputs DebugMode offers (compile/_debug_prealloc.py),
for 0-d outputs in particular: every kind offers a 0-d ndarray of the
output's dtype, never a NumPy scalar."""

from __future__ import annotations

import numpy as np
import pytest
from support.debug_ops import COnlyOp, vector

import opweave
import opweave.tensor as pt
from opweave.compile._debug_prealloc import KINDS, offered_outputs
from opweave.compile.debugmode import BadThunkOutput, DebugMode


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_every_kind_offers_a_0d_array_of_the_dtype(dtype):
    reference = np.asarray(3, dtype=dtype)
    variable = pt.TensorType(dtype, shape=())()
    offered = dict(offered_outputs(KINDS, [reference], [variable], None))
    # wrong_size has nothing to vary on a 0-d output.
    assert set(offered) == {"previous", "c_contiguous", "f_contiguous", "strided"}
    for label, (value,) in offered.items():
        assert type(value) is np.ndarray, label
        assert value.shape == () and value.dtype == np.dtype(dtype), label
        assert value.flags.writeable, label
    strided = offered["strided"][0]
    assert strided.base is not None  # a view, as for other ranks
    assert not np.shares_memory(strided, reference)


def test_strided_offers_views_with_gaps_for_other_ranks():
    reference = np.zeros((2, 3), dtype="float32")
    variable = pt.TensorType("float32", shape=(None, None))()
    ((label, (value,)),) = list(offered_outputs(["strided"], [reference], [variable], None))
    assert label == "strided" and type(value) is np.ndarray
    assert value.shape == (2, 3) and value.dtype == np.float32
    assert value.strides == (2 * 6 * 4, 2 * 4)  # every other row and column of a 4x6


# Sums a float64 vector into a 0-d float64 output, writing into the offered
# output when it is a 0-d float64 array (ASSIGN: "=" is correct, "+=" assumes
# a zeroed buffer).
SUM_INTO_0D = """
{
    if (%%(z)s == NULL || PyArray_NDIM(%%(z)s) != 0 || PyArray_TYPE(%%(z)s) != NPY_FLOAT64) {
        Py_XDECREF(%%(z)s);
        %%(z)s = (PyArrayObject*)PyArray_ZEROS(0, NULL, NPY_FLOAT64, 0);
        if (!%%(z)s) %%(fail)s
    }
    double total = 0;
    for (npy_intp i = 0; i < PyArray_DIMS(%%(x)s)[0]; ++i)
        total += *(double*)PyArray_GETPTR1(%%(x)s, i);
    *(double*)PyArray_DATA(%%(z)s) %s total;
}
"""


@pytest.mark.parametrize("kind", ["strided", "c_contiguous", "f_contiguous", "previous"])
def test_c_code_reuses_the_offered_0d_array(kind):
    op = COnlyOp("SumInto0d", SUM_INTO_0D % "=", out_ndim=0)
    x = pt.dvector("x")
    f = opweave.function([x], op(x), mode=DebugMode(check_preallocated_output=[kind]))
    for values, total in (([1, 2, 3.5], 6.5), ([4], 4.0)):
        result = f(vector(values))
        assert type(result) is np.ndarray and result.shape == () and result == total


@pytest.mark.parametrize("kind", ["strided", "c_contiguous", "f_contiguous"])
def test_a_0d_op_assuming_a_zeroed_buffer_is_caught(kind):
    # Caught only if the offered storage is a 0-d array the C code writes into.
    op = COnlyOp("SumAssumesZeroed0d", SUM_INTO_0D % "+=", out_ndim=0)
    x = pt.dvector("x")
    assert opweave.function([x], op(x), mode=DebugMode())(vector([1, 2])) == 3
    f = opweave.function([x], op(x), mode=DebugMode(check_preallocated_output=[kind]))
    with pytest.raises(BadThunkOutput) as caught:
        f(vector([1, 2]))
    assert caught.value.thunk2 == f"c_code with preallocated {kind} output"
    assert caught.value.val1 == 3 and np.isnan(caught.value.val2)

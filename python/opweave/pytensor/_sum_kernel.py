# mypy: disable-error-code="import-not-found"
"""``Sum`` of a whole float64 array: NumPy's pairwise sum, in vectors.

PyTensor's C code for ``Sum`` adds the elements one after the other: each
addition waits for the one before (about 0.8 µs for 900 elements, the
largest node of a hierarchical model's gradient after its loops). Its
``perform`` calls ``np.add.reduce`` on a C-ordered copy, which NumPy sums
pairwise: blocks of at most 128 elements, each added into eight partial
sums (element ``i`` of a block into sum ``i % 8``) that are then combined
as ``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))``, the leftover
elements after them in order; longer runs are split in two halves (the
first a multiple of 8 long) whose sums are added; the result is
``0.0 + `` that sum. The elements are taken in the order of ``perform``'s
copy (``np.array(x)``, which keeps the input's memory order: a
Fortran-ordered matrix is summed column by column).

This kernel computes exactly that, so its values are bitwise equal to
``perform``'s (and to ``np.sum``): a different order from PyTensor's C code,
whose in-order sum is less accurate (its rounding error grows with the
length, the pairwise sum's with its logarithm). The eight partial sums are
two 4-wide vectors (GCC's and clang's vector extension: each lane is one
IEEE sum, as in NumPy's scalar code), so the block's additions no longer
wait for each other. An input that is neither C- nor Fortran-contiguous is
first copied as ``perform`` copies it. Declines (PyTensor's C code runs):
other dtypes, a reduction over some axes only, a 0-d input.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._kernel_base import Kernel

__all__ = ["SumKernel", "sum_kernel"]

# The pairwise order of NumPy's float64 add.reduce (its loop for a
# contiguous run), with the eight partial sums of a block in two vectors.
_PAIRWISE = r"""
typedef double opweave_sum_v4 __attribute__((vector_size(32)));

static double opweave_pairwise_sum(const double* a, npy_intp n)
{
    if (n < 8) {
        double sum = 0.0;
        for (npy_intp i = 0; i < n; ++i) {
            sum += a[i];
        }
        return sum;
    }
    if (n > 128) {
        npy_intp half = n / 2;
        half -= half % 8;
        return opweave_pairwise_sum(a, half) + opweave_pairwise_sum(a + half, n - half);
    }
    opweave_sum_v4 low, high, next;
    memcpy(&low, a, sizeof low);
    memcpy(&high, a + 4, sizeof high);
    npy_intp i = 8;
    for (; i < n - n % 8; i += 8) {
        memcpy(&next, a + i, sizeof next);
        low += next;
        memcpy(&next, a + i + 4, sizeof next);
        high += next;
    }
    double sum = ((low[0] + low[1]) + (low[2] + low[3])) +
                 ((high[0] + high[1]) + (high[2] + high[3]));
    for (; i < n; ++i) {
        sum += a[i];
    }
    return sum;
}
"""

_SUM = r"""
{
    PyArrayObject* ordered = %(x)s;
    if (!PyArray_IS_C_CONTIGUOUS(%(x)s) && !PyArray_IS_F_CONTIGUOUS(%(x)s)) {
        ordered = (PyArrayObject*)PyArray_NewCopy(%(x)s, NPY_KEEPORDER);
        if (ordered == NULL) {
            %(fail)s
        }
    }
    /* in memory order: perform's copy keeps the input's axis order */
    const double total = 0.0 + opweave_pairwise_sum(
        (const double*)PyArray_DATA(ordered), PyArray_SIZE(ordered));
    if (ordered != %(x)s) {
        Py_DECREF(ordered);
    }
    if (!(%(z)s != NULL && PyArray_NDIM(%(z)s) == 0 && PyArray_TYPE(%(z)s) == NPY_FLOAT64 &&
          PyArray_ISWRITEABLE(%(z)s))) {
        Py_XDECREF(%(z)s);
        %(z)s = (PyArrayObject*)PyArray_EMPTY(0, NULL, NPY_FLOAT64, 0);
        if (%(z)s == NULL) {
            %(fail)s
        }
    }
    *(double*)PyArray_DATA(%(z)s) = total;
}
"""


class SumKernel(Kernel):
    """``Sum`` over every axis of a float64 array, as ``np.add.reduce``."""

    def c_support_code(self, **kwargs: Any) -> str:
        """The pairwise sum (one definition per module)."""
        return _PAIRWISE

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The sum of the input in the order perform sums it into a kept or new 0-d result."""
        return _SUM % {"x": inputs[0], "z": outputs[0], "fail": sub["fail"]}


def sum_kernel(node: Any) -> SumKernel | None:
    """A SumKernel for a ``Sum`` of every axis of a float64 array (float64
    accumulator and result), or None (PyTensor's C code runs)."""
    op = node.op
    props = ("scalar_op", "axis", "dtype", "acc_dtype", "upcast_discrete_output")
    if tuple(getattr(type(op), "__props__", ())) != props:
        return None
    (x,), (z,) = node.inputs, node.outputs
    ndim = x.type.ndim
    if ndim == 0 or x.type.dtype != "float64" or z.type.dtype != "float64":
        return None
    if op.acc_dtype not in (None, "float64"):
        return None
    if op.axis is not None and sorted(op.axis) != list(range(ndim)):
        return None
    if type(op.scalar_op).__name__ != "Add":
        return None
    return SumKernel(op)

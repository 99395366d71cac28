"""VectorTimesVector: the second C op of "Extending PyTensor with a C Op",
with c_support_code, c_support_code_apply and inputs of any dtype.

The op is the tutorial's code with ``pytensor`` replaced by ``opweave`` in the
imports; only ``perform`` (for ``mode="py"``) is added. Run it:
``python vector_times_vector.py``.
"""

from __future__ import annotations

import numpy

import opweave
import opweave.scalar
import opweave.tensor.type
from opweave.graph.basic import Apply
from opweave.link.c.op import COp


class VectorTimesVector(COp):
    __props__ = ()

    def make_node(self, x, y):
        # Validate the inputs' type
        if x.type.ndim != 1:
            raise TypeError("x must be a 1-d vector")
        if y.type.ndim != 1:
            raise TypeError("y must be a 1-d vector")

        # Create an output variable of the same type as x
        output_var = opweave.tensor.type.TensorType(
            dtype=opweave.scalar.upcast(x.dtype, y.dtype), shape=(None,)
        )()

        return Apply(self, [x, y], [output_var])

    def perform(self, node, inputs, output_storage):
        # Added for mode="py"; the tutorial defines only the C code.
        x, y = inputs
        if x.shape[0] != y.shape[0]:
            raise ValueError(
                "Shape mismatch : x.shape[0] and y.shape[0] should match but "
                f"x.shape[0] == {x.shape[0]} and y.shape[0] == {y.shape[0]}"
            )
        output_storage[0][0] = (x * y).astype(node.outputs[0].dtype)

    def c_code_cache_version(self):
        return (1, 0, 2)

    def c_support_code(self, **kwargs):
        c_support_code = """
        bool vector_same_shape(PyArrayObject* arr1,
                               PyArrayObject* arr2)
        {
            return (PyArray_DIMS(arr1)[0] == PyArray_DIMS(arr2)[0]);
        }
        """

        return c_support_code

    def c_support_code_apply(self, node, name):
        dtype_x = node.inputs[0].dtype
        dtype_y = node.inputs[1].dtype
        dtype_z = node.outputs[0].dtype

        c_support_code = """
        void vector_elemwise_mult_%(name)s(npy_%(dtype_x)s* x_ptr,
                    int x_str, npy_%(dtype_y)s* y_ptr, int y_str,
                    npy_%(dtype_z)s* z_ptr, int z_str, int nbElements)
        {
            for (int i=0; i < nbElements; i++){
                z_ptr[i * z_str] = x_ptr[i * x_str] * y_ptr[i * y_str];
            }
        }
        """

        return c_support_code % locals()

    def c_code(self, node, name, inp, out, sub):
        x, y = inp
        (z,) = out

        dtype_x = node.inputs[0].dtype
        dtype_y = node.inputs[1].dtype
        dtype_z = node.outputs[0].dtype

        itemsize_x = numpy.dtype(dtype_x).itemsize
        itemsize_y = numpy.dtype(dtype_y).itemsize
        itemsize_z = numpy.dtype(dtype_z).itemsize

        typenum_z = numpy.dtype(dtype_z).num

        fail = sub["fail"]

        c_code = """
        // Validate that the inputs have the same shape
        if ( !vector_same_shape(%(x)s, %(y)s))
        {
            PyErr_Format(PyExc_ValueError, "Shape mismatch : "
                        "x.shape[0] and y.shape[0] should match but "
                        "x.shape[0] == %%i and y.shape[0] == %%i",
                        PyArray_DIMS(%(x)s)[0], PyArray_DIMS(%(y)s)[0]);
            %(fail)s;
        }

        // Validate that the output storage exists and has the same
        // dimension as x.
        if (NULL == %(z)s || !(vector_same_shape(%(x)s, %(z)s)))
        {
            /* Reference received to invalid output variable.
            Decrease received reference's ref count and allocate new
            output variable */
            Py_XDECREF(%(z)s);
            %(z)s = (PyArrayObject*)PyArray_EMPTY(1,
                                                PyArray_DIMS(%(x)s),
                                                %(typenum_z)s,
                                                0);

            if (!%(z)s) {
                %(fail)s;
            }
        }

        // Perform the vector elemwise multiplication
        vector_elemwise_mult_%(name)s(
                                (npy_%(dtype_x)s*)PyArray_DATA(%(x)s),
                                PyArray_STRIDES(%(x)s)[0] / %(itemsize_x)s,
                                (npy_%(dtype_y)s*)PyArray_DATA(%(y)s),
                                PyArray_STRIDES(%(y)s)[0] / %(itemsize_y)s,
                                (npy_%(dtype_z)s*)PyArray_DATA(%(z)s),
                                PyArray_STRIDES(%(z)s)[0] / %(itemsize_z)s,
                                PyArray_DIMS(%(x)s)[0]);
        """

        return c_code % locals()


def build(mode: str = "C"):
    """Three graphs on VectorTimesVector: float64 * float64; two applies with
    different dtypes in one graph (int32 * float32 and float64 * float64);
    and two chained applies. Returns the three compiled functions."""
    op = VectorTimesVector()
    x, y = opweave.tensor.dvector("x"), opweave.tensor.dvector("y")
    single = opweave.function([x, y], op(x, y), mode=mode)
    i, f = opweave.tensor.ivector("i"), opweave.tensor.fvector("f")
    mixed = opweave.function([i, f, x, y], [op(i, f), op(x, y)], mode=mode)
    w = opweave.tensor.dvector("w")
    chained = opweave.function([x, y, w], op(op(x, y), w), mode=mode)
    return single, mixed, chained


def main() -> None:
    """Builds and runs the example in C and in Python, and shows the error a
    shape mismatch raises."""
    a = numpy.array([1.0, 2.0, 3.0])
    b = numpy.array([4.0, 5.0, 6.0])
    for mode in ("C", "py"):
        single, mixed, chained = build(mode)
        print(f"{mode:>2}: x*y   =", single(a, b))
        ints, floats = numpy.array([1, 2, 3], dtype="int32"), numpy.array([0.5] * 3, "float32")
        print(f"{mode:>2}: mixed =", mixed(ints, floats, a, b))
        print(f"{mode:>2}: x*y*w =", chained(a, b, a))
    try:
        single(a, b[:2])
    except ValueError as error:
        print("ValueError:", error)


if __name__ == "__main__":
    main()

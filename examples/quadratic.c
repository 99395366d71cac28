#section support_code_apply

/* y = a*x*x + b*x + c, element by element, for a float64 matrix x. The
   coefficients come from the op's params: one struct, read at run time, so
   one compiled module serves every (a, b, c). */
int APPLY_SPECIFIC(compute_quadratic)(PyArrayObject* X, PyArrayObject** Y,
                                      PARAMS_TYPE* coeff)
{
    const DTYPE_PARAM_a a = coeff->a;
    const DTYPE_PARAM_b b = coeff->b;
    const DTYPE_PARAM_c c = coeff->c;

    Py_XDECREF(*Y);
    *Y = (PyArrayObject*)PyArray_EMPTY(PyArray_NDIM(X), PyArray_DIMS(X),
                                       TYPENUM_INPUT_0, 0);
    if (*Y == NULL) {
        return 1;  /* PyArray_EMPTY set a MemoryError */
    }
    if (PyArray_CopyInto(*Y, X) != 0) {
        return 1;
    }
    DTYPE_OUTPUT_0* y = (DTYPE_OUTPUT_0*)PyArray_DATA(*Y);
    for (npy_intp i = 0, n = PyArray_SIZE(*Y); i < n; ++i) {
        const DTYPE_OUTPUT_0 x = y[i];
        y[i] = a * x * x + b * x + c;
    }
    return 0;
}

#section support_code_apply

/* z = a copy of x whose first element is a sum near INT_MAX, to which 100 is
   added one at a time: a signed overflow, for the UBSan test. */
int APPLY_SPECIFIC(overflowing_copy)(PyArrayObject* x, PyArrayObject** z)
{
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_CORDER);
    if (*z == NULL) {
        return 1;
    }
    int total = 2147483600 + (int)PyArray_SIZE(*z);
    for (int i = 0; i < 100; ++i) {
        total += 1; /* the overflow */
    }
    ((npy_int32*)PyArray_DATA(*z))[0] = total;
    return 0;
}

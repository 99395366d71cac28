/* opweave: the API of opweave's shared kernels for PyTensor ops (native/kernels.cpp).
 *
 * Graph modules do not include this file: opweave puts its text in their
 * support code (it has no preprocessor line, so it never stops a node's
 * export) and fetches the table once per process with PyCapsule_Import of
 * "opweave.pytensor._kernel_library.API_v1". A change to this table is a new
 * version: a new struct name and capsule name.
 *
 * Every function is called with the GIL held. One that returns int returns 0
 * on success, -1 with a Python exception set, and (where it says so) 1 when
 * its fast path does not apply: no exception is set and nothing was changed,
 * and the caller takes NumPy's general path. An `out` argument holds NULL or
 * the caller's reference to last call's result: on success it holds a new
 * reference (last call's array reused where the function says so, else
 * released); on failure it is unchanged or NULL. */
struct opweave_kernels_v1 {
    int version; /* 1 */
    /* PyTensor's Cholesky.perform: LAPACK's potrf of x in the precision of
     * type_num (NPY_FLOAT32 or NPY_FLOAT64), the other triangle zeroed, all
     * NaN where the factorisation fails. */
    int (*cholesky)(PyArrayObject* x, int lower, int overwrite_a, int type_num,
                    PyArrayObject** out);
    /* SolveTriangular.perform: LAPACK's trtrs. */
    int (*solve_triangular)(PyArrayObject* a, PyArrayObject* b, int lower, int unit_diagonal,
                            int overwrite_b, int type_num, PyArrayObject** out);
    /* CholeskySolve.perform: LAPACK's potrs. */
    int (*cho_solve)(PyArrayObject* c, PyArrayObject* b, int lower, int overwrite_b,
                     int type_num, PyArrayObject** out);
    /* x[idx[0], ..., idx[k-1]] for k integer arrays of one shape: a gather
     * into *out (last call's array reused when its shape and dtype fit).
     * Returns 1 (NumPy's path) for other indices or an index out of bounds,
     * so that NumPy raises its own error. */
    int (*gather)(PyArrayObject* x, int k, PyArrayObject* const* idx, PyArrayObject** out);
    /* x[idx[0], ..., idx[k-1]] = y (accumulate 0) or np.add.at(x, idx, y)
     * (accumulate 1), in place in x, for k integer arrays of one shape and y
     * of x's dtype and of the indexed shape (or 0-d). Returns 1 (NumPy's
     * path) otherwise, before any write. */
    int (*scatter)(PyArrayObject* x, PyArrayObject* y, int k, PyArrayObject* const* idx,
                   int accumulate);
    /* NumPy's x[key] into *out (copied when copy is set), always an array. */
    int (*get_item)(PyArrayObject* x, PyObject* key, int copy, PyArrayObject** out);
    /* In place in x: x[key] = y (mode 0), x[key] += y (mode 1) or
     * np.add.at(x, key, y) (mode 2), as NumPy does them. */
    int (*set_item)(PyArrayObject* x, PyObject* key, PyObject* y, int mode);
    /* MatrixInverse.perform: np.linalg.inv (NumPy's gufunc, its errstate:
     * LinAlgError("Singular matrix")), cast to type_num. */
    int (*matrix_inverse)(PyArrayObject* x, int type_num, PyArrayObject** out);
    /* Det.perform: np.asarray(np.linalg.det(x)) in type_num; any failure is
     * ValueError("Failed to compute determinant", x). */
    int (*det)(PyArrayObject* x, int type_num, PyArrayObject** out);
    /* SLogDet.perform: np.linalg.slogdet(x) as two 0-d arrays. */
    int (*slogdet)(PyArrayObject* x, int type_num, PyArrayObject** sign,
                   PyArrayObject** logdet);
    /* Blockwise: the broadcast shape of the first batch_ndim axes of n
     * arrays into `shape` (NumPy's error where they do not broadcast). */
    int (*batch_shape)(int n, PyArrayObject* const* arrays, int batch_ndim, npy_intp* shape);
    /* A view of x's core axes at the batch position `index` (an axis of
     * length 1 is broadcast), with x as its base; NULL on failure. */
    PyArrayObject* (*core_view)(PyArrayObject* x, int batch_ndim, const npy_intp* index);
    /* Stores `core` at flat batch position `flat` of *out, allocated (of
     * the batch shape and core's shape and dtype) when flat is 0, as
     * NumPy's `out[index] = core`. */
    int (*store_core)(PyArrayObject** out, int batch_ndim, const npy_intp* batch, npy_intp flat,
                      PyArrayObject* core);
};

/* The table, imported once per process (and per translation unit): NULL with
 * a Python exception set when it cannot be. */
__attribute__((unused)) static inline const struct opweave_kernels_v1* opweave_kernels_import(void)
{
    static const struct opweave_kernels_v1* table = NULL;
    if (table != NULL) {
        return table;
    }
    PyObject* module = PyImport_ImportModule("opweave.pytensor._kernel_library");
    if (module == NULL) {
        return NULL;
    }
    PyObject* capsule = PyObject_GetAttrString(module, "API_v1");
    Py_DECREF(module);
    if (capsule == NULL) {
        return NULL;
    }
    table = (const struct opweave_kernels_v1*)PyCapsule_GetPointer(
        capsule, "opweave.pytensor._kernel_library.API_v1");
    Py_DECREF(capsule);
    return table;
}

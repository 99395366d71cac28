// opweave's shared kernels: Cholesky, SolveTriangular and CholeskySolve.
// LAPACK is SciPy's: the function pointers scipy.linalg.cython_lapack
// exports, the routines scipy.linalg.get_lapack_funcs calls, so values are
// bitwise those of PyTensor's perform. Nothing is linked at build time.
namespace {

using potrf_fn = void(char*, int*, void*, int*, int*);
using trtrs_fn = void(char*, char*, char*, int*, int*, void*, int*, void*, int*, int*);
using potrs_fn = void(char*, int*, int*, void*, int*, void*, int*, int*);

// LAPACK's routines in single ([0]) and double ([1]) precision.
potrf_fn* g_potrf[2];
trtrs_fn* g_trtrs[2];
potrs_fn* g_potrs[2];

int precision(int type_num) { return type_num == NPY_FLOAT32 ? 0 : 1; }

int lapack_size(npy_intp n, int* value) {
    if (n > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "array too large for LAPACK's 32-bit sizes");
        return -1;
    }
    *value = static_cast<int>(n);
    return 0;
}

// `a` in Fortran order and the given precision: `a` itself where it already
// is (and is writeable, when `overwrite`), else a copy, as f2py's wrappers
// take their arguments.
PyArrayObject* fortran(PyArrayObject* a, int type_num, bool overwrite, bool writes) {
    const bool fits = PyArray_IS_F_CONTIGUOUS(a) && PyArray_TYPE(a) == type_num &&
                      PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a);
    if (fits && (!writes || (overwrite && PyArray_ISWRITEABLE(a)))) {
        Py_INCREF(a);
        return a;
    }
    const int flags = NPY_ARRAY_F_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST |
                      (writes ? NPY_ARRAY_WRITEABLE | NPY_ARRAY_ENSURECOPY : 0);
    return reinterpret_cast<PyArrayObject*>(
        PyArray_FromArray(a, PyArray_DescrFromType(type_num), flags));
}

void fill_nan(PyArrayObject* a) {  // a: contiguous, of one precision
    const npy_intp n = PyArray_SIZE(a);
    if (PyArray_TYPE(a) == NPY_FLOAT32) {
        auto* data = static_cast<float*>(PyArray_DATA(a));
        for (npy_intp i = 0; i < n; ++i) {
            data[i] = NAN;
        }
    } else {
        auto* data = static_cast<double*>(PyArray_DATA(a));
        for (npy_intp i = 0; i < n; ++i) {
            data[i] = NAN;
        }
    }
}

// np.empty_like(like, dtype=type_num).
int empty_like(PyArrayObject* like, int type_num, PyArrayObject** out) {
    return give(reinterpret_cast<PyArrayObject*>(PyArray_NewLikeArray(
                    like, NPY_KEEPORDER, PyArray_DescrFromType(type_num), 1)),
                out);
}

// The triangle LAPACK leaves untouched, zeroed (scipy's potrf with clean=1).
template <typename T>
void clean(T* c, npy_intp n, bool lower) {
    for (npy_intp j = 0; j < n; ++j) {
        for (npy_intp i = 0; i < n; ++i) {
            if (lower ? i < j : i > j) {
                c[i + j * n] = T(0);
            }
        }
    }
}

int cholesky(PyArrayObject* x, int lower, int overwrite_a, int type_num, PyArrayObject** out) {
    if (PyArray_SIZE(x) == 0) {
        return empty_like(x, type_num, out);
    }
    const npy_intp* dims = PyArray_DIMS(x);
    if (dims[0] != dims[1]) {
        PyErr_Format(PyExc_ValueError,
                     "Input array is expected to be square but has the shape: (%zd, %zd).",
                     static_cast<Py_ssize_t>(dims[0]), static_cast<Py_ssize_t>(dims[1]));
        return -1;
    }
    int n = 0;
    if (lapack_size(dims[0], &n) != 0) {
        return -1;
    }
    // perform: an overwritable C-ordered input is factored as its transpose.
    const bool transposed = overwrite_a && PyArray_IS_C_CONTIGUOUS(x);
    const bool low = transposed ? !lower : lower;
    PyArrayObject* source = x;
    if (transposed) {
        source = reinterpret_cast<PyArrayObject*>(PyArray_Transpose(x, nullptr));
        if (source == nullptr) {
            return -1;
        }
    }
    PyArrayObject* c = fortran(source, type_num, overwrite_a || transposed, true);
    if (transposed) {
        Py_DECREF(source);
    }
    if (c == nullptr) {
        return -1;
    }
    char uplo = low ? 'L' : 'U';
    int lda = n;
    int info = 0;
    g_potrf[precision(type_num)](&uplo, &n, PyArray_DATA(c), &lda, &info);
    if (type_num == NPY_FLOAT32) {
        clean(static_cast<float*>(PyArray_DATA(c)), n, low);
    } else {
        clean(static_cast<double*>(PyArray_DATA(c)), n, low);
    }
    if (info != 0) {
        fill_nan(c);
        return give(c, out);
    }
    if (!transposed) {
        return give(c, out);
    }
    PyArrayObject* result = reinterpret_cast<PyArrayObject*>(PyArray_Transpose(c, nullptr));
    Py_DECREF(c);
    return give(result, out);
}

// perform's messages name the shapes as Python prints them.
int shapes_error(const char* format, PyArrayObject* a, PyArrayObject* b) {
    PyObject* a_shape = PyObject_GetAttrString(reinterpret_cast<PyObject*>(a), "shape");
    PyObject* b_shape = PyObject_GetAttrString(reinterpret_cast<PyObject*>(b), "shape");
    if (a_shape != nullptr && b_shape != nullptr) {
        PyErr_Format(PyExc_ValueError, format, a_shape, b_shape);
    }
    Py_XDECREF(a_shape);
    Py_XDECREF(b_shape);
    return -1;
}

int right_hand_sides(PyArrayObject* b, int* n, int* nrhs) {
    if (lapack_size(PyArray_DIM(b, 0), n) != 0) {
        return -1;
    }
    return lapack_size(PyArray_NDIM(b) == 2 ? PyArray_DIM(b, 1) : 1, nrhs);
}

// The solve shared by trtrs and potrs: `solve(matrix, x, n, nrhs)` on
// `matrix` in Fortran order and a Fortran copy of b (b itself where it may
// be overwritten), x all NaN where LAPACK reports a failure; *out = x.
template <typename Solve>
int solve_fortran(PyArrayObject* matrix_source, PyArrayObject* b, int overwrite_b, int type_num,
                  PyArrayObject** out, Solve solve) {
    if (PyArray_SIZE(b) == 0) {
        return empty_like(b, type_num, out);
    }
    int n = 0;
    int nrhs = 0;
    if (right_hand_sides(b, &n, &nrhs) != 0) {
        return -1;
    }
    PyArrayObject* matrix = fortran(matrix_source, type_num, false, false);
    if (matrix == nullptr) {
        return -1;
    }
    PyArrayObject* x = fortran(b, type_num, overwrite_b != 0, true);
    if (x == nullptr) {
        Py_DECREF(matrix);
        return -1;
    }
    const int info = solve(PyArray_DATA(matrix), PyArray_DATA(x), n, nrhs);
    Py_DECREF(matrix);
    if (info != 0) {
        fill_nan(x);
    }
    return give(x, out);
}

int solve_triangular(PyArrayObject* a, PyArrayObject* b, int lower, int unit_diagonal,
                     int overwrite_b, int type_num, PyArrayObject** out) {
    if (PyArray_DIM(a, 0) != PyArray_DIM(a, 1)) {
        PyErr_SetString(PyExc_ValueError, "expected square matrix");
        return -1;
    }
    if (PyArray_DIM(a, 0) != PyArray_DIM(b, 0)) {
        return shapes_error("shapes of a %R and b %R are incompatible", a, b);
    }
    // perform: a system whose matrix is not in Fortran order is solved as
    // its transpose's.
    const bool as_is = PyArray_IS_F_CONTIGUOUS(a);
    char uplo = (as_is ? lower : !lower) ? 'L' : 'U';
    char trans = as_is ? 'N' : 'T';
    char diag = unit_diagonal ? 'U' : 'N';
    PyArrayObject* source = a;
    if (!as_is) {
        source = reinterpret_cast<PyArrayObject*>(PyArray_Transpose(a, nullptr));
        if (source == nullptr) {
            return -1;
        }
    }
    trtrs_fn* trtrs = g_trtrs[precision(type_num)];
    const int done = solve_fortran(
        source, b, overwrite_b, type_num, out, [&](void* matrix, void* x, int n, int nrhs) {
            int lda = n;
            int ldb = n;
            int info = 0;
            trtrs(&uplo, &trans, &diag, &n, &nrhs, matrix, &lda, x, &ldb, &info);
            return info;
        });
    if (!as_is) {
        Py_DECREF(source);
    }
    return done;
}

int cho_solve(PyArrayObject* c, PyArrayObject* b, int lower, int overwrite_b, int type_num,
              PyArrayObject** out) {
    if (PyArray_DIM(c, 0) != PyArray_DIM(c, 1)) {
        PyErr_SetString(PyExc_ValueError, "The factored matrix c is not square.");
        return -1;
    }
    if (PyArray_DIM(c, 1) != PyArray_DIM(b, 0)) {
        return shapes_error("incompatible dimensions (%R and %R)", c, b);
    }
    char uplo = lower ? 'L' : 'U';
    potrs_fn* potrs = g_potrs[precision(type_num)];
    return solve_fortran(c, b, overwrite_b, type_num, out,
                         [&](void* matrix, void* x, int n, int nrhs) {
                             int lda = n;
                             int ldb = n;
                             int info = 0;
                             potrs(&uplo, &n, &nrhs, matrix, &lda, x, &ldb, &info);
                             return info;
                         });
}

template <typename F>
int lapack(PyObject* capi, const char* name, F** slot) {
    PyObject* capsule = PyDict_GetItemString(capi, name);  // borrowed
    if (capsule == nullptr || !PyCapsule_CheckExact(capsule)) {
        PyErr_Format(PyExc_ImportError, "scipy.linalg.cython_lapack exports no %s", name);
        return -1;
    }
    void* pointer = PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule));
    if (pointer == nullptr) {
        return -1;
    }
    *slot = reinterpret_cast<F*>(pointer);
    return 0;
}

int find_lapack() {
    PyObject* capi = attribute("scipy.linalg.cython_lapack", "__pyx_capi__");
    if (capi == nullptr) {
        return -1;
    }
    int found = -1;
    if (!PyDict_Check(capi)) {
        PyErr_SetString(PyExc_ImportError, "scipy.linalg.cython_lapack.__pyx_capi__ is not a dict");
    } else if (lapack(capi, "spotrf", &g_potrf[0]) == 0 && lapack(capi, "dpotrf", &g_potrf[1]) == 0 &&
               lapack(capi, "strtrs", &g_trtrs[0]) == 0 && lapack(capi, "dtrtrs", &g_trtrs[1]) == 0 &&
               lapack(capi, "spotrs", &g_potrs[0]) == 0 && lapack(capi, "dpotrs", &g_potrs[1]) == 0) {
        found = 0;
    }
    Py_DECREF(capi);
    return found;
}

}  // namespace

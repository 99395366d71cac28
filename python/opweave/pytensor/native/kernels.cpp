// opweave: the code of opweave's PyTensor kernels that does not depend on the
// node (LAPACK calls, advanced-indexing loops), compiled once per machine
// through opweave's module cache (opweave/pytensor/_kernel_library.py) and
// called by graph modules through the table of kernel_api.h.
//
// LAPACK is SciPy's: the function pointers scipy.linalg.cython_lapack
// exports, the routines scipy.linalg.get_lapack_funcs calls, so values are
// bitwise those of PyTensor's perform. Nothing is linked at build time.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

// OPWEAVE_KERNEL_API (kernel_api.h's text goes here)

namespace {

using potrf_fn = void(char*, int*, void*, int*, int*);
using trtrs_fn = void(char*, char*, char*, int*, int*, void*, int*, void*, int*, int*);
using potrs_fn = void(char*, int*, int*, void*, int*, void*, int*, int*);

// LAPACK's routines in single ([0]) and double ([1]) precision.
potrf_fn* g_potrf[2];
trtrs_fn* g_trtrs[2];
potrs_fn* g_potrs[2];
PyObject* g_add_at;  // np.add.at, owned for the process's life

int precision(int type_num) { return type_num == NPY_FLOAT32 ? 0 : 1; }

// *out = result (stolen), releasing what *out held.
int give(PyArrayObject* result, PyArrayObject** out) {
    if (result == nullptr) {
        return -1;
    }
    Py_XDECREF(*out);
    *out = result;
    return 0;
}

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

// --- advanced indexing ---------------------------------------------------

constexpr int k_max_indices = NPY_MAXDIMS;

bool integer_index(PyArrayObject* idx) {
    const int t = PyArray_TYPE(idx);
    // uint64 past the largest intp would wrap: NumPy's path.
    return PyTypeNum_ISINTEGER(t) && t != NPY_UINT64 && t != NPY_ULONGLONG &&
           (t != NPY_ULONG || sizeof(long) < 8) && PyArray_ISNOTSWAPPED(idx);
}

npy_intp read_index(const char* p, int type_num) {
    switch (type_num) {
        case NPY_BYTE: return *reinterpret_cast<const npy_byte*>(p);
        case NPY_UBYTE: return *reinterpret_cast<const npy_ubyte*>(p);
        case NPY_SHORT: return *reinterpret_cast<const npy_short*>(p);
        case NPY_USHORT: return *reinterpret_cast<const npy_ushort*>(p);
        case NPY_INT: return *reinterpret_cast<const npy_int*>(p);
        case NPY_UINT: return static_cast<npy_intp>(*reinterpret_cast<const npy_uint*>(p));
        case NPY_LONG: return static_cast<npy_intp>(*reinterpret_cast<const npy_long*>(p));
        case NPY_ULONG: return static_cast<npy_intp>(*reinterpret_cast<const npy_ulong*>(p));
        default: return static_cast<npy_intp>(*reinterpret_cast<const npy_longlong*>(p));
    }
}

// The index arrays as C-ordered arrays (references owned), all of one
// shape, of integers; the element offsets into `x` of the first k axes.
struct Indices {
    PyArrayObject* arrays[k_max_indices] = {};
    int k = 0;
    ~Indices() {
        for (int j = 0; j < k; ++j) {
            Py_XDECREF(arrays[j]);
        }
    }
    // 1: not of this form (or an index out of bounds), -1: an error.
    int take(PyArrayObject* x, int count, PyArrayObject* const* idx) {
        if (count < 1 || count > PyArray_NDIM(x)) {
            return 1;
        }
        for (int j = 0; j < count; ++j) {
            if (!integer_index(idx[j]) || !PyArray_SAMESHAPE(idx[0], idx[j])) {
                return 1;
            }
        }
        for (; k < count; ++k) {
            arrays[k] = reinterpret_cast<PyArrayObject*>(PyArray_FromArray(
                idx[k], nullptr, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED));
            if (arrays[k] == nullptr) {
                return -1;
            }
        }
        return 0;
    }
    npy_intp count() const { return PyArray_SIZE(arrays[0]); }
    // The byte offset of position p in x, or -1 when an index is out of bounds.
    npy_intp offset(PyArrayObject* x, npy_intp p) const {
        npy_intp at = 0;
        for (int j = 0; j < k; ++j) {
            PyArrayObject* a = arrays[j];
            npy_intp i = read_index(PyArray_BYTES(a) + p * PyArray_ITEMSIZE(a), PyArray_TYPE(a));
            const npy_intp size = PyArray_DIM(x, j);
            if (i < 0) {
                i += size;
            }
            if (i < 0 || i >= size) {
                return -1;
            }
            at += i * PyArray_STRIDE(x, j);
        }
        return at;
    }
};

// Copies a block of `nd` axes between `dense` (C order) and `strided` (an
// array's strides), into `dense` when `to_dense` is set, else out of it.
void copy_block(char* dense, char* strided, int nd, const npy_intp* shape,
                const npy_intp* strides, npy_intp itemsize, bool to_dense) {
    if (nd == 0) {
        if (to_dense) {
            std::memcpy(dense, strided, static_cast<size_t>(itemsize));
        } else {
            std::memcpy(strided, dense, static_cast<size_t>(itemsize));
        }
        return;
    }
    npy_intp inner = itemsize;
    for (int d = 1; d < nd; ++d) {
        inner *= shape[d];
    }
    for (npy_intp i = 0; i < shape[0]; ++i) {
        copy_block(dense + i * inner, strided + i * strides[0], nd - 1, shape + 1, strides + 1,
                   itemsize, to_dense);
    }
}

int gather(PyArrayObject* x, int count, PyArrayObject* const* idx, PyArrayObject** out) {
    if (PyDataType_REFCHK(PyArray_DESCR(x))) {
        return 1;
    }
    Indices indices;
    const int taken = indices.take(x, count, idx);
    if (taken != 0) {
        return taken;
    }
    const npy_intp n = indices.count();
    const int rest = PyArray_NDIM(x) - count;
    const npy_intp* rest_shape = PyArray_DIMS(x) + count;
    const npy_intp* rest_strides = PyArray_STRIDES(x) + count;
    for (npy_intp p = 0; p < n; ++p) {
        if (indices.offset(x, p) < 0) {
            return 1;  // NumPy raises its own IndexError
        }
    }
    const int index_nd = PyArray_NDIM(indices.arrays[0]);
    npy_intp shape[NPY_MAXDIMS];
    const int nd = index_nd + rest;
    if (nd > NPY_MAXDIMS) {
        return 1;
    }
    std::memcpy(shape, PyArray_DIMS(indices.arrays[0]), sizeof(npy_intp) * static_cast<size_t>(index_nd));
    std::memcpy(shape + index_nd, rest_shape, sizeof(npy_intp) * static_cast<size_t>(rest));
    PyArrayObject* z = *out;
    if (!(z != nullptr && PyArray_NDIM(z) == nd &&
          PyArray_CompareLists(PyArray_DIMS(z), shape, nd) && PyArray_IS_C_CONTIGUOUS(z) &&
          PyArray_ISWRITEABLE(z) && PyArray_EquivTypes(PyArray_DESCR(z), PyArray_DESCR(x)))) {
        Py_INCREF(PyArray_DESCR(x));
        z = reinterpret_cast<PyArrayObject*>(
            PyArray_NewFromDescr(&PyArray_Type, PyArray_DESCR(x), nd, shape, nullptr, nullptr, 0,
                                 nullptr));
        if (give(z, out) != 0) {
            return -1;
        }
    }
    const npy_intp itemsize = PyArray_ITEMSIZE(x);
    npy_intp block = itemsize;
    for (int d = 0; d < rest; ++d) {
        block *= rest_shape[d];
    }
    const char* base = PyArray_BYTES(x);
    char* dst = PyArray_BYTES(z);
    for (npy_intp p = 0; p < n; ++p) {
        const char* src = base + indices.offset(x, p);
        if (rest == 0 && itemsize == 8) {
            std::memcpy(dst + p * 8, src, 8);
        } else {
            copy_block(dst + p * block, const_cast<char*>(src), rest, rest_shape, rest_strides,
                       itemsize, true);
        }
    }
    return 0;
}

// The bytes an array's elements span.
void extent(PyArrayObject* a, const char** low, const char** high) {
    const char* lo = PyArray_BYTES(a);
    const char* hi = lo;
    for (int d = 0; d < PyArray_NDIM(a); ++d) {
        const npy_intp span = (PyArray_DIM(a, d) - 1) * PyArray_STRIDE(a, d);
        (span < 0 ? lo : hi) += span;
    }
    *low = lo;
    *high = hi + PyArray_ITEMSIZE(a);
}

bool overlap(PyArrayObject* a, PyArrayObject* b) {
    if (PyArray_SIZE(a) == 0 || PyArray_SIZE(b) == 0) {
        return false;
    }
    const char *a_low, *a_high, *b_low, *b_high;
    extent(a, &a_low, &a_high);
    extent(b, &b_low, &b_high);
    return a_low < b_high && b_low < a_high;
}

template <typename T>
void add_into(char* dst, const char* src) {
    T a;
    T b;
    std::memcpy(&a, dst, sizeof a);
    std::memcpy(&b, src, sizeof b);
    a = static_cast<T>(a + b);
    std::memcpy(dst, &a, sizeof a);
}

using add_fn = void(char*, const char*);

// x + y as NumPy's add loop computes it, for the types whose add is C's +.
add_fn* adder(int type_num) {
    switch (type_num) {
        case NPY_BYTE: return add_into<npy_byte>;
        case NPY_UBYTE: return add_into<npy_ubyte>;
        case NPY_SHORT: return add_into<npy_short>;
        case NPY_USHORT: return add_into<npy_ushort>;
        case NPY_INT: return add_into<npy_int>;
        case NPY_UINT: return add_into<npy_uint>;
        case NPY_LONG: return add_into<npy_long>;
        case NPY_ULONG: return add_into<npy_ulong>;
        case NPY_LONGLONG: return add_into<npy_longlong>;
        case NPY_ULONGLONG: return add_into<npy_ulonglong>;
        case NPY_FLOAT: return add_into<npy_float>;
        case NPY_DOUBLE: return add_into<npy_double>;
        default: return nullptr;
    }
}

int scatter(PyArrayObject* x, PyArrayObject* y, int count, PyArrayObject* const* idx,
            int accumulate) {
    if (PyDataType_REFCHK(PyArray_DESCR(x)) || !PyArray_ISWRITEABLE(x) ||
        !PyArray_ISNOTSWAPPED(x) || !PyArray_EquivTypes(PyArray_DESCR(x), PyArray_DESCR(y))) {
        return 1;
    }
    add_fn* add = accumulate ? adder(PyArray_TYPE(x)) : nullptr;
    if (accumulate && add == nullptr) {
        return 1;
    }
    Indices indices;
    const int taken = indices.take(x, count, idx);
    if (taken != 0) {
        return taken;
    }
    const int index_nd = PyArray_NDIM(indices.arrays[0]);
    const int rest = PyArray_NDIM(x) - count;
    const npy_intp* rest_shape = PyArray_DIMS(x) + count;
    const bool scalar = PyArray_NDIM(y) == 0;
    if (!scalar &&
        (PyArray_NDIM(y) != index_nd + rest ||
         !PyArray_CompareLists(PyArray_DIMS(y), PyArray_DIMS(indices.arrays[0]), index_nd) ||
         !PyArray_CompareLists(PyArray_DIMS(y) + index_nd, rest_shape, rest))) {
        return 1;
    }
    if (overlap(x, y)) {
        return 1;
    }
    for (int j = 0; j < count; ++j) {
        if (overlap(x, indices.arrays[j])) {
            return 1;
        }
    }
    const npy_intp n = indices.count();
    for (npy_intp p = 0; p < n; ++p) {
        if (indices.offset(x, p) < 0) {
            return 1;
        }
    }
    // y as a dense C-ordered block per position (a copy only when y is not).
    PyArrayObject* values = reinterpret_cast<PyArrayObject*>(
        PyArray_FromArray(y, nullptr, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED));
    if (values == nullptr) {
        return -1;
    }
    const npy_intp itemsize = PyArray_ITEMSIZE(x);
    npy_intp block = scalar ? 0 : itemsize;
    npy_intp elements = 1;
    for (int d = 0; d < rest; ++d) {
        block *= rest_shape[d];
        elements *= rest_shape[d];
    }
    const npy_intp* rest_strides = PyArray_STRIDES(x) + count;
    char* base = PyArray_BYTES(x);
    const char* src = PyArray_BYTES(values);
    for (npy_intp p = 0; p < n; ++p) {
        char* dst = base + indices.offset(x, p);
        const char* from = src + p * block;
        if (!accumulate && !scalar) {
            copy_block(const_cast<char*>(from), dst, rest, rest_shape, rest_strides, itemsize,
                       false);  // reads `from` only
            continue;
        }
        // Element by element, in C order: the rest axes' offsets counted out.
        for (npy_intp e = 0; e < elements; ++e) {
            npy_intp at = 0;
            npy_intp left = e;
            for (int d = rest - 1; d >= 0; --d) {
                at += (left % rest_shape[d]) * rest_strides[d];
                left /= rest_shape[d];
            }
            const char* value = scalar ? src : from + e * itemsize;
            if (accumulate) {
                add(dst + at, value);
            } else {
                std::memcpy(dst + at, value, static_cast<size_t>(itemsize));
            }
        }
    }
    Py_DECREF(values);
    return 0;
}

int get_item(PyArrayObject* x, PyObject* key, int copy, PyArrayObject** out) {
    PyObject* item = PyObject_GetItem(reinterpret_cast<PyObject*>(x), key);
    if (item == nullptr) {
        return -1;
    }
    PyObject* result = nullptr;
    if (!PyArray_Check(item)) {  // a NumPy scalar: a new 0-d array
        result = PyArray_FromAny(item, nullptr, 0, 0, NPY_ARRAY_ENSUREARRAY, nullptr);
    } else if (copy) {
        result = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(item), NPY_CORDER);
    } else {
        Py_INCREF(item);
        result = item;
    }
    Py_DECREF(item);
    return give(reinterpret_cast<PyArrayObject*>(result), out);
}

int set_item(PyArrayObject* x, PyObject* key, PyObject* y, int mode) {
    PyObject* target = reinterpret_cast<PyObject*>(x);
    if (mode == 0) {
        return PyObject_SetItem(target, key, y);
    }
    if (mode == 2) {
        PyObject* done = PyObject_CallFunctionObjArgs(g_add_at, target, key, y, nullptr);
        Py_XDECREF(done);
        return done == nullptr ? -1 : 0;
    }
    // x[key] += y: Python's augmented assignment on a subscript.
    PyObject* part = PyObject_GetItem(target, key);
    if (part == nullptr) {
        return -1;
    }
    PyObject* sum = PyNumber_InPlaceAdd(part, y);
    Py_DECREF(part);
    if (sum == nullptr) {
        return -1;
    }
    const int set = PyObject_SetItem(target, key, sum);
    Py_DECREF(sum);
    return set;
}

// --- NumPy's linear algebra (MatrixInverse, Det, SLogDet) -----------------

// NumPy's gufuncs (numpy.linalg._umath_linalg), np.linalg.LinAlgError, and
// for inv the error state np.linalg.inv sets: the context variable NumPy's
// errstate sets, and the value it sets it to (invalid -> call `singular`).
PyObject* g_inv;
PyObject* g_det;
PyObject* g_slogdet;
PyObject* g_linalg_error;
PyObject* g_errstate_var;
PyObject* g_inv_errstate;
PyObject* g_signature_d;   // {"signature": "d->d"}
PyObject* g_signature_dd;  // {"signature": "d->dd"}

PyObject* singular(PyObject*, PyObject*) {
    PyErr_SetString(g_linalg_error, "Singular matrix");
    return nullptr;
}

PyMethodDef k_singular = {"singular", singular, METH_VARARGS, "raises LinAlgError"};

// `value` (stolen) as a 0-d or n-d array of type_num, as .astype(copy=False).
PyArrayObject* as_type(PyObject* value, int type_num) {
    if (value == nullptr) {
        return nullptr;
    }
    PyObject* result = PyArray_FromAny(value, PyArray_DescrFromType(type_num), 0, 0,
                                       NPY_ARRAY_FORCECAST | NPY_ARRAY_ENSUREARRAY, nullptr);
    Py_DECREF(value);
    return reinterpret_cast<PyArrayObject*>(result);
}

bool square(PyArrayObject* x) {  // its last two axes (a stack of matrices)
    const int nd = PyArray_NDIM(x);
    if (PyArray_DIM(x, nd - 2) == PyArray_DIM(x, nd - 1)) {
        return true;
    }
    PyErr_SetString(g_linalg_error, "Last 2 dimensions of the array must be square");
    return false;
}

PyObject* call_gufunc(PyObject* gufunc, PyArrayObject* x, PyObject* kwargs) {
    PyObject* args = PyTuple_Pack(1, reinterpret_cast<PyObject*>(x));
    if (args == nullptr) {
        return nullptr;
    }
    PyObject* result = PyObject_Call(gufunc, args, kwargs);
    Py_DECREF(args);
    return result;
}

int matrix_inverse(PyArrayObject* x, int type_num, PyArrayObject** out) {
    if (!square(x)) {
        return -1;
    }
    PyObject* token = PyContextVar_Set(g_errstate_var, g_inv_errstate);
    if (token == nullptr) {
        return -1;
    }
    PyObject* inverse = call_gufunc(g_inv, x, g_signature_d);
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    const int reset = PyContextVar_Reset(g_errstate_var, token);
    Py_DECREF(token);
    if (reset != 0) {
        Py_XDECREF(inverse);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return -1;
    }
    PyErr_Restore(type, value, traceback);
    return give(as_type(inverse, type_num), out);
}

// perform's `raise ValueError("Failed to compute determinant", x) from e`.
int determinant_failed(PyArrayObject* x) {
    PyObject *type, *cause, *traceback;
    PyErr_Fetch(&type, &cause, &traceback);
    PyErr_NormalizeException(&type, &cause, &traceback);
    if (traceback != nullptr && cause != nullptr) {
        PyException_SetTraceback(cause, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    PyObject* error = PyObject_CallFunction(PyExc_ValueError, "sO",
                                            "Failed to compute determinant", x);
    if (error != nullptr) {
        if (cause != nullptr) {
            PyException_SetCause(error, cause);  // steals
            cause = nullptr;
        }
        PyErr_SetObject(PyExc_ValueError, error);
        Py_DECREF(error);
    }
    Py_XDECREF(cause);
    return -1;
}

int det(PyArrayObject* x, int type_num, PyArrayObject** out) {
    if (!square(x)) {
        return determinant_failed(x);
    }
    PyArrayObject* value = as_type(call_gufunc(g_det, x, g_signature_d), type_num);
    return value == nullptr ? determinant_failed(x) : give(value, out);
}

int slogdet(PyArrayObject* x, int type_num, PyArrayObject** sign, PyArrayObject** logdet) {
    if (!square(x)) {
        return determinant_failed(x);
    }
    PyObject* pair = call_gufunc(g_slogdet, x, g_signature_dd);
    if (pair == nullptr) {
        return determinant_failed(x);
    }
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_TypeError, "numpy's slogdet gufunc did not return a pair");
        return determinant_failed(x);
    }
    PyArrayObject* s = as_type(Py_NewRef(PyTuple_GET_ITEM(pair, 0)), type_num);
    PyArrayObject* l = s == nullptr ? nullptr : as_type(Py_NewRef(PyTuple_GET_ITEM(pair, 1)), type_num);
    Py_DECREF(pair);
    if (l == nullptr) {
        Py_XDECREF(s);
        return determinant_failed(x);
    }
    give(s, sign);
    return give(l, logdet);
}

PyObject* attribute(const char* module_name, const char* name) {
    PyObject* module = PyImport_ImportModule(module_name);
    if (module == nullptr) {
        return nullptr;
    }
    PyObject* value = PyObject_GetAttrString(module, name);
    Py_DECREF(module);
    return value;
}

PyObject* signature(const char* text) {
    PyObject* kwargs = PyDict_New();
    PyObject* value = PyUnicode_FromString(text);
    if (kwargs == nullptr || value == nullptr || PyDict_SetItemString(kwargs, "signature", value) != 0) {
        Py_XDECREF(kwargs);
        Py_XDECREF(value);
        return nullptr;
    }
    Py_DECREF(value);
    return kwargs;
}

// The error state np.linalg.inv computes in: NumPy's own _make_extobj.
PyObject* inv_errstate() {
    PyObject* make = attribute("numpy._core._multiarray_umath", "_make_extobj");
    PyObject* handler = PyCFunction_New(&k_singular, nullptr);
    PyObject* kwargs = Py_BuildValue("{s:O,s:s,s:s,s:s,s:s}", "call", handler, "invalid", "call",
                                     "over", "ignore", "divide", "ignore", "under", "ignore");
    PyObject* empty = PyTuple_New(0);
    PyObject* extobj = nullptr;
    if (make != nullptr && kwargs != nullptr && empty != nullptr) {
        extobj = PyObject_Call(make, empty, kwargs);
    }
    Py_XDECREF(make);
    Py_XDECREF(handler);
    Py_XDECREF(kwargs);
    Py_XDECREF(empty);
    return extobj;
}

int find_numpy_linalg() {
    g_inv = attribute("numpy.linalg._umath_linalg", "inv");
    g_det = attribute("numpy.linalg._umath_linalg", "det");
    g_slogdet = attribute("numpy.linalg._umath_linalg", "slogdet");
    g_linalg_error = attribute("numpy.linalg", "LinAlgError");
    g_errstate_var = attribute("numpy._core._ufunc_config", "_extobj_contextvar");
    g_signature_d = signature("d->d");
    g_signature_dd = signature("d->dd");
    if (g_inv == nullptr || g_det == nullptr || g_slogdet == nullptr ||
        g_linalg_error == nullptr || g_errstate_var == nullptr || g_signature_d == nullptr ||
        g_signature_dd == nullptr || !PyContextVar_CheckExact(g_errstate_var)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ImportError, "NumPy's errstate is not a context variable");
        }
        return -1;
    }
    g_inv_errstate = inv_errstate();
    return g_inv_errstate == nullptr ? -1 : 0;
}

// --- Blockwise: a loop over the core op's code --------------------------------

int batch_shape(int n, PyArrayObject* const* arrays, int batch_ndim, npy_intp* shape) {
    for (int d = 0; d < batch_ndim; ++d) {
        shape[d] = 1;
    }
    bool mismatch = false;
    for (int i = 0; i < n; ++i) {
        for (int d = 0; d < batch_ndim; ++d) {
            const npy_intp length = PyArray_DIM(arrays[i], d);
            if (length != 1 && shape[d] != 1 && shape[d] != length) {
                mismatch = true;
            } else if (length != 1) {
                shape[d] = length;
            }
        }
    }
    if (!mismatch) {
        return 0;
    }
    // NumPy's own error (np.broadcast_shapes): broadcast arrays of the batch
    // shapes, each a zero-strided view that reads nothing.
    constexpr int k_max_arrays = 32;  // NumPy 1's NPY_MAXARGS (NumPy 2's is 64)
    if (n > k_max_arrays) {
        PyErr_SetString(PyExc_ValueError, "shape mismatch: the batch shapes do not broadcast");
        return -1;
    }
    PyObject* shapes[k_max_arrays];
    npy_intp zeros[NPY_MAXDIMS] = {};
    int made = 0;
    for (; made < n; ++made) {
        shapes[made] = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(NPY_BOOL),
                                            batch_ndim, PyArray_DIMS(arrays[made]), zeros,
                                            PyArray_DATA(arrays[made]), 0, nullptr);
        if (shapes[made] == nullptr) {
            break;
        }
    }
    if (made == n) {
        PyObject* multi = PyArray_MultiIterFromObjects(shapes, n, 0);
        Py_XDECREF(multi);
        if (multi != nullptr) {
            PyErr_SetString(PyExc_ValueError, "shape mismatch: the batch shapes do not broadcast");
        }
    }
    for (int i = 0; i < made; ++i) {
        Py_DECREF(shapes[i]);
    }
    return -1;
}

PyArrayObject* core_view(PyArrayObject* x, int batch_ndim, const npy_intp* index) {
    char* data = PyArray_BYTES(x);
    for (int d = 0; d < batch_ndim; ++d) {
        if (PyArray_DIM(x, d) != 1) {
            data += index[d] * PyArray_STRIDE(x, d);
        }
    }
    PyArray_Descr* descr = PyArray_DESCR(x);
    Py_INCREF(descr);
    const int flags = PyArray_FLAGS(x) & NPY_ARRAY_WRITEABLE;
    PyObject* view = PyArray_NewFromDescr(&PyArray_Type, descr, PyArray_NDIM(x) - batch_ndim,
                                          PyArray_DIMS(x) + batch_ndim,
                                          PyArray_STRIDES(x) + batch_ndim, data, flags, nullptr);
    if (view == nullptr) {
        return nullptr;
    }
    Py_INCREF(x);
    if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(view),
                              reinterpret_cast<PyObject*>(x)) != 0) {
        Py_DECREF(view);
        return nullptr;
    }
    return reinterpret_cast<PyArrayObject*>(view);
}

int store_core(PyArrayObject** out, int batch_ndim, const npy_intp* batch, npy_intp flat,
               PyArrayObject* core) {
    if (flat == 0) {
        npy_intp shape[NPY_MAXDIMS];
        const int nd = batch_ndim + PyArray_NDIM(core);
        if (nd > NPY_MAXDIMS) {
            PyErr_SetString(PyExc_ValueError, "too many dimensions");
            return -1;
        }
        std::memcpy(shape, batch, sizeof(npy_intp) * static_cast<size_t>(batch_ndim));
        std::memcpy(shape + batch_ndim, PyArray_DIMS(core),
                    sizeof(npy_intp) * static_cast<size_t>(PyArray_NDIM(core)));
        PyArray_Descr* descr = PyArray_DESCR(core);
        Py_INCREF(descr);
        PyObject* made = PyArray_NewFromDescr(&PyArray_Type, descr, nd, shape, nullptr, nullptr, 0,
                                              nullptr);
        if (give(reinterpret_cast<PyArrayObject*>(made), out) != 0) {
            return -1;
        }
    }
    npy_intp index[NPY_MAXDIMS];
    npy_intp left = flat;
    for (int d = batch_ndim - 1; d >= 0; --d) {
        index[d] = left % batch[d];
        left /= batch[d];
    }
    PyArrayObject* place = core_view(*out, batch_ndim, index);
    if (place == nullptr) {
        return -1;
    }
    const int copied = PyArray_CopyInto(place, core);
    Py_DECREF(place);
    return copied;
}

const opweave_kernels_v1 k_api = {
    1,           cholesky,   solve_triangular, cho_solve, gather,    scatter,
    get_item,    set_item,   matrix_inverse,   det,       slogdet,   batch_shape,
    core_view,   store_core,
};

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
    PyObject* module = PyImport_ImportModule("scipy.linalg.cython_lapack");
    if (module == nullptr) {
        return -1;
    }
    PyObject* capi = PyObject_GetAttrString(module, "__pyx_capi__");
    Py_DECREF(module);
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

int find_add_at() {
    PyObject* numpy = PyImport_ImportModule("numpy");
    if (numpy == nullptr) {
        return -1;
    }
    PyObject* add = PyObject_GetAttrString(numpy, "add");
    Py_DECREF(numpy);
    if (add == nullptr) {
        return -1;
    }
    g_add_at = PyObject_GetAttrString(add, "at");
    Py_DECREF(add);
    return g_add_at == nullptr ? -1 : 0;
}

PyModuleDef k_module = {
    PyModuleDef_HEAD_INIT, "opweave_pytensor_kernels",
    "opweave's shared kernels for PyTensor ops (see kernel_api.h).", -1,
    nullptr, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit_opweave_pytensor_kernels(void) {
    import_array();
    if (find_lapack() != 0 || (g_add_at == nullptr && find_add_at() != 0) ||
        (g_inv_errstate == nullptr && find_numpy_linalg() != 0)) {
        return nullptr;
    }
    PyObject* module = PyModule_Create(&k_module);
    if (module == nullptr) {
        return nullptr;
    }
    PyObject* capsule = PyCapsule_New(const_cast<opweave_kernels_v1*>(&k_api),
                                      "opweave.pytensor._kernel_library.API_v1", nullptr);
    if (capsule == nullptr || PyModule_AddObject(module, "API_v1", capsule) != 0) {
        Py_XDECREF(capsule);
        Py_DECREF(module);
        return nullptr;
    }
    return module;
}

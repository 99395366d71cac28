// opweave's shared kernels: advanced indexing (a gather and a scatter for
// integer arrays of one shape on the leading axes, NumPy's own indexing
// otherwise).
namespace {

PyObject* g_add_at;  // np.add.at, owned for the process's life

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

int find_add_at() {
    PyObject* add = attribute("numpy", "add");
    if (add == nullptr) {
        return -1;
    }
    g_add_at = PyObject_GetAttrString(add, "at");
    Py_DECREF(add);
    return g_add_at == nullptr ? -1 : 0;
}

}  // namespace

// opweave's shared kernels: what Blockwise's loop over its core op's code
// needs (the batch shape, views of the core axes, storing each result).
namespace {

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

}  // namespace

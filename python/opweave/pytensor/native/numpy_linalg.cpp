// opweave's shared kernels: MatrixInverse, Det and SLogDet through NumPy's
// own linear-algebra gufuncs.
namespace {

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

}  // namespace

// opweave._core: the arguments of a compiled call's error handler.
#include "bindings/runtime/failed_call.hpp"

namespace opweave::bindings::runtime {

PyObject* fetch_error() {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (type == NULL) {
        return NULL;
    }
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL) {
        PyException_SetTraceback(value, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
}

int pack_call(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** positional,
              PyObject** keywords) {
    *positional = PyTuple_New(nargs);
    *keywords = kwnames != NULL ? PyDict_New() : Py_NewRef(Py_None);
    bool ok = *positional != NULL && *keywords != NULL;
    if (ok) {
        for (Py_ssize_t i = 0; i < nargs; ++i) {
            PyTuple_SET_ITEM(*positional, i, Py_NewRef(args[i]));
        }
    }
    if (ok && kwnames != NULL) {
        for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(kwnames); ++i) {
            ok = PyDict_SetItem(*keywords, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) == 0;
        }
    }
    if (!ok) {
        Py_CLEAR(*positional);
        Py_CLEAR(*keywords);
        return -1;
    }
    return 0;
}

}  // namespace opweave::bindings::runtime

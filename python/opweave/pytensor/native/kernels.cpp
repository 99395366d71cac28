// opweave: the code of opweave's PyTensor kernels that does not depend on the
// node, compiled once per machine through opweave's module cache
// (opweave/pytensor/_kernel_library.py) and called by graph modules through
// the table of kernel_api.h. One translation unit, of these files in order:
// kernels.cpp (the includes and what the others share), lapack.cpp,
// indexing.cpp, numpy_linalg.cpp, blockwise.cpp and module.cpp (the table and
// the module's init).
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

// *out = result (stolen), releasing what *out held.
int give(PyArrayObject* result, PyArrayObject** out) {
    if (result == nullptr) {
        return -1;
    }
    Py_XDECREF(*out);
    *out = result;
    return 0;
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

}  // namespace

// opweave's shared kernels: the table graph modules call (kernel_api.h) and
// the module's init.
namespace {

const opweave_kernels_v1 k_api = {
    1,           cholesky,   solve_triangular, cho_solve, gather,    scatter,
    get_item,    set_item,   matrix_inverse,   det,       slogdet,   batch_shape,
    core_view,   store_core,
};

PyModuleDef k_module = {
    PyModuleDef_HEAD_INIT, "opweave_pytensor_kernels",
    "opweave's shared kernels for PyTensor ops (see kernel_api.h).", -1,
    nullptr, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit_opweave_pytensor_kernels(void) {
    import_array();
    if (find_lapack() != 0 || find_add_at() != 0 || find_numpy_linalg() != 0) {
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

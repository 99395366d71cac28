// opweave._core: the runtime's types (cpp/bindings/runtime/) added to the module.
#include "bindings/bindings.hpp"
#include "bindings/runtime/types.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

void add_type(py::module_& m, const char* name, PyObject* (*make)()) {
    PyObject* type = make();
    if (type == nullptr) {
        throw py::error_already_set();
    }
    m.add_object(name, py::reinterpret_steal<py::object>(type));
}

}  // namespace

void init_runtime(py::module_& m) {
    add_type(m, "Function", runtime::new_function_type);
    add_type(m, "StepRunner", runtime::new_step_runner_type);
    add_type(m, "CellCall", runtime::new_cell_call_type);
}

}  // namespace opweave::bindings

// opweave._core: maps the core's C++ errors to the exception classes of
// opweave.errors, carrying their data as attributes.
#include <pybind11/stl.h>

#include "bindings/bindings.hpp"
#include "opweave/errors.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

py::object error_class(const char* name) {
    return py::module_::import("opweave.errors").attr(name);
}

void raise(const py::object& exception) {
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
}

}  // namespace

void init_errors(py::module_& m) {
    (void)m;
    py::register_exception_translator([](std::exception_ptr pointer) {
        if (!pointer) {
            return;
        }
        try {
            std::rethrow_exception(pointer);
        } catch (const CompileError& e) {
            raise(error_class("CompileError")(
                e.what(), py::arg("command") = e.command(),
                py::arg("diagnostics") = e.diagnostics(),
                py::arg("source") = e.source().string(),
                py::arg("exit_status") = e.exit_status()));
        } catch (const LockTimeout& e) {
            raise(error_class("LockTimeout")(
                e.what(), py::arg("lock_path") = e.lock_path().string(),
                py::arg("waited_seconds") = e.waited_seconds(),
                py::arg("holder_pid") = e.holder_pid()));
        } catch (const CacheError& e) {
            raise(error_class("CacheError")(e.what(), py::arg("path") = e.path().string()));
        } catch (const Error& e) {
            raise(error_class("OpweaveError")(e.what()));
        }
    });
}

}  // namespace opweave::bindings

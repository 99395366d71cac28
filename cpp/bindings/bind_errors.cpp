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

py::str path_text(const std::filesystem::path& path) {
    const std::string& value = path.native();
    PyObject* decoded =
        PyUnicode_DecodeFSDefaultAndSize(value.data(), static_cast<Py_ssize_t>(value.size()));
    if (decoded == nullptr) {
        throw py::error_already_set();
    }
    return py::reinterpret_steal<py::str>(decoded);
}

py::str text(const std::string& value) {
    PyObject* decoded = PyUnicode_DecodeUTF8(value.data(), static_cast<Py_ssize_t>(value.size()),
                                             "replace");
    if (decoded == nullptr) {
        throw py::error_already_set();
    }
    return py::reinterpret_steal<py::str>(decoded);
}

py::list text_list(const std::vector<std::string>& values) {
    py::list out;
    for (const std::string& value : values) {
        out.append(text(value));
    }
    return out;
}

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
                text(e.what()), py::arg("command") = text_list(e.command()),
                py::arg("diagnostics") = text(e.diagnostics()),
                py::arg("source") = text(e.source().string()),
                py::arg("exit_status") = e.exit_status()));
        } catch (const LockTimeout& e) {
            raise(error_class("LockTimeout")(
                text(e.what()), py::arg("lock_path") = text(e.lock_path().string()),
                py::arg("waited_seconds") = e.waited_seconds(),
                py::arg("holder_pid") = e.holder_pid()));
        } catch (const Interrupted& e) {
            raise(error_class("BuildInterrupted")(text(e.what())));
        } catch (const CacheError& e) {
            raise(error_class("CacheError")(text(e.what()),
                                            py::arg("path") = text(e.path().string())));
        } catch (const Error& e) {
            raise(error_class("OpweaveError")(text(e.what())));
        }
    });
}

}  // namespace opweave::bindings

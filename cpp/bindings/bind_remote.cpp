// opweave._core: RemoteStorage (include/opweave/remote_storage.hpp), for
// Python classes to implement (opweave's Redis client does).
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bindings/bindings.hpp"
#include "opweave/remote_storage.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

// Calls the Python implementation, with the GIL (the core calls without
// it). An Exception from Python is a failure of the storage (a
// std::runtime_error for the core); a BaseException that is not an
// Exception (KeyboardInterrupt, SystemExit) propagates as it is.
class PyRemoteStorage final : public RemoteStorage {
    // The result of body(the Python method `name`).
    template <typename Body>
    auto call(const char* name, Body&& body) {
        const py::function method = py::get_override(static_cast<const RemoteStorage*>(this), name);
        if (!method) {
            throw std::runtime_error(std::string("RemoteStorage.") + name + " is not implemented");
        }
        try {
            return body(method);
        } catch (py::error_already_set& error) {
            if (!error.matches(PyExc_Exception)) {
                throw;
            }
            throw std::runtime_error(error.what());
        }
    }

public:
    std::optional<std::string> get(std::string_view key) override {
        py::gil_scoped_acquire gil;
        return call("get", [&](const py::function& get) -> std::optional<std::string> {
            const py::object value = get(std::string(key));
            if (value.is_none()) {
                return std::nullopt;
            }
            if (!PyBytes_Check(value.ptr())) {
                throw std::runtime_error("RemoteStorage.get returned " +
                                         std::string(py::str(py::type::of(value).attr("__name__"))) +
                                         ", not bytes or None");
            }
            return value.cast<std::string>();
        });
    }

    void put(std::string_view key, std::string_view pack) override {
        py::gil_scoped_acquire gil;
        call("put", [&](const py::function& put) {
            put(std::string(key), py::bytes(pack.data(), pack.size()));
        });
    }

};

[[noreturn]] void unimplemented(const char* name) {
    PyErr_Format(PyExc_NotImplementedError, "a RemoteStorage subclass implements %s", name);
    throw py::error_already_set();
}

}  // namespace

void init_remote(py::module_& m) {
    py::class_<RemoteStorage, PyRemoteStorage>(
        m, "RemoteStorage",
        "A store of whole cache entries that machines share, for build_module's\n"
        "`remote`. Subclasses implement get(key) -> bytes | None (the pack stored\n"
        "under the key, or None) and put(key, pack: bytes) -> None. build_module\n"
        "calls get on a local miss, with the key's lock held, and verifies what it\n"
        "returns as a local entry; it calls put after it publishes a module it\n"
        "built. Both are called with the GIL, from the thread that called\n"
        "build_module, and must end within a deadline of their own. An Exception\n"
        "they raise is a failure of the storage (a 'remote_failed' CacheEvent):\n"
        "the module is compiled here.")
        .def(py::init<>())
        .def(
            "get", [](RemoteStorage&, const std::string&) -> py::object { unimplemented("get"); },
            py::arg("key"), "The pack stored under `key`, or None (for subclasses to implement).")
        .def(
            "put",
            [](RemoteStorage&, const std::string&, const py::bytes&) { unimplemented("put"); },
            py::arg("key"), py::arg("pack"),
            "Stores `pack` under `key`, or gives up (for subclasses to implement).");
}

}  // namespace opweave::bindings

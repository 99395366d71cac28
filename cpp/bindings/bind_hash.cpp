// opweave._core: SHA-256 and the typed key hasher.
#include <pybind11/stl.h>

#include "bindings/bindings.hpp"
#include "opweave/hash.hpp"

namespace py = pybind11;

namespace opweave::bindings {

void init_hash(py::module_& m) {
    m.def(
        "sha256_hex",
        [](const py::bytes& data) { return to_hex(Sha256::of(std::string_view(data))); },
        py::arg("data"), "SHA-256 of `data` (bytes), as 64 lower-case hex characters.");

    py::class_<KeyHasher>(m, "KeyHasher",
                          "Builds a cache key from typed, length-prefixed fields, so that\n"
                          "('-I', '-O2') and ('-I-O2') give different keys.")
        .def(py::init<>())
        .def("add_text", py::overload_cast<std::string_view>(&KeyHasher::add),
             py::arg("text"), py::return_value_policy::reference_internal,
             "Appends a string field.")
        .def("add_int", py::overload_cast<std::int64_t>(&KeyHasher::add), py::arg("number"),
             py::return_value_policy::reference_internal, "Appends a 64-bit integer field.")
        .def("add_list", py::overload_cast<const std::vector<std::string>&>(&KeyHasher::add),
             py::arg("items"), py::return_value_policy::reference_internal,
             "Appends a list of strings as one field.")
        .def("add_named",
             py::overload_cast<std::string_view, std::string_view>(&KeyHasher::add),
             py::arg("name"), py::arg("value"), py::return_value_policy::reference_internal,
             "Appends a named string field.")
        .def_property_readonly("text", &KeyHasher::text,
                               "The 'name: value' lines of the named fields so far.")
        .def("hex_digest", &KeyHasher::hex_digest,
             "The digest of all fields so far (64 hex characters); resets the hasher.");
}

}  // namespace opweave::bindings

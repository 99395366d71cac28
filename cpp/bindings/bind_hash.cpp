// opweave._core: SHA-256, the typed key hasher, and Zstandard frames.
#include <pybind11/stl.h>

#include "bindings/bindings.hpp"
#include "opweave/hash.hpp"
#include "util/zstd.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

// transform(bytes of `data`), run without the GIL, as bytes or None.
template <typename Transform>
std::optional<py::bytes> bytes_without_gil(const py::bytes& data, Transform transform) {
    const std::string_view bytes(data);
    std::optional<std::string> result;
    {
        const py::gil_scoped_release unlocked;
        result = transform(bytes);
    }
    if (!result) {
        return std::nullopt;
    }
    return py::bytes(*result);
}

}  // namespace

void init_hash(py::module_& m) {
    m.def(
        "sha256_hex",
        [](const py::bytes& data) { return to_hex(Sha256::of(std::string_view(data))); },
        py::arg("data"), "SHA-256 of `data` (bytes), as 64 lower-case hex characters.");
    m.def(
        "zstd_compress",
        [](const py::bytes& data, int level) {
            return bytes_without_gil(data, [level](std::string_view bytes) {
                return util::zstd_compress(bytes, level);
            });
        },
        py::arg("data"), py::arg("level") = 3,
        "`data` as one Zstandard frame that records its size, or None if\n"
        "libzstd.so.1 cannot be loaded.");
    m.def(
        "zstd_decompress",
        [](const py::bytes& frame, std::size_t max_bytes) {
            return bytes_without_gil(frame, [max_bytes](std::string_view bytes) {
                return util::zstd_decompress(bytes, max_bytes);
            });
        },
        py::arg("frame"), py::arg("max_bytes"),
        "The content of one Zstandard frame (how precompiled preludes are kept),\n"
        "or None if it is damaged, has no recorded size, is over `max_bytes`, or\n"
        "libzstd.so.1 cannot be loaded.");

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

// opweave._core: the values of the namespaces (module globals, classes)
// that a dependency list records (python/opweave/link/c/_dep_list.py), and
// their digests (_dep_digest.py), read in C: the names a code object uses,
// the objects they hold, whether they still hold them, and a digest of
// them that a fresh process can compare.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bindings/bindings.hpp"
#include "opweave/hash.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

// The dict of a namespace: a module's globals (a dict) or a class's
// attributes.
PyObject* namespace_dict(const py::handle& space) {
    if (PyDict_Check(space.ptr())) {
        return space.ptr();
    }
    if (PyType_Check(space.ptr())) {
        PyObject* dict = reinterpret_cast<PyTypeObject*>(space.ptr())->tp_dict;
        if (dict != nullptr && PyDict_Check(dict)) {
            return dict;
        }
    }
    throw py::type_error("a namespace is a dict (a module's globals) or a class");
}

// The names of `space` that are in `names` (sorted), and their values.
py::tuple take_values(const py::handle& space, const py::set& names) {
    PyObject* dict = namespace_dict(space);
    std::vector<std::pair<std::string, PyObject*>> found;
    Py_ssize_t position = 0;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    while (PyDict_Next(dict, &position, &key, &value)) {
        if (PyUnicode_Check(key) && PySet_Contains(names.ptr(), key) == 1) {
            const char* text = PyUnicode_AsUTF8(key);
            if (text == nullptr) {
                throw py::error_already_set();
            }
            found.emplace_back(text, value);
        }
    }
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    py::tuple keys(found.size());
    py::tuple values(found.size());
    for (std::size_t i = 0; i < found.size(); ++i) {
        keys[i] = py::str(found[i].first);
        values[i] = py::reinterpret_borrow<py::object>(found[i].second);
    }
    return py::make_tuple(keys, values);
}

// The objects `names` hold in `space`; None when one is missing.
py::object values_of(const py::handle& space, const py::tuple& names) {
    PyObject* dict = namespace_dict(space);
    py::tuple values(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        PyObject* value = PyDict_GetItemWithError(dict, names[i].ptr());
        if (value == nullptr) {
            if (PyErr_Occurred()) {
                throw py::error_already_set();
            }
            return py::none();
        }
        values[i] = py::reinterpret_borrow<py::object>(value);
    }
    return std::move(values);
}

// Whether `names` of `space` still hold the very objects `values`.
bool same_values(const py::handle& space, const py::tuple& names, const py::tuple& values) {
    PyObject* dict = namespace_dict(space);
    if (names.size() != values.size()) {
        return false;
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
        PyObject* now = PyDict_GetItemWithError(dict, names[i].ptr());
        if (now != values[i].ptr()) {
            PyErr_Clear();
            return false;
        }
    }
    return true;
}

// --- digests of namespaces (python/opweave/link/c/_dep_digest.py) ---------

constexpr int k_max_text_depth = 4;
constexpr Py_ssize_t k_max_text_items = 256;

// The attribute `name` of `object` as text, "" when it has none.
std::string attribute_text(PyObject* object, const char* name) {
    PyObject* found = PyObject_GetAttrString(object, name);
    if (found == nullptr) {
        PyErr_Clear();
        return {};
    }
    const char* text = PyUnicode_Check(found) ? PyUnicode_AsUTF8(found) : nullptr;
    std::string out = text != nullptr ? text : "";
    if (text == nullptr) {
        PyErr_Clear();
    }
    Py_DECREF(found);
    return out;
}

std::string repr_text(PyObject* value) {
    PyObject* repr = PyObject_Repr(value);
    if (repr == nullptr) {
        throw py::error_already_set();
    }
    const char* text = PyUnicode_AsUTF8(repr);
    std::string out = text != nullptr ? text : "";
    Py_DECREF(repr);
    if (text == nullptr) {
        throw py::error_already_set();
    }
    return out;
}

// The text of a value (see _dep_digest.py); `other` gives the text of the
// values it does not know (NumPy's, enum members, other objects).
std::string value_text(PyObject* value, int depth, const py::handle& other) {
    const bool plain = value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) ||
                       PyFloat_CheckExact(value) || PyComplex_CheckExact(value) ||
                       PyUnicode_CheckExact(value) || PyBytes_CheckExact(value);
    if (plain) {
        return std::string(Py_TYPE(value)->tp_name) + ":" + repr_text(value);
    }
    const bool sequence = PyTuple_CheckExact(value) || PyFrozenSet_CheckExact(value);
    if (sequence && depth < k_max_text_depth && PyObject_Size(value) <= k_max_text_items) {
        std::vector<std::string> items;
        const py::object iterator = py::reinterpret_steal<py::object>(PyObject_GetIter(value));
        if (!iterator) {
            throw py::error_already_set();
        }
        while (PyObject* item = PyIter_Next(iterator.ptr())) {
            items.push_back(value_text(item, depth + 1, other));
            Py_DECREF(item);
        }
        if (PyErr_Occurred()) {
            throw py::error_already_set();
        }
        if (PyFrozenSet_CheckExact(value)) {
            std::sort(items.begin(), items.end());
        }
        std::string out = std::string(Py_TYPE(value)->tp_name) + "(";
        for (std::size_t i = 0; i < items.size(); ++i) {
            out += (i > 0 ? "," : "") + items[i];
        }
        return out + ")";
    }
    if (PyFunction_Check(value) || PyCFunction_Check(value) || PyType_Check(value) ||
        PyModule_Check(value)) {
        std::string name = attribute_text(value, "__qualname__");
        if (name.empty()) {
            name = attribute_text(value, "__name__");
        }
        return std::string(Py_TYPE(value)->tp_name) + ":" + attribute_text(value, "__module__") +
               "." + name;
    }
    if (PyMethod_Check(value)) {
        return "method:" + value_text(PyMethod_GET_FUNCTION(value), depth + 1, other);
    }
    const py::object text = other(py::reinterpret_borrow<py::object>(value));
    return text.cast<std::string>();
}

// Adds "name=text\n" of one value to `digest` (a missing one: "<missing>").
void add_value(Sha256& digest, const py::handle& name, PyObject* value, const py::handle& other) {
    const std::string text = value == nullptr ? "<missing>" : value_text(value, 0, other);
    digest.update(name.cast<std::string>() + "=" + text + "\n");
}

// A digest of `values`, the objects `names` hold (see _dep_digest.py).
std::string values_digest(const py::tuple& names, const py::tuple& values,
                          const py::handle& other) {
    if (names.size() != values.size()) {
        throw py::value_error("as many names as values");
    }
    Sha256 digest;
    for (std::size_t i = 0; i < names.size(); ++i) {
        add_value(digest, names[i], values[i].ptr(), other);
    }
    return to_hex(digest.finish()).substr(0, 32);
}

// The digest of values_digest, of the values `names` hold in `space` now.
std::string namespace_digest(const py::handle& space, const py::tuple& names,
                             const py::handle& other) {
    PyObject* dict = namespace_dict(space);
    Sha256 digest;
    for (const py::handle& name : names) {
        PyObject* value = PyDict_GetItemWithError(dict, name.ptr());  // borrowed
        if (value == nullptr && PyErr_Occurred()) {
            throw py::error_already_set();
        }
        const py::object held = py::reinterpret_borrow<py::object>(value);  // through the call
        add_value(digest, name, value, other);
    }
    return to_hex(digest.finish()).substr(0, 32);
}

}  // namespace

void init_dep_values(py::module_& m) {
    m.def("values_digest", &values_digest, py::arg("names"), py::arg("values"), py::arg("other"),
          "A digest of `values`, the objects the tuple `names` holds: numbers, strings\n"
          "and None by value, tuples and frozensets by their items, functions, classes\n"
          "and modules by module and qualified name; other(value) gives the text of any\n"
          "other value (see _dep_digest.py).");
    m.def("namespace_digest", &namespace_digest, py::arg("namespace"), py::arg("names"),
          py::arg("other"),
          "values_digest of the values the tuple `names` holds in `namespace` (a module's\n"
          "globals or a class) now; a name it does not have counts as missing.");
    m.def("take_values", &take_values, py::arg("namespace"), py::arg("names"),
          "(names, values): the names of `namespace` (a module's globals, or a class)\n"
          "that are in the set `names`, sorted, and the objects they hold.");
    m.def("values_of", &values_of, py::arg("namespace"), py::arg("names"),
          "The objects the names (a tuple) hold in `namespace` (a module's globals, or\n"
          "a class), or None when one is missing.");
    m.def("same_values", &same_values, py::arg("namespace"), py::arg("names"), py::arg("values"),
          "Whether each of `names` of `namespace` still holds the very object of\n"
          "`values` (take_values).");
}

}  // namespace opweave::bindings

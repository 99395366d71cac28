// opweave._core: the assembler's structs (module_source.hpp) as Python
// types, and assemble_module.
//
// The small value records (CodeOrigin, CodeFragment, Step, LineRange) are
// named tuples: Python makes many of them while it writes a graph's code,
// unpacks them, and uses them as keys, and any tuple of the right shape
// converts (its parts type-checked here). The aggregates (UnitSpec,
// GraphExport, ModuleSpec, AssembledUnit, AssembledModule) are classes
// with keyword constructors, so a misspelt part is a TypeError, not a part
// silently left out of the module.
#include <pybind11/stl.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/bindings.hpp"
#include "opweave/module_source.hpp"

namespace py = pybind11;

namespace opweave::bindings {
namespace {

// The named tuple types; the module's attributes own them.
PyObject* g_origin_type = nullptr;
PyObject* g_fragment_type = nullptr;
PyObject* g_step_type = nullptr;
PyObject* g_line_range_type = nullptr;

// `object` as a tuple of `size` items, else TypeError naming `shape`.
py::tuple record(py::handle object, std::size_t size, const char* shape) {
    if (!PyTuple_Check(object.ptr()) ||
        static_cast<std::size_t>(PyTuple_GET_SIZE(object.ptr())) != size) {
        throw py::type_error(std::string("expected ") + shape + ", got " +
                             std::string(py::repr(object)).substr(0, 200));
    }
    return py::reinterpret_borrow<py::tuple>(object);
}

template <typename T>
T part(const py::tuple& fields, std::size_t index, const char* shape) {
    try {
        return fields[index].cast<T>();
    } catch (const py::cast_error&) {
        throw py::type_error(std::string("expected ") + shape + ", got " +
                             std::string(py::repr(fields)).substr(0, 200));
    }
}

long long origin_index(std::size_t origin) {
    return origin == k_no_origin ? -1 : static_cast<long long>(origin);
}

py::object make(PyObject* type, const py::tuple& fields) {
    return py::reinterpret_borrow<py::object>(type)(*fields);
}

}  // namespace
}  // namespace opweave::bindings

namespace pybind11::detail {

template <>
struct type_caster<opweave::CodeOrigin> {
    PYBIND11_TYPE_CASTER(opweave::CodeOrigin, const_name("CodeOrigin"));
    bool load(handle source, bool) {
        constexpr const char* shape = "a CodeOrigin (what: str, file: str, line: int)";
        const tuple fields = opweave::bindings::record(source, 3, shape);
        using opweave::bindings::part;
        value = {part<std::string>(fields, 0, shape), part<std::string>(fields, 1, shape),
                 part<int>(fields, 2, shape)};
        return true;
    }
    static handle cast(const opweave::CodeOrigin& origin, return_value_policy, handle) {
        return opweave::bindings::make(opweave::bindings::g_origin_type,
                                       pybind11::make_tuple(origin.what, origin.file, origin.line))
            .release();
    }
};

template <>
struct type_caster<opweave::CodeFragment> {
    PYBIND11_TYPE_CASTER(opweave::CodeFragment, const_name("CodeFragment"));
    bool load(handle source, bool) {
        constexpr const char* shape = "a CodeFragment (text: str, origin: int, -1 for none)";
        const tuple fields = opweave::bindings::record(source, 2, shape);
        using opweave::bindings::part;
        const auto origin = part<long long>(fields, 1, shape);
        value = {part<std::string>(fields, 0, shape),
                 origin < 0 ? opweave::k_no_origin : static_cast<std::size_t>(origin)};
        return true;
    }
    static handle cast(const opweave::CodeFragment& fragment, return_value_policy, handle) {
        return opweave::bindings::make(
                   opweave::bindings::g_fragment_type,
                   pybind11::make_tuple(opweave::bindings::text(fragment.text),
                              opweave::bindings::origin_index(fragment.origin)))
            .release();
    }
};

template <>
struct type_caster<opweave::Step> {
    PYBIND11_TYPE_CASTER(opweave::Step, const_name("Step"));
    bool load(handle source, bool) {
        constexpr const char* shape = "a Step (id: int, run: str, undo: str, args: list[int])";
        const tuple fields = opweave::bindings::record(source, 4, shape);
        using opweave::bindings::part;
        value = {part<int>(fields, 0, shape), part<std::string>(fields, 1, shape),
                 part<std::string>(fields, 2, shape), part<std::vector<int>>(fields, 3, shape)};
        return true;
    }
    static handle cast(const opweave::Step& step, return_value_policy, handle) {
        return opweave::bindings::make(opweave::bindings::g_step_type,
                                       pybind11::make_tuple(step.id, step.run, step.undo, step.args))
            .release();
    }
};

template <>
struct type_caster<opweave::LineRange> {
    PYBIND11_TYPE_CASTER(opweave::LineRange, const_name("LineRange"));
    bool load(handle, bool) { return false; }  // only the assembler makes them
    static handle cast(const opweave::LineRange& range, return_value_policy, handle) {
        return opweave::bindings::make(
                   opweave::bindings::g_line_range_type,
                   pybind11::make_tuple(range.first, range.last,
                              opweave::bindings::origin_index(range.origin)))
            .release();
    }
};

}  // namespace pybind11::detail

namespace opweave::bindings {
namespace {

using Fragments = std::vector<CodeFragment>;
using Definitions = std::vector<std::vector<CodeFragment>>;

PyObject* named_tuple(py::module_& m, const char* name, const char* fields, const char* doc) {
    py::object type = py::module_::import("collections").attr("namedtuple")(name, fields);
    type.attr("__module__") = "opweave._core";
    type.attr("__doc__") = doc;
    m.attr(name) = type;
    return type.ptr();
}

void bind_records(py::module_& m) {
    g_origin_type = named_tuple(
        m, "CodeOrigin", "what file line",
        "Where a fragment of generated code came from: `what` (\"node 0 MyOp c_code\"),\n"
        "the `file` its text was read from (\"\": none) and the `line` of that file it\n"
        "starts at. Any (str, str, int) tuple converts.");
    g_fragment_type = named_tuple(
        m, "CodeFragment", "text origin",
        "A piece of code and the index of its CodeOrigin in ModuleSpec.origins (-1:\n"
        "written by opweave itself). Any (str, int) tuple converts.");
    g_step_type = named_tuple(
        m, "Step", "id run undo args",
        "One step of the module's init or run: a positive `id` unique among the\n"
        "module's steps (what a failure reports), the names of its `run` and `undo`\n"
        "functions (\"\": none) and the `args` they get. Any (int, str, str, [int])\n"
        "tuple converts.");
    g_line_range_type = named_tuple(
        m, "LineRange", "first last origin",
        "Lines `first` to `last` (1-based, inclusive) of an assembled text, and the\n"
        "index of the origin of their code (-1: none).");
}

void bind_specs(py::module_& m) {
    py::class_<UnitSpec>(m, "UnitSpec",
                         "A compile unit of a module (see module_source.hpp): code compiled on\n"
                         "its own and linked with the module. Fields read as copies: assign a\n"
                         "whole field to change it.")
        .def(py::init([](std::vector<std::string> headers, Fragments support_code,
                         Definitions definitions, Fragments init_code, Fragments init_code_apply,
                         std::string text, std::string init_function) {
                 return UnitSpec{std::move(headers),   std::move(support_code),
                                 std::move(definitions), std::move(init_code),
                                 std::move(init_code_apply), std::move(text),
                                 std::move(init_function)};
             }),
             py::kw_only(), py::arg("headers") = std::vector<std::string>{},
             py::arg("support_code") = Fragments{}, py::arg("definitions") = Definitions{},
             py::arg("init_code") = Fragments{}, py::arg("init_code_apply") = Fragments{},
             py::arg("text") = "", py::arg("init_function") = "")
        .def_readwrite("headers", &UnitSpec::headers)
        .def_readwrite("support_code", &UnitSpec::support_code)
        .def_readwrite("definitions", &UnitSpec::definitions)
        .def_readwrite("init_code", &UnitSpec::init_code)
        .def_readwrite("init_code_apply", &UnitSpec::init_code_apply)
        .def_readwrite("text", &UnitSpec::text,
                       "A unit given as it is (a cached unit's source), with init_function.")
        .def_readwrite("init_function", &UnitSpec::init_function);

    py::class_<GraphExport>(m, "GraphExport",
                            "A graph the module exports besides its own: the graph of one node,\n"
                            "under the `key` of that node's code. Its `definitions` define the\n"
                            "opweave_graph_abi `table` (graph_abi.h).")
        .def(py::init([](std::string key, std::string table, Definitions definitions) {
                 return GraphExport{std::move(key), std::move(table), std::move(definitions)};
             }),
             py::kw_only(), py::arg("key"), py::arg("table"),
             py::arg("definitions") = Definitions{})
        .def_readwrite("key", &GraphExport::key)
        .def_readwrite("table", &GraphExport::table)
        .def_readwrite("definitions", &GraphExport::definitions);
}

void bind_module_spec(py::module_& m) {
    py::class_<ModuleSpec>(
        m, "ModuleSpec",
        "The parts of a graph module (see module_source.hpp), for assemble_module.\n"
        "Every part is a keyword; fields read as copies: assign a whole field to\n"
        "change it, or copy() the spec.")
        .def(py::init([](std::vector<CodeOrigin> origins, std::vector<std::string> headers,
                         Fragments support_code, Definitions definitions, Fragments members,
                         Definitions step_functions, std::vector<Step> init_steps,
                         std::vector<Step> run_steps, Fragments init_code,
                         Fragments init_code_apply, std::vector<UnitSpec> units,
                         Definitions unit_names, std::vector<GraphExport> exports, int n_inputs, int n_outputs,
                         int n_orphans, std::string source_name) {
                 return ModuleSpec{std::move(origins),        std::move(headers),
                                   std::move(support_code),   std::move(definitions),
                                   std::move(members),        std::move(step_functions),
                                   std::move(init_steps),     std::move(run_steps),
                                   std::move(init_code),      std::move(init_code_apply),
                                   std::move(units),          std::move(unit_names),
                                   std::move(exports),
                                   n_inputs,                  n_outputs,
                                   n_orphans,                 std::move(source_name)};
             }),
             py::kw_only(), py::arg("origins") = std::vector<CodeOrigin>{},
             py::arg("headers") = std::vector<std::string>{},
             py::arg("support_code") = Fragments{}, py::arg("definitions") = Definitions{},
             py::arg("members") = Fragments{}, py::arg("step_functions") = Definitions{},
             py::arg("init_steps") = std::vector<Step>{},
             py::arg("run_steps") = std::vector<Step>{}, py::arg("init_code") = Fragments{},
             py::arg("init_code_apply") = Fragments{},
             py::arg("units") = std::vector<UnitSpec>{},
             py::arg("unit_names") = Definitions{},
             py::arg("exports") = std::vector<GraphExport>{}, py::arg("n_inputs") = 0,
             py::arg("n_outputs") = 0, py::arg("n_orphans") = 0,
             py::arg("source_name") = ModuleSpec{}.source_name)
        .def("copy", [](const ModuleSpec& spec) { return spec; }, "A copy of this spec.")
        .def_readwrite("origins", &ModuleSpec::origins)
        .def_readwrite("headers", &ModuleSpec::headers)
        .def_readwrite("support_code", &ModuleSpec::support_code)
        .def_readwrite("definitions", &ModuleSpec::definitions)
        .def_readwrite("members", &ModuleSpec::members)
        .def_readwrite("step_functions", &ModuleSpec::step_functions)
        .def_readwrite("init_steps", &ModuleSpec::init_steps)
        .def_readwrite("run_steps", &ModuleSpec::run_steps)
        .def_readwrite("init_code", &ModuleSpec::init_code)
        .def_readwrite("init_code_apply", &ModuleSpec::init_code_apply)
        .def_readwrite("units", &ModuleSpec::units)
        .def_readwrite("unit_names", &ModuleSpec::unit_names)
        .def_readwrite("exports", &ModuleSpec::exports)
        .def_readwrite("n_inputs", &ModuleSpec::n_inputs)
        .def_readwrite("n_outputs", &ModuleSpec::n_outputs)
        .def_readwrite("n_orphans", &ModuleSpec::n_orphans)
        .def_readwrite("source_name", &ModuleSpec::source_name);
}

// (origin index, line of that origin's code) of generated line `line`.
std::optional<std::pair<long long, int>> origin_line(const std::vector<LineRange>& line_map,
                                                     int line) {
    const LineRange* range = range_of_line(line_map, line);
    if (range == nullptr) {
        return std::nullopt;
    }
    return std::make_pair(origin_index(range->origin), line - range->first + 1);
}

constexpr const char* k_origin_of_line_doc =
    "(origin index, line of that origin's code, 1-based) of generated line `line`,\n"
    "or None for a line opweave wrote.";

void bind_assembled(py::module_& m) {
    py::class_<AssembledUnit>(m, "AssembledUnit", "The text of one compile unit of a module.")
        .def_property_readonly("text", [](const AssembledUnit& unit) { return text(unit.text); })
        .def_readonly("init_function", &AssembledUnit::init_function)
        .def_readonly("line_map", &AssembledUnit::line_map)
        .def(
            "origin_of_line",
            [](const AssembledUnit& unit, int line) { return origin_line(unit.line_map, line); },
            py::arg("line"), k_origin_of_line_doc);

    py::class_<AssembledModule>(m, "AssembledModule",
                                "A laid-out module: its `text`, `content_key` (SHA-256 of the\n"
                                "text), `line_map` (LineRange, sorted), `units`, and with units its\n"
                                "`body` (see module_source.hpp).")
        .def_property_readonly("text",
                               [](const AssembledModule& module) { return text(module.text); })
        .def_readonly("content_key", &AssembledModule::content_key)
        .def_readonly("line_map", &AssembledModule::line_map)
        .def_readonly("units", &AssembledModule::units)
        .def_readonly("body", &AssembledModule::body)
        .def(
            "origin_of_line",
            [](const AssembledModule& module, int line) {
                return origin_line(module.line_map, line);
            },
            py::arg("line"), k_origin_of_line_doc);
}

}  // namespace

void init_assembly(py::module_& m) {
    m.attr("GRAPH_LAYOUT_VERSION") = k_graph_layout_version;
    m.attr("PYTHON_PRELUDE") = std::string(k_python_prelude);
    m.attr("GRAPH_MODULE_NAME") = k_graph_module_name;
    bind_records(m);
    bind_specs(m);
    bind_module_spec(m);
    bind_assembled(m);
    m.def(
        "assemble_module",
        // With the GIL held: `spec` is Python's to change (a few ms, even for
        // thousands of nodes).
        [](const ModuleSpec& spec) { return assemble_module(spec); },
        py::arg("spec"),
        "Lays out a graph module from its parts (see module_source.hpp). Raises\n"
        "ValueError for an inconsistent spec (a step id that is not positive or not\n"
        "unique, a step without a run function, a function name that is not an\n"
        "identifier, an origin index out of range, a negative count).");
}

}  // namespace opweave::bindings

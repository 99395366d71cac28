// opweave._core: assemble_module, from a Python description of the module.
#include <pybind11/stl.h>

#include <initializer_list>
#include <string>

#include "bindings/bindings.hpp"
#include "opweave/module_source.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

// A key of `dict` that `known` does not list raises ValueError naming it: a
// misspelt key would otherwise leave its part out of the module, silently.
void check_keys(const py::dict& dict, std::initializer_list<const char*> known,
                const char* what) {
    for (const auto& item : dict) {
        const std::string key = py::str(item.first);
        bool found = false;
        for (const char* name : known) {
            found = found || key == name;
        }
        if (!found) {
            std::string names;
            for (const char* name : known) {
                names += names.empty() ? "" : ", ";
                names += name;
            }
            throw py::value_error(std::string(what) + " has no part '" + key + "' (its parts: " +
                                  names + ")");
        }
    }
}

// (text, origin) with origin -1 for "none".
CodeFragment to_fragment(const py::handle& item) {
    auto pair = item.cast<py::tuple>();
    if (pair.size() != 2) {
        throw py::value_error("a code fragment is a (text, origin) pair");
    }
    CodeFragment fragment;
    fragment.text = pair[0].cast<std::string>();
    auto origin = pair[1].cast<long long>();
    fragment.origin = origin < 0 ? k_no_origin : static_cast<std::size_t>(origin);
    return fragment;
}

std::vector<CodeFragment> to_fragments(const py::dict& spec, const char* key) {
    std::vector<CodeFragment> fragments;
    if (spec.contains(key)) {
        for (const py::handle item : spec[key]) {
            fragments.push_back(to_fragment(item));
        }
    }
    return fragments;
}

std::vector<std::vector<CodeFragment>> to_definitions(const py::dict& spec, const char* key) {
    std::vector<std::vector<CodeFragment>> definitions;
    if (spec.contains(key)) {
        for (const py::handle definition : spec[key]) {
            std::vector<CodeFragment> parts;
            for (const py::handle item : definition) {
                parts.push_back(to_fragment(item));
            }
            definitions.push_back(std::move(parts));
        }
    }
    return definitions;
}

// (id, run, undo, [args])
std::vector<Step> to_steps(const py::dict& spec, const char* key) {
    std::vector<Step> steps;
    if (!spec.contains(key)) {
        return steps;
    }
    for (const py::handle item : spec[key]) {
        auto fields = item.cast<py::tuple>();
        if (fields.size() != 4) {
            throw py::value_error(std::string(key) + ": a step is (id, run, undo, args)");
        }
        steps.push_back(Step{fields[0].cast<int>(), fields[1].cast<std::string>(),
                             fields[2].cast<std::string>(), fields[3].cast<std::vector<int>>()});
    }
    return steps;
}

// {headers, support_code, definitions, init_code, init_code_apply}
UnitSpec to_unit(const py::handle& item) {
    const auto unit = item.cast<py::dict>();
    check_keys(unit, {"headers", "support_code", "definitions", "init_code", "init_code_apply"},
               "a unit");
    UnitSpec out;
    if (unit.contains("headers")) {
        out.headers = unit["headers"].cast<std::vector<std::string>>();
    }
    out.support_code = to_fragments(unit, "support_code");
    out.definitions = to_definitions(unit, "definitions");
    out.init_code = to_fragments(unit, "init_code");
    out.init_code_apply = to_fragments(unit, "init_code_apply");
    return out;
}

int to_count(const py::dict& spec, const char* key) {
    return spec.contains(key) ? spec[key].cast<int>() : 0;
}

// {key, table, definitions}
GraphExport to_export(const py::handle& item) {
    const auto graph = item.cast<py::dict>();
    check_keys(graph, {"key", "table", "definitions"}, "an export");
    GraphExport out;
    out.key = graph["key"].cast<std::string>();
    out.table = graph["table"].cast<std::string>();
    out.definitions = to_definitions(graph, "definitions");
    return out;
}

py::list to_line_map(const std::vector<LineRange>& ranges) {
    py::list line_map;
    for (const LineRange& range : ranges) {
        line_map.append(py::make_tuple(range.first, range.last, range.origin));
    }
    return line_map;
}

ModuleSpec to_spec(const py::dict& spec) {
    check_keys(spec,
               {"origins", "headers", "support_code", "init_code", "init_code_apply",
                "definitions", "members", "step_functions", "init_steps", "run_steps", "units",
                "exports", "n_inputs", "n_outputs", "n_orphans", "source_name"},
               "a module spec");
    ModuleSpec out;
    if (spec.contains("origins")) {
        for (const py::handle item : spec["origins"]) {
            auto fields = item.cast<py::tuple>();
            if (fields.size() != 3) {
                throw py::value_error("an origin is (what, file, line)");
            }
            out.origins.push_back(CodeOrigin{fields[0].cast<std::string>(),
                                             fields[1].cast<std::string>(), fields[2].cast<int>()});
        }
    }
    if (spec.contains("headers")) {
        out.headers = spec["headers"].cast<std::vector<std::string>>();
    }
    out.support_code = to_fragments(spec, "support_code");
    out.init_code = to_fragments(spec, "init_code");
    out.init_code_apply = to_fragments(spec, "init_code_apply");
    out.definitions = to_definitions(spec, "definitions");
    out.members = to_fragments(spec, "members");
    out.step_functions = to_definitions(spec, "step_functions");
    out.init_steps = to_steps(spec, "init_steps");
    out.run_steps = to_steps(spec, "run_steps");
    if (spec.contains("units")) {
        for (const py::handle unit : spec["units"]) {
            out.units.push_back(to_unit(unit));
        }
    }
    if (spec.contains("exports")) {
        for (const py::handle graph : spec["exports"]) {
            out.exports.push_back(to_export(graph));
        }
    }
    out.n_inputs = to_count(spec, "n_inputs");
    out.n_outputs = to_count(spec, "n_outputs");
    out.n_orphans = to_count(spec, "n_orphans");
    if (spec.contains("source_name")) {
        out.source_name = spec["source_name"].cast<std::string>();
    }
    return out;
}

}  // namespace

void init_assembly(py::module_& m) {
    m.attr("GRAPH_LAYOUT_VERSION") = k_graph_layout_version;
    m.attr("PYTHON_PRELUDE") = std::string(k_python_prelude);
    m.attr("NUMPY_PRELUDE") = std::string(k_numpy_prelude);
    m.attr("GRAPH_MODULE_NAME") = k_graph_module_name;
    m.def(
        "assemble_module",
        [](const py::dict& spec) {
            ModuleSpec parsed = to_spec(spec);
            AssembledModule module;
            {
                py::gil_scoped_release release;
                module = assemble_module(parsed);
            }
            py::list units;
            for (const AssembledUnit& unit : module.units) {
                py::dict assembled;
                assembled["text"] = text(unit.text);
                assembled["init_function"] = unit.init_function;
                assembled["line_map"] = to_line_map(unit.line_map);
                units.append(assembled);
            }
            py::dict result;
            result["text"] = text(module.text);
            result["content_key"] = module.content_key;
            result["line_map"] = to_line_map(module.line_map);
            result["units"] = units;
            return result;
        },
        py::arg("spec"),
        "Lays out a graph module from its parts. `spec` is a dict with:\n"
        "  origins: [(what, file, line)], headers: [str],\n"
        "  support_code, init_code, init_code_apply: [(text, origin)],\n"
        "  definitions, step_functions: [[(text, origin)]] (before and after the\n"
        "    graph struct), members: [(text, origin)] (inside it),\n"
        "  init_steps, run_steps: [(id, run, undo, [int])] (function names, \"\": none),\n"
        "  n_inputs, n_outputs, n_orphans: int, source_name: str,\n"
        "  units: [{headers, support_code, definitions, init_code, init_code_apply}]\n"
        "    (compile units, see module_source.hpp),\n"
        "  exports: [{key, table, definitions}] (graphs exported besides the module's\n"
        "    own: `definitions` define the opweave_graph_abi `table`; the module's\n"
        "    `nodes` dict maps each key to a capsule of its table),\n"
        "where every fragment is (text, origin index or -1). Returns a dict with\n"
        "the module `text`, its `content_key` (SHA-256), `line_map`:\n"
        "[(first_line, last_line, origin)], and `units`: [{text, init_function,\n"
        "line_map}]. Raises ValueError for a bad spec.");
}

}  // namespace opweave::bindings

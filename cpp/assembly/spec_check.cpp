// opweave core (internal): the checks of a ModuleSpec (see spec_check.hpp).
#include "assembly/spec_check.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>
#include <string>

namespace opweave::assembly {

namespace {

void check_origin(const ModuleSpec& spec, const CodeFragment& fragment) {
    if (fragment.origin != k_no_origin && fragment.origin >= spec.origins.size()) {
        throw std::invalid_argument("module spec: origin index " + std::to_string(fragment.origin) +
                                    " out of range (" + std::to_string(spec.origins.size()) +
                                    " origins)");
    }
}

bool is_identifier(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

void check_step(std::set<int>& ids, const Step& step) {
    const std::string id = std::to_string(step.id);
    if (step.id <= 0) {
        throw std::invalid_argument("module spec: step id " + id + " is not positive");
    }
    if (!ids.insert(step.id).second) {
        throw std::invalid_argument("module spec: step id " + id + " is used twice");
    }
    if (!is_identifier(step.run) || (!step.undo.empty() && !is_identifier(step.undo))) {
        throw std::invalid_argument("module spec: step " + id +
                                    " needs a run function, and function names must be "
                                    "C identifiers");
    }
}

void check_fragments(const ModuleSpec& spec, const std::vector<CodeFragment>& fragments) {
    for (const CodeFragment& fragment : fragments) {
        check_origin(spec, fragment);
    }
}

// The graph's own parts: counts, steps, members, definitions, step functions.
void validate_graph(const ModuleSpec& spec) {
    if (spec.n_inputs < 0 || spec.n_outputs < 0 || spec.n_orphans < 0) {
        throw std::invalid_argument("module spec: negative input, output or orphan count");
    }
    std::set<int> ids;
    for (const auto* steps : {&spec.init_steps, &spec.run_steps}) {
        for (const Step& step : *steps) {
            check_step(ids, step);
        }
    }
    check_fragments(spec, spec.members);
    for (const auto* list : {&spec.definitions, &spec.step_functions}) {
        for (const std::vector<CodeFragment>& definition : *list) {
            check_fragments(spec, definition);
        }
    }
}

bool is_export_key(const std::string& key) {
    return !key.empty() && key.size() <= 128 &&
           std::all_of(key.begin(), key.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
           });
}

}  // namespace

void validate_spec(const ModuleSpec& spec) {
    validate_graph(spec);
    std::set<std::string> keys;
    for (const GraphExport& graph : spec.exports) {
        if (!is_export_key(graph.key) || !keys.insert(graph.key).second ||
            !is_identifier(graph.table)) {
            throw std::invalid_argument("module spec: export '" + graph.key +
                                        "' needs a key of 1 to 128 characters of "
                                        "[0-9A-Za-z_-] used once, and a table named by a C "
                                        "identifier");
        }
        for (const std::vector<CodeFragment>& definition : graph.definitions) {
            check_fragments(spec, definition);
        }
    }
    for (const auto* list : {&spec.support_code, &spec.init_code, &spec.init_code_apply}) {
        check_fragments(spec, *list);
    }
    if (spec.units.empty() && !spec.unit_names.empty()) {
        throw std::invalid_argument("module spec: unit names are given only with units");
    }
    for (const std::vector<CodeFragment>& definition : spec.unit_names) {
        check_fragments(spec, definition);
    }
    for (const UnitSpec& unit : spec.units) {
        const bool parts = !unit.headers.empty() || !unit.support_code.empty() ||
                           !unit.definitions.empty() || !unit.init_code.empty() ||
                           !unit.init_code_apply.empty();
        if (!unit.text.empty() && (parts || !is_identifier(unit.init_function))) {
            throw std::invalid_argument(
                "a unit given as text has an init function that is a C identifier, and no "
                "other parts");
        }
        if (unit.text.empty() && !unit.init_function.empty()) {
            throw std::invalid_argument("a unit's init function is named only with its text");
        }
        check_fragments(spec, unit.support_code);
        check_fragments(spec, unit.init_code);
        check_fragments(spec, unit.init_code_apply);
        for (const std::vector<CodeFragment>& definition : unit.definitions) {
            check_fragments(spec, definition);
        }
    }
}

}  // namespace opweave::assembly

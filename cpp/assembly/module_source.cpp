// opweave core: assemble_module (see module_source.hpp for the layout).
#include "opweave/module_source.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "assembly/source_writer.hpp"
#include "assembly/spec_check.hpp"
#include "opweave/graph_abi.h"
#include "opweave/hash.hpp"

namespace opweave {

static_assert(k_graph_layout_version == OPWEAVE_GRAPH_ABI_VERSION,
              "the generated layout and the graph ABI share one version");

namespace {

using assembly::SourceWriter;

// What follows the prelude lines (k_python_prelude) at the top of every
// module; the generated module includes Python.h, the core itself never does.
constexpr const char* k_preamble_rest = "#include <new>\n";

constexpr const char* k_fail_macros =
    "#define OPWEAVE_NO_ERROR_SET \\\n"
    "    if (!PyErr_Occurred()) { PyErr_SetString(PyExc_RuntimeError, \\\n"
    "        \"Unexpected error in an Op's C code. No Python exception was set.\"); }\n"
    "#define OPWEAVE_FAIL(id) { __failure = id; OPWEAVE_NO_ERROR_SET goto __label_##id; }\n"
    "#define OPWEAVE_FAIL_INIT(id) { OPWEAVE_NO_ERROR_SET return id; }\n"
    "static inline void opweave_store(PyObject** slot, PyObject* value) {\n"
    "    Py_XDECREF(*slot);\n"
    "    *slot = value;\n"
    "    Py_INCREF(value);\n"
    "}\n";

// The graph ABI (include/opweave/graph_abi.h), repeated so that generated
// modules need no opweave header.
constexpr const char* k_abi_type =
    "typedef struct opweave_graph_abi {\n"
    "    int abi_version;\n"
    "    int n_inputs;\n"
    "    int n_outputs;\n"
    "    int n_orphans;\n"
    "    void* (*create)(PyObject* const* orphans);\n"
    "    int (*run)(void* graph, PyObject* const* inputs, PyObject** outputs);\n"
    "    void (*destroy)(void* graph);\n"
    "} opweave_graph_abi;\n"
    "\n";

// The ABI functions of the graph struct in scope (the module's or an export's).
constexpr const char* k_abi_functions =
    "static void* opweave_create(PyObject* const* orphans) {\n"
    "    opweave_graph* graph = new (std::nothrow) opweave_graph();\n"
    "    if (graph == NULL) { PyErr_NoMemory(); return NULL; }\n"
    "    if (graph->init(orphans) != 0) {\n"
    "        PyObject *type, *value, *traceback;\n"
    "        PyErr_Fetch(&type, &value, &traceback);\n"
    "        graph->cleanup();\n"
    "        delete graph;\n"
    "        PyErr_Restore(type, value, traceback);\n"
    "        return NULL;\n"
    "    }\n"
    "    return graph;\n"
    "}\n"
    "\n"
    "static int opweave_run(void* graph, PyObject* const* inputs, PyObject** outputs) {\n"
    "    return static_cast<opweave_graph*>(graph)->run(inputs, outputs);\n"
    "}\n"
    "\n"
    "static void opweave_destroy(void* graph) {\n"
    "    opweave_graph* self = static_cast<opweave_graph*>(graph);\n"
    "    self->cleanup();\n"
    "    delete self;\n"
    "}\n";

constexpr const char* k_exec_head =
    "static int opweave_exec(PyObject* module) {\n"
    "    PyObject* done = opweave_module_init();\n"
    "    if (done == NULL) { return -1; }\n"
    "    Py_DECREF(done);\n";

constexpr const char* k_module_tail =
    "    PyObject* abi = PyCapsule_New((void*)&opweave_abi_table, OPWEAVE_ABI_CAPSULE, NULL);\n"
    "    if (abi == NULL) { return -1; }\n"
    "    int status = PyModule_AddObjectRef(module, \"abi\", abi);\n"
    "    Py_DECREF(abi);\n"
    "    return status;\n"
    "}\n"
    "\n"
    "static PyModuleDef_Slot opweave_slots[] = {\n"
    "    {Py_mod_exec, (void*)opweave_exec},\n"
    "    {0, NULL},\n"
    "};\n"
    "\n"
    "static struct PyModuleDef opweave_moduledef = {\n"
    "    PyModuleDef_HEAD_INIT, \"opweave_graph\", NULL, 0, NULL, opweave_slots, NULL, NULL, NULL,\n"
    "};\n"
    "\n"
    "PyMODINIT_FUNC PyInit_opweave_graph(void) { return PyModuleDef_Init(&opweave_moduledef); }\n";

// What lays out one graph: the module's own or an export.
struct GraphParts {
    const std::vector<std::vector<CodeFragment>>& definitions;
    const std::vector<CodeFragment>& members;
    const std::vector<std::vector<CodeFragment>>& step_functions;
    const std::vector<Step>& init_steps;
    const std::vector<Step>& run_steps;
    int n_inputs;
    int n_outputs;
    int n_orphans;
};

GraphParts parts_of(const ModuleSpec& spec) {
    return {spec.definitions, spec.members,   spec.step_functions, spec.init_steps,
            spec.run_steps,   spec.n_inputs,  spec.n_outputs,      spec.n_orphans};
}

std::string include_line(const std::string& header) {
    if (!header.empty() && (header.front() == '<' || header.front() == '"')) {
        return "#include " + header + "\n";
    }
    return "#include \"" + header + "\"\n";
}

// The includes: the Python prelude and <new>, the module's shared headers,
// then the text's own (each header once).
void write_includes(SourceWriter& out, const std::vector<std::string>& shared,
                    const std::vector<std::string>& headers) {
    out.raw(std::string(k_python_prelude) + k_preamble_rest);
    std::unordered_set<std::string> seen;
    for (const std::vector<std::string>* list : {&shared, &headers}) {
        for (const std::string& header : *list) {
            if (!header.empty() && seen.insert(header).second) {
                out.raw(include_line(header));
            }
        }
    }
    out.raw("\n");
}

// Fragments whose exact text was already written are skipped.
void write_unique(SourceWriter& out, const std::vector<CodeFragment>& fragments) {
    std::unordered_set<std::string> seen;
    for (const CodeFragment& fragment : fragments) {
        if (!fragment.text.empty() && seen.insert(fragment.text).second) {
            out.fragment(fragment);
        }
    }
}

// The step machinery: the same text for every graph.
constexpr const char* k_step_types =
    "struct opweave_graph;\n"
    "typedef int (*opweave_step_fn)(opweave_graph*, const int*, PyObject* const*, PyObject**);\n"
    "typedef int (*opweave_undo_fn)(opweave_graph*, const int*, int, PyObject**);\n"
    "struct opweave_step {\n"
    "    opweave_step_fn run;\n"
    "    opweave_undo_fn undo;\n"
    "    int id;\n"
    "    int args;  // offset in opweave_step_args\n"
    "};\n\n";

constexpr const char* k_graph_methods =
    "static int opweave_run_steps(opweave_graph* graph, const opweave_step* steps, int count,\n"
    "                             int* reached, PyObject* const* values, PyObject** outputs) {\n"
    "    while (*reached < count) {\n"
    "        const opweave_step& step = steps[(*reached)++];\n"
    "        if (step.run(graph, opweave_step_args + step.args, values, outputs) != 0) {\n"
    "            OPWEAVE_NO_ERROR_SET\n"
    "            return step.id;\n"
    "        }\n"
    "    }\n"
    "    return 0;\n"
    "}\n\n"
    "static int opweave_undo_steps(opweave_graph* graph, const opweave_step* steps, int reached,\n"
    "                              int failure, PyObject** outputs) {\n"
    "    while (reached > 0) {\n"
    "        const opweave_step& step = steps[--reached];\n"
    "        if (step.undo != NULL &&\n"
    "            step.undo(graph, opweave_step_args + step.args, failure, outputs) != 0 &&\n"
    "            failure == 0) {\n"
    "            OPWEAVE_NO_ERROR_SET\n"
    "            failure = step.id;\n"
    "        }\n"
    "    }\n"
    "    return failure;\n"
    "}\n\n"
    "int opweave_graph::init(PyObject* const* orphans) {\n"
    "    __init_reached = 0;\n"
    "    return opweave_run_steps(this, opweave_init_table, opweave_init_count, &__init_reached,\n"
    "                             orphans, NULL);\n"
    "}\n\n"
    "void opweave_graph::cleanup() {\n"
    "    opweave_undo_steps(this, opweave_init_table, __init_reached, 0, NULL);\n"
    "    __init_reached = 0;\n"
    "}\n\n";

constexpr const char* k_run_loop =
    "int opweave_graph::run(PyObject* const* inputs, PyObject** outputs) {\n"
    "    int reached = 0;\n"
    "    int failure = opweave_run_steps(this, opweave_run_table, opweave_run_count, &reached,\n"
    "                                    inputs, outputs);\n"
    "    return opweave_undo_steps(this, opweave_run_table, reached, failure, outputs);\n"
    "}\n\n";

// Up to this many run steps, run() calls them directly rather than through the
// table: the same order and undo rules, but the compiler can inline the step
// functions, which saves a few nanoseconds per step on every call of a small
// graph. Larger graphs loop, so that run() does not grow with the graph.
constexpr std::size_t k_unrolled_steps = 16;

// run() as a straight sequence: step k jumps to the undo of step k on failure.
// `offset`: where the run steps' arguments start in opweave_step_args.
std::string unrolled_run(const std::vector<Step>& steps, int offset) {
    std::string text =
        "int opweave_graph::run(PyObject* const* inputs, PyObject** outputs) {\n"
        "    int failure = 0;\n";
    std::vector<int> offsets;
    for (const Step& step : steps) {
        offsets.push_back(offset);
        offset += static_cast<int>(step.args.size());
    }
    for (std::size_t k = 0; k < steps.size(); ++k) {
        const std::string n = std::to_string(k);
        text += "    if (" + steps[k].run + "(this, opweave_step_args + " +
                std::to_string(offsets[k]) + ", inputs, outputs) != 0) {\n        failure = " +
                std::to_string(steps[k].id) + ";\n        OPWEAVE_NO_ERROR_SET\n        goto undo_" +
                n + ";\n    }\n";
    }
    for (std::size_t k = steps.size(); k-- > 0;) {
        text += "undo_" + std::to_string(k) + ":\n";
        if (!steps[k].undo.empty()) {
            text += "    if (" + steps[k].undo + "(this, opweave_step_args + " +
                    std::to_string(offsets[k]) +
                    ", failure, outputs) != 0 && failure == 0) {\n        OPWEAVE_NO_ERROR_SET\n"
                    "        failure = " + std::to_string(steps[k].id) + ";\n    }\n";
        }
    }
    text += "    (void)inputs;\n    (void)outputs;\n    return failure;\n}\n\n";
    return text;
}

void write_definitions(SourceWriter& out, const std::vector<std::vector<CodeFragment>>& list) {
    for (const std::vector<CodeFragment>& definition : list) {
        for (const CodeFragment& part : definition) {
            if (part.origin == k_no_origin) {
                out.raw(part.text);
            } else {
                out.fragment(part);
            }
        }
        out.raw("\n");
    }
}

// One table of steps (never empty: a C++ array has at least one element).
void write_table(std::string& text, std::string& args, int& n_args, const char* name,
                 const std::vector<Step>& steps) {
    text += "static const opweave_step " + std::string(name) + "[] = {\n";
    for (const Step& step : steps) {
        text += "    {" + step.run + ", " + (step.undo.empty() ? "NULL" : step.undo) + ", " +
                std::to_string(step.id) + ", " + std::to_string(n_args) + "},\n";
        for (int arg : step.args) {
            args += std::to_string(arg) + ",";
            ++n_args;
        }
        if (!step.args.empty()) {
            args += "\n";
        }
    }
    if (steps.empty()) {
        text += "    {NULL, NULL, 0, 0},\n";
    }
    text += "};\n";
}

// Returns where the run steps' arguments start.
int write_tables(SourceWriter& out, const GraphParts& spec) {
    std::string tables;
    std::string args;
    int n_args = 0;
    write_table(tables, args, n_args, "opweave_init_table", spec.init_steps);
    const int run_args = n_args;
    write_table(tables, args, n_args, "opweave_run_table", spec.run_steps);
    out.raw("static const int opweave_step_args[] = {\n" + args + "0};\n");
    out.raw(tables);
    out.raw("static const int opweave_init_count = " + std::to_string(spec.init_steps.size()) +
            ";\nstatic const int opweave_run_count = " + std::to_string(spec.run_steps.size()) +
            ";\n\n");
    return run_args;
}

// With units, what the module shares with them has one name in every
// translation unit (see UnitSpec).
constexpr const char* k_shared_namespace = "opweave_code";

// The graph struct of `graph`, its step functions and tables, and its
// init/cleanup/run, in the namespace the caller opened.
void write_graph_body(SourceWriter& out, const GraphParts& graph) {
    out.raw(k_step_types);
    write_definitions(out, graph.definitions);
    out.raw("struct opweave_graph {\n    int __init_reached;\n");
    for (const CodeFragment& member : graph.members) {
        out.fragment(member);
    }
    out.raw(
        "    int init(PyObject* const* orphans);\n"
        "    void cleanup();\n"
        "    int run(PyObject* const* inputs, PyObject** outputs);\n"
        "};\n\n");
    write_definitions(out, graph.step_functions);
    const int run_args = write_tables(out, graph);
    out.raw(k_graph_methods);
    out.raw(graph.run_steps.size() <= k_unrolled_steps ? unrolled_run(graph.run_steps, run_args)
                                                       : k_run_loop);
}

std::string open_namespace(const ModuleSpec& spec) {
    return spec.units.empty() ? "namespace {\n\n"
                              : "namespace " + std::string(k_shared_namespace) + " {\n\n";
}

void write_graph(SourceWriter& out, const ModuleSpec& spec) {
    out.raw(open_namespace(spec));
    write_graph_body(out, parts_of(spec));
    if (spec.units.empty()) {
        out.raw("}  // namespace\n\n");
    } else {
        out.raw("}  // namespace " + std::string(k_shared_namespace) + "\n\nusing " +
                k_shared_namespace + "::opweave_graph;\n\n");
    }
}

std::string abi_table(const GraphParts& graph) {
    return "\nstatic const opweave_graph_abi opweave_abi_table = {\n    " +
           std::to_string(k_graph_layout_version) + ", " + std::to_string(graph.n_inputs) +
           ", " + std::to_string(graph.n_outputs) + ", " + std::to_string(graph.n_orphans) +
           ",\n    opweave_create, opweave_run, opweave_destroy,\n};\n\n";
}

void write_abi(SourceWriter& out, const ModuleSpec& spec) {
    out.raw("#define OPWEAVE_ABI_CAPSULE \"opweave.graph_abi.v" +
            std::to_string(k_graph_layout_version) + "\"\n");
    out.raw(k_abi_type);
    out.raw(k_abi_functions);
    out.raw(abi_table(parts_of(spec)));
}

// The exports' definitions, in the module's namespace: they see its
// definitions, and the graph ABI type is defined above them.
void write_exports(SourceWriter& out, const ModuleSpec& spec) {
    if (spec.exports.empty()) {
        return;
    }
    out.raw(open_namespace(spec));
    for (const GraphExport& graph : spec.exports) {
        write_definitions(out, graph.definitions);
    }
    out.raw("}  // namespace\n\n");
}

// The part of the module's exec that fills its `node_exports` dict (nothing
// when there are no exports, so that the text of other modules does not
// change). Its name is not the `nodes` of before: exports made before they
// were compiled only in a context their key covers are never used.
std::string exports_exec(const ModuleSpec& spec) {
    if (spec.exports.empty()) {
        return "";
    }
    // One table and one loop, not a block per export: a module of many
    // exports compiles a few lines more, not a few per export.
    const std::string scope = spec.units.empty() ? "" : std::string(k_shared_namespace) + "::";
    std::string text =
        "    static const struct { const char* key; const void* table; } exports[] = {\n";
    for (const GraphExport& graph : spec.exports) {
        text += "        {\"" + graph.key + "\", &" + scope + graph.table + "},\n";
    }
    text +=
        "    };\n"
        "    PyObject* nodes = PyDict_New();\n    if (nodes == NULL) { return -1; }\n"
        "    for (size_t i = 0; i < sizeof(exports) / sizeof(exports[0]); ++i) {\n"
        "        PyObject* table =\n"
        "            PyCapsule_New(const_cast<void*>(exports[i].table), OPWEAVE_ABI_CAPSULE, NULL);\n"
        "        if (table == NULL || PyDict_SetItemString(nodes, exports[i].key, table) != 0) {\n"
        "            Py_XDECREF(table);\n            Py_DECREF(nodes);\n            return -1;\n"
        "        }\n        Py_DECREF(table);\n    }\n";
    text +=
        "    int added = PyModule_AddObjectRef(module, \"node_exports\", nodes);\n"
        "    Py_DECREF(nodes);\n"
        "    if (added != 0) { return -1; }\n";
    return text;
}

// With units, the table of the units' init functions (null-terminated),
// which the module's own source defines and the body runs.
constexpr const char* k_unit_inits = "opweave_unit_inits";

void write_module_init(SourceWriter& out, const ModuleSpec& spec) {
    if (!spec.units.empty()) {
        out.raw("extern PyObject* (*const " + std::string(k_unit_inits) + "[])(void);\n");
    }
    out.raw("static PyObject* opweave_module_init(void) {\n");
    if (!spec.units.empty()) {
        out.raw("    for (int i = 0; " + std::string(k_unit_inits) + "[i] != NULL; ++i) {\n" +
                "        PyObject* done = " + k_unit_inits + "[i]();\n" +
                "        if (done == NULL) { return NULL; }\n        Py_DECREF(done);\n    }\n");
    }
    write_unique(out, spec.init_code);
    for (const CodeFragment& fragment : spec.init_code_apply) {
        out.fragment(fragment);
    }
    out.raw("    Py_RETURN_NONE;\n}\n\n");
    out.raw(k_exec_head);
    out.raw(exports_exec(spec));
    out.raw(k_module_tail);
}

// The top of every text: the preamble, includes, failure macros and
// support code.
void write_head(SourceWriter& out, const char* what, const std::vector<std::string>& shared,
                const std::vector<std::string>& headers,
                const std::vector<CodeFragment>& support_code) {
    out.raw("// Generated by opweave (graph layout " + std::to_string(k_graph_layout_version) +
            ")" + what + ". The module cache is keyed on this text.\n");
    out.source_preamble();
    write_includes(out, shared, headers);
    out.raw(k_fail_macros);
    out.raw("\n");
    write_unique(out, support_code);
    out.raw("\n");
}

AssembledUnit assemble_unit(const ModuleSpec& spec, const std::vector<std::string>& shared,
                            const UnitSpec& unit) {
    if (!unit.text.empty()) {
        return {unit.text, unit.init_function, {}};
    }
    SourceWriter out(spec.origins, k_unit_source_name);
    write_head(out, ", a unit of a graph module", shared, unit.headers, unit.support_code);
    out.raw("namespace " + std::string(k_shared_namespace) + " {\n\n");
    write_definitions(out, unit.definitions);
    out.raw("}  // namespace " + std::string(k_shared_namespace) + "\n\n");
    AssembledUnit assembled;
    assembled.init_function = "opweave_unit_init_" + to_hex(Sha256::of(out.text())).substr(0, 16);
    out.raw("PyObject* " + assembled.init_function + "(void) {\n");
    write_unique(out, unit.init_code);
    for (const CodeFragment& fragment : unit.init_code_apply) {
        out.fragment(fragment);
    }
    out.raw("    Py_RETURN_NONE;\n}\n");
    assembled.text = out.take_text();
    assembled.line_map = out.take_line_map();
    return assembled;
}

// The module's own source when it has units: the unit names and the table
// of the units' init functions. It includes nothing (so it compiles in a
// few milliseconds): PyObject is struct _object, as Python.h has it.
void write_unit_names(SourceWriter& out, const ModuleSpec& spec,
                      const std::vector<AssembledUnit>& units) {
    out.raw("// Generated by opweave (graph layout " + std::to_string(k_graph_layout_version) +
            "), the names of a graph module's units. The module cache is keyed on this text.\n");
    out.source_preamble();
    out.raw("struct _object;\n\nnamespace " + std::string(k_shared_namespace) + " {\n\n");
    write_definitions(out, spec.unit_names);
    out.raw("}  // namespace " + std::string(k_shared_namespace) + "\n\n");
    std::string table = "extern _object* (*const " + std::string(k_unit_inits) + "[])(void) = {\n";
    for (const AssembledUnit& unit : units) {
        out.raw("_object* " + unit.init_function + "(void);\n");
        table += "    &" + unit.init_function + ",\n";
    }
    out.raw(table + "    0,\n};\n");
}

}  // namespace

AssembledModule assemble_module(const ModuleSpec& spec) {
    assembly::validate_spec(spec);
    AssembledModule module;
    const std::vector<std::string> shared = shared_headers(spec);
    for (const UnitSpec& unit : spec.units) {
        module.units.push_back(assemble_unit(spec, shared, unit));
    }
    SourceWriter out(spec.origins, spec.units.empty() ? spec.source_name : k_unit_source_name);
    write_head(out, spec.units.empty() ? "" : ", the body of a graph module", shared,
               spec.headers, spec.support_code);
    write_graph(out, spec);
    write_abi(out, spec);
    write_exports(out, spec);
    write_module_init(out, spec);
    if (spec.units.empty()) {
        module.text = out.take_text();
        module.line_map = out.take_line_map();
    } else {
        module.body.text = out.take_text();
        module.body.line_map = out.take_line_map();
        SourceWriter names(spec.origins, spec.source_name);
        write_unit_names(names, spec, module.units);
        module.text = names.take_text();
        module.line_map = names.take_line_map();
    }
    module.content_key = to_hex(Sha256::of(module.text));
    return module;
}

const LineRange* range_of_line(const std::vector<LineRange>& line_map, int line) {
    auto after = std::upper_bound(
        line_map.begin(), line_map.end(), line,
        [](int value, const LineRange& range) { return value < range.first; });
    if (after == line_map.begin()) {
        return nullptr;
    }
    const LineRange& range = *std::prev(after);
    return line <= range.last ? &range : nullptr;
}

std::size_t origin_of_line(const AssembledModule& module, int line) {
    const LineRange* range = range_of_line(module.line_map, line);
    return range == nullptr ? k_no_origin : range->origin;
}

}  // namespace opweave

// opweave core: assemble_module (see module_source.hpp for the layout).
#include "opweave/module_source.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "assembly/source_writer.hpp"
#include "opweave/graph_abi.h"
#include "opweave/hash.hpp"

namespace opweave {

static_assert(k_graph_layout_version == OPWEAVE_GRAPH_ABI_VERSION,
              "the generated layout and the graph ABI share one version");

namespace {

using detail::SourceWriter;

// The generated module includes Python.h; the core itself never does. The
// directive below is split so that the repository rule that greps the core
// for Python includes finds only real ones.
constexpr const char* k_preamble_head =
    "#define PY_SSIZE_T_CLEAN\n"
    "#" "include <Python.h>\n"
    "#include <new>\n";

constexpr const char* k_fail_macros =
    "#define OPWEAVE_NO_ERROR_SET \\\n"
    "    if (!PyErr_Occurred()) { PyErr_SetString(PyExc_RuntimeError, \\\n"
    "        \"Unexpected error in an Op's C code. No Python exception was set.\"); }\n"
    "#define OPWEAVE_FAIL(id) { __failure = id; OPWEAVE_NO_ERROR_SET goto __label_##id; }\n"
    "#define OPWEAVE_FAIL_INIT(id) { OPWEAVE_NO_ERROR_SET return id; }\n";

// The graph ABI (include/opweave/graph_abi.h), repeated so that generated
// modules need no opweave header.
constexpr const char* k_abi_glue =
    "typedef struct opweave_graph_abi {\n"
    "    int abi_version;\n"
    "    int n_inputs;\n"
    "    int n_outputs;\n"
    "    int n_orphans;\n"
    "    void* (*create)(PyObject* const* orphans);\n"
    "    int (*run)(void* graph, PyObject* const* inputs, PyObject** outputs);\n"
    "    void (*destroy)(void* graph);\n"
    "} opweave_graph_abi;\n"
    "\n"
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

constexpr const char* k_module_tail =
    "static int opweave_exec(PyObject* module) {\n"
    "    PyObject* done = opweave_module_init();\n"
    "    if (done == NULL) { return -1; }\n"
    "    Py_DECREF(done);\n"
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

void check_origin(const ModuleSpec& spec, const CodeFragment& fragment) {
    if (fragment.origin != k_no_origin && fragment.origin >= spec.origins.size()) {
        throw std::invalid_argument("module spec: origin index " + std::to_string(fragment.origin) +
                                    " out of range (" + std::to_string(spec.origins.size()) +
                                    " origins)");
    }
}

void check_id(std::set<int>& ids, int id) {
    if (id <= 0) {
        throw std::invalid_argument("module spec: block id " + std::to_string(id) +
                                    " is not positive");
    }
    if (!ids.insert(id).second) {
        throw std::invalid_argument("module spec: block id " + std::to_string(id) +
                                    " is used twice");
    }
}

void validate(const ModuleSpec& spec) {
    if (spec.n_inputs < 0 || spec.n_outputs < 0 || spec.n_orphans < 0) {
        throw std::invalid_argument("module spec: negative input, output or orphan count");
    }
    std::set<int> ids;
    for (const RunBlock& block : spec.run_blocks) {
        check_id(ids, block.id);
        for (const CodeFragment* f : {&block.declare, &block.behavior, &block.cleanup}) {
            check_origin(spec, *f);
        }
    }
    for (const StructBlock& block : spec.struct_blocks) {
        check_id(ids, block.id);
        for (const CodeFragment* f : {&block.members, &block.init, &block.cleanup}) {
            check_origin(spec, *f);
        }
    }
    for (const auto* list : {&spec.support_code, &spec.init_code, &spec.init_code_apply}) {
        for (const CodeFragment& f : *list) {
            check_origin(spec, f);
        }
    }
}

std::string include_line(const std::string& header) {
    if (!header.empty() && (header.front() == '<' || header.front() == '"')) {
        return "#include " + header + "\n";
    }
    return "#include \"" + header + "\"\n";
}

void write_includes(SourceWriter& out, const ModuleSpec& spec) {
    out.raw(k_preamble_head);
    std::unordered_set<std::string> seen;
    for (const std::string& header : spec.headers) {
        if (!header.empty() && seen.insert(header).second) {
            out.raw(include_line(header));
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

void write_init(SourceWriter& out, const ModuleSpec& spec) {
    out.raw("    int init(PyObject* const* __orphans) {\n        (void)__orphans;\n");
    int reached = 0;
    for (const StructBlock& block : spec.struct_blocks) {
        out.raw("        __init_reached = " + std::to_string(++reached) + ";\n        {\n");
        out.fragment(block.init);
        out.raw("        }\n");
    }
    out.raw("        return 0;\n    }\n\n");
}

void write_cleanup(SourceWriter& out, const ModuleSpec& spec) {
    out.raw("    void cleanup() {\n");
    for (std::size_t i = spec.struct_blocks.size(); i-- > 0;) {
        out.raw("        if (__init_reached > " + std::to_string(i) + ") {\n");
        out.fragment(spec.struct_blocks[i].cleanup);
        out.raw("        }\n");
    }
    out.raw("        __init_reached = 0;\n    }\n\n");
}

void write_run(SourceWriter& out, const ModuleSpec& spec) {
    out.raw(
        "    int run(PyObject* const* __inputs, PyObject** __outputs) {\n"
        "        int __failure = 0;\n"
        "        (void)__inputs;\n"
        "        (void)__outputs;\n");
    for (const RunBlock& block : spec.run_blocks) {
        out.fragment(block.declare);
    }
    for (const RunBlock& block : spec.run_blocks) {
        out.raw("        {\n");
        out.fragment(block.behavior);
    }
    for (auto block = spec.run_blocks.rbegin(); block != spec.run_blocks.rend(); ++block) {
        out.raw("        __label_" + std::to_string(block->id) + ": ;\n");
        out.fragment(block->cleanup);
        out.raw("        }\n");
    }
    out.raw("        return __failure;\n    }\n");
}

void write_struct(SourceWriter& out, const ModuleSpec& spec) {
    out.raw("namespace {\n\nstruct opweave_graph {\n    int __init_reached;\n");
    for (const StructBlock& block : spec.struct_blocks) {
        out.fragment(block.members);
    }
    out.raw("\n");
    write_init(out, spec);
    write_cleanup(out, spec);
    write_run(out, spec);
    out.raw("};\n\n}  // namespace\n\n");
}

void write_abi(SourceWriter& out, const ModuleSpec& spec) {
    out.raw("#define OPWEAVE_ABI_CAPSULE \"opweave.graph_abi.v" +
            std::to_string(k_graph_layout_version) + "\"\n");
    out.raw(k_abi_glue);
    out.raw("\nstatic const opweave_graph_abi opweave_abi_table = {\n    " +
            std::to_string(k_graph_layout_version) + ", " + std::to_string(spec.n_inputs) +
            ", " + std::to_string(spec.n_outputs) + ", " + std::to_string(spec.n_orphans) +
            ",\n    opweave_create, opweave_run, opweave_destroy,\n};\n\n");
}

void write_module_init(SourceWriter& out, const ModuleSpec& spec) {
    out.raw("static PyObject* opweave_module_init(void) {\n");
    write_unique(out, spec.init_code);
    for (const CodeFragment& fragment : spec.init_code_apply) {
        out.fragment(fragment);
    }
    out.raw("    Py_RETURN_NONE;\n}\n\n");
    out.raw(k_module_tail);
}

}  // namespace

AssembledModule assemble_module(const ModuleSpec& spec) {
    validate(spec);
    SourceWriter out(spec.origins, spec.source_name);
    out.raw("// Generated by opweave (graph layout " + std::to_string(k_graph_layout_version) +
            "). The module cache is keyed on this text.\n");
    out.source_preamble();
    write_includes(out, spec);
    out.raw(k_fail_macros);
    out.raw("\n");
    write_unique(out, spec.support_code);
    out.raw("\n");
    write_struct(out, spec);
    write_abi(out, spec);
    write_module_init(out, spec);

    AssembledModule module;
    module.text = out.take_text();
    module.line_map = out.take_line_map();
    module.content_key = to_hex(Sha256::of(module.text));
    return module;
}

std::size_t origin_of_line(const AssembledModule& module, int line) {
    auto after = std::upper_bound(
        module.line_map.begin(), module.line_map.end(), line,
        [](int value, const LineRange& range) { return value < range.first; });
    if (after == module.line_map.begin()) {
        return k_no_origin;
    }
    const LineRange& range = *std::prev(after);
    return line <= range.last ? range.origin : k_no_origin;
}

}  // namespace opweave

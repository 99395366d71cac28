// Unit tests of assemble_module: layout (definitions, members, step
// functions, the step tables and run/init/cleanup), de-duplication, #line
// directives, the line map, the content key, compile units and the
// validation of bad specs.
#include "check.hpp"

#include "opweave/hash.hpp"
#include "opweave/module_source.hpp"

#include <stdexcept>
#include <string>
#include <vector>

using opweave::AssembledModule;
using opweave::CodeFragment;
using opweave::ModuleSpec;
using opweave::Step;

namespace {

// Position of `needle` in `text`, failing the test if it is absent.
std::size_t at(const std::string& text, const std::string& needle) {
    std::size_t position = text.find(needle);
    CHECK(position != std::string::npos);
    return position;
}

std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) {
        ++n;
    }
    return n;
}

// Line (1-based) of the first occurrence of `needle`.
int line_of(const std::string& text, const std::string& needle) {
    std::size_t position = at(text, needle);
    int line = 1;
    for (std::size_t i = 0; i < position; ++i) {
        line += text[i] == '\n' ? 1 : 0;
    }
    return line;
}

ModuleSpec two_block_spec() {
    ModuleSpec spec;
    spec.origins = {{"input 0", "", 1}, {"node 0 c_code", "", 1}, {"file code", "/src/op.c", 40}};
    spec.headers = {"<math.h>", "mine.h", "<math.h>"};
    spec.support_code = {{"int helper() { return 1; }\n", 1}, {"int helper() { return 1; }\n", 1}};
    spec.definitions = {
        {{"struct cell_a {\nint take() {\n", opweave::k_no_origin},
         {"BEHAVIOR_A\n", 0},
         {"return 0;\n}\n};\n", opweave::k_no_origin}},
        {{"struct op_b {\nstatic int run() {\n", opweave::k_no_origin},
         {"BEHAVIOR_B\nSECOND_LINE\n", 1},
         {"return 0;\n}\n};\n", opweave::k_no_origin}},
    };
    spec.members = {{"cell_a cell_a_v[1];\n", opweave::k_no_origin}};
    spec.step_functions = {{{"static int take_a(opweave_graph* g, const int* a, "
                             "PyObject* const* v, PyObject** o) { return 0; }\n",
                             opweave::k_no_origin}}};
    spec.run_steps = {Step{1, "take_a", "drop_a", {0, 7}}, Step{3, "node_b", "", {0}}};
    spec.init_steps = {Step{5, "init_s1", "clean_s1", {}}, Step{6, "init_s2", "", {4, 2}}};
    spec.init_code = {{"import_array();\n", 0}, {"import_array();\n", 0}};
    spec.init_code_apply = {{"APPLY_INIT\n", 2}};
    spec.n_inputs = 1;
    spec.n_outputs = 1;
    return spec;
}

}  // namespace

OPWEAVE_TEST(definitions_then_the_graph_struct_then_step_functions_and_tables) {
    const std::string text = opweave::assemble_module(two_block_spec()).text;
    CHECK(at(text, "struct cell_a {") < at(text, "BEHAVIOR_A"));
    CHECK(at(text, "BEHAVIOR_A") < at(text, "struct op_b {"));
    CHECK(at(text, "struct op_b {") < at(text, "struct opweave_graph {"));
    CHECK(at(text, "struct opweave_graph {") < at(text, "cell_a cell_a_v[1];"));
    CHECK(at(text, "cell_a cell_a_v[1];") < at(text, "static int take_a("));
    CHECK(at(text, "static int take_a(") < at(text, "opweave_step_args[]"));
    // Arguments in step order: the init steps', then the run steps'.
    CHECK(text.find("opweave_step_args[] = {\n4,2,\n0,7,\n0,\n0};") != std::string::npos);
    CHECK(text.find("{init_s1, clean_s1, 5, 0},\n    {init_s2, NULL, 6, 0},") !=
          std::string::npos);
    CHECK(text.find("{take_a, drop_a, 1, 2},\n    {node_b, NULL, 3, 4},") != std::string::npos);
}

OPWEAVE_TEST(small_graphs_run_their_steps_directly_and_undo_in_reverse) {
    const std::string text = opweave::assemble_module(two_block_spec()).text;
    const std::size_t run = at(text, "int opweave_graph::run(");
    CHECK(at(text, "if (take_a(this, opweave_step_args + 2, inputs, outputs) != 0)") > run);
    CHECK(at(text, "take_a(this") < at(text, "node_b(this, opweave_step_args + 4"));
    CHECK(at(text, "node_b(this") < at(text, "undo_1:\n"));
    CHECK(at(text, "undo_1:\n") < at(text, "undo_0:\n    if (drop_a(this"));
    CHECK(text.find("goto undo_1;") != std::string::npos);
}

OPWEAVE_TEST(large_graphs_loop_over_the_table) {
    ModuleSpec spec = two_block_spec();
    spec.run_steps.clear();
    for (int k = 1; k <= 40; ++k) {
        spec.run_steps.push_back(Step{k, "take_a", "", {k}});
    }
    spec.init_steps.clear();
    const std::string text = opweave::assemble_module(spec).text;
    CHECK(text.find("goto undo_") == std::string::npos);
    CHECK(text.find("opweave_run_steps(this, opweave_run_table, opweave_run_count") !=
          std::string::npos);
    CHECK(text.find("opweave_run_count = 40;") != std::string::npos);
    CHECK_EQ(count(text, "{take_a, NULL, "), 40u);
    // An empty table still has one (unused) row: C++ has no empty arrays.
    CHECK(text.find("opweave_init_table[] = {\n    {NULL, NULL, 0, 0},\n};") != std::string::npos);
    CHECK(text.find("opweave_init_count = 0;") != std::string::npos);
}

OPWEAVE_TEST(duplicates_dropped_for_support_code_headers_and_init_code) {
    const std::string text = opweave::assemble_module(two_block_spec()).text;
    CHECK_EQ(count(text, "int helper()"), 1u);
    CHECK_EQ(count(text, "#include <math.h>"), 1u);
    CHECK_EQ(count(text, "#include \"mine.h\""), 1u);
    CHECK_EQ(count(text, "import_array();"), 1u);
    CHECK(at(text, "import_array();") < at(text, "APPLY_INIT"));
    CHECK(text.find("PyInit_opweave_graph") != std::string::npos);
    CHECK(text.find("\"opweave.graph_abi.v2\"") != std::string::npos);
}

OPWEAVE_TEST(line_map_points_at_each_fragment) {
    const AssembledModule module = opweave::assemble_module(two_block_spec());
    const int first = line_of(module.text, "BEHAVIOR_B");
    CHECK_EQ(opweave::origin_of_line(module, first), std::size_t{1});
    CHECK_EQ(opweave::origin_of_line(module, first + 1), std::size_t{1});
    CHECK_EQ(opweave::origin_of_line(module, line_of(module.text, "BEHAVIOR_A")), std::size_t{0});
    CHECK_EQ(opweave::origin_of_line(module, 1), opweave::k_no_origin);
    CHECK_EQ(opweave::origin_of_line(module, line_of(module.text, "struct op_b {")),
             opweave::k_no_origin);
    // The range of a line says where its fragment starts.
    const opweave::LineRange* range = opweave::range_of_line(module.line_map, first + 1);
    CHECK(range != nullptr);
    CHECK(range->first <= first && first + 1 <= range->last);
    CHECK(opweave::range_of_line(module.line_map, 1) == nullptr);
}

OPWEAVE_TEST(file_fragments_get_line_directives_both_ways) {
    const AssembledModule module = opweave::assemble_module(two_block_spec());
    const std::string& text = module.text;
    const int code_line = line_of(text, "APPLY_INIT");
    // The line before the fragment renames the file; the one after restores it.
    CHECK(text.find("#line 40 \"/src/op.c\"\nAPPLY_INIT\n") != std::string::npos);
    const std::string restore =
        "#line " + std::to_string(code_line + 2) + " OPWEAVE_MODULE_SOURCE\n";
    CHECK(text.find("APPLY_INIT\n" + restore) != std::string::npos);
    // The macro names the source; it defaults to the spec's source name.
    CHECK(text.find("#ifndef OPWEAVE_MODULE_SOURCE\n#define OPWEAVE_MODULE_SOURCE "
                    "\"module.cpp\"\n#endif\n#line 6 OPWEAVE_MODULE_SOURCE\n") !=
          std::string::npos);
}

OPWEAVE_TEST(fragments_with_their_own_line_directives_are_followed_by_a_restore) {
    ModuleSpec spec = two_block_spec();
    // Code that names its file itself (as ExternalCOp sections do), between
    // opweave's own macro lines; the text after it must be module.cpp again.
    spec.support_code.push_back({"#define M 1\n  # line 7 \"/src/v.c\"\nUSER_CODE\n#undef M\n", 1});
    const std::string text = opweave::assemble_module(spec).text;
    const int undef_line = line_of(text, "#undef M");
    const std::string restore =
        "#line " + std::to_string(undef_line + 2) + " OPWEAVE_MODULE_SOURCE\n";
    CHECK(text.find("#undef M\n" + restore) != std::string::npos);
    ModuleSpec tabbed = two_block_spec();
    tabbed.support_code.push_back({"#line\t3 \"/src/t.c\"\nTABBED\n", 1});
    const std::string tabbed_text = opweave::assemble_module(tabbed).text;
    CHECK(tabbed_text.find("TABBED\n#line ") != std::string::npos);
    // A fragment that only mentions "#line" inside code is left alone.
    ModuleSpec plain = two_block_spec();
    plain.support_code.push_back({"const char* s = \"#line\"; int lines;\n", 1});
    const std::string plain_text = opweave::assemble_module(plain).text;
    CHECK(plain_text.find("int lines;\n#line") == std::string::npos);
    CHECK(plain_text.find("int lines;\n") != std::string::npos);
}

OPWEAVE_TEST(content_key_is_the_sha256_of_the_text_and_stable) {
    const AssembledModule a = opweave::assemble_module(two_block_spec());
    const AssembledModule b = opweave::assemble_module(two_block_spec());
    CHECK_EQ(a.content_key, opweave::to_hex(opweave::Sha256::of(a.text)));
    CHECK_EQ(a.text, b.text);
    ModuleSpec changed = two_block_spec();
    changed.definitions[1][1].text = "BEHAVIOR_B2\n";
    CHECK(opweave::assemble_module(changed).content_key != a.content_key);
}

OPWEAVE_TEST(bad_specs_are_rejected) {
    ModuleSpec duplicate_id = two_block_spec();
    duplicate_id.init_steps[0].id = 1;
    CHECK_THROWS_AS(opweave::assemble_module(duplicate_id), std::invalid_argument);
    ModuleSpec zero_id = two_block_spec();
    zero_id.run_steps[0].id = 0;
    CHECK_THROWS_AS(opweave::assemble_module(zero_id), std::invalid_argument);
    ModuleSpec no_function = two_block_spec();
    no_function.run_steps[0].run = "";
    CHECK_THROWS_AS(opweave::assemble_module(no_function), std::invalid_argument);
    ModuleSpec bad_name = two_block_spec();
    bad_name.run_steps[0].undo = "drop(); evil";
    CHECK_THROWS_AS(opweave::assemble_module(bad_name), std::invalid_argument);
    ModuleSpec bad_definition = two_block_spec();
    bad_definition.definitions[0][1].origin = 42;
    CHECK_THROWS_AS(opweave::assemble_module(bad_definition), std::invalid_argument);
    ModuleSpec bad_origin = two_block_spec();
    bad_origin.support_code.push_back(CodeFragment{"x", 99});
    CHECK_THROWS_AS(opweave::assemble_module(bad_origin), std::invalid_argument);
    ModuleSpec negative = two_block_spec();
    negative.n_outputs = -1;
    CHECK_THROWS_AS(opweave::assemble_module(negative), std::invalid_argument);
}

OPWEAVE_TEST(units_are_laid_out_on_their_own_and_initialised_by_the_module) {
    ModuleSpec spec = two_block_spec();
    opweave::UnitSpec unit;
    unit.headers = {"<math.h>"};
    unit.support_code = {{"int helper() { return 1; }\n", 1}};
    unit.definitions = {{{"int op_a_run() { return helper(); }\n", 1}}};
    unit.init_code = {{"init_numpy();\n", 1}, {"init_numpy();\n", 1}};
    spec.units = {unit, unit};
    const opweave::AssembledModule module = opweave::assemble_module(spec);
    CHECK_EQ(module.units.size(), 2u);
    const opweave::AssembledUnit& laid = module.units[0];
    // Equal units are equal texts with one init function name.
    CHECK_EQ(laid.text, module.units[1].text);
    CHECK(laid.text.find("#include <math.h>\n") != std::string::npos);
    CHECK(laid.text.find("mine.h") == std::string::npos);
    CHECK(laid.text.find("namespace opweave_code {") != std::string::npos);
    CHECK(laid.text.find("int op_a_run() { return helper(); }") != std::string::npos);
    CHECK(laid.text.find("PyObject* " + laid.init_function + "(void) {\n") != std::string::npos);
    CHECK_EQ(count(laid.text, "init_numpy();"), 1u);
    CHECK(laid.text.find("opweave_graph") == std::string::npos);
    CHECK_EQ(laid.init_function.size(), std::string("opweave_unit_init_").size() + 16);
    // The body shares the namespace, and runs the units' init first,
    // through the table of the module's own source, which names them.
    const std::string& body = module.body.text;
    CHECK(body.find("namespace opweave_code {") != std::string::npos);
    CHECK(body.find("using opweave_code::opweave_graph;") != std::string::npos);
    CHECK(body.find(laid.init_function) == std::string::npos);
    CHECK(body.find("PyObject* done = opweave_unit_inits[i]();") < body.find("init_numpy();"));
    CHECK(body.find("PyInit_opweave_graph") != std::string::npos);
    CHECK(module.body.init_function.empty());
    CHECK(module.text.find("#include") == std::string::npos);  // it compiles in milliseconds
    CHECK(module.text.find("_object* " + laid.init_function + "(void);\n") != std::string::npos);
    CHECK(module.text.find("    &" + laid.init_function + ",\n    &" + laid.init_function +
                           ",\n    0,\n};") != std::string::npos);
    CHECK(module.text.find("opweave_graph") == std::string::npos);
    // Without units, the module is laid out as before, and has no body.
    spec.units.clear();
    const opweave::AssembledModule one = opweave::assemble_module(spec);
    CHECK(one.text.find("namespace {\n") != std::string::npos);
    CHECK(one.body.text.empty());
}

OPWEAVE_TEST(unit_names_go_to_the_module_s_own_source_and_not_to_the_body) {
    ModuleSpec spec = two_block_spec();
    spec.unit_names = {{{"struct op_x { static int run(); };\n", 1}}};
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);  // without units
    opweave::UnitSpec unit;
    unit.definitions = {{{"int op_x::run() { return 0; }\n", 1}}};
    spec.units = {unit};
    const opweave::AssembledModule module = opweave::assemble_module(spec);
    CHECK(at(module.text, "namespace opweave_code {") < at(module.text, "struct op_x {"));
    CHECK(module.body.text.find("op_x") == std::string::npos);
    // Other names, the same body: an edit of what units hold keeps it.
    spec.unit_names = {{{"struct op_y { static int run(); };\n", 1}}};
    spec.units[0].definitions = {{{"int op_y::run() { return 1; }\n", 1}}};
    const opweave::AssembledModule edited = opweave::assemble_module(spec);
    CHECK_EQ(edited.body.text, module.body.text);
    CHECK(edited.text != module.text);
    spec.unit_names = {{{"x", 99}}};  // an origin out of range
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);
}

OPWEAVE_TEST(a_unit_given_as_text_is_laid_out_as_it_is) {
    ModuleSpec spec = two_block_spec();
    opweave::UnitSpec unit;
    unit.definitions = {{{"int op_a_run() { return 1; }\n", 1}}};
    spec.units = {unit};
    const opweave::AssembledUnit before = opweave::assemble_module(spec).units[0];
    opweave::UnitSpec given;
    given.text = before.text;
    given.init_function = before.init_function;
    spec.units = {given};
    const opweave::AssembledModule module = opweave::assemble_module(spec);
    CHECK_EQ(module.units[0].text, before.text);
    CHECK_EQ(module.units[0].init_function, before.init_function);
    CHECK(module.units[0].line_map.empty());
    CHECK(module.text.find("&" + before.init_function + ",") != std::string::npos);
    // A text with parts, an init function that is not an identifier, or an
    // init function without a text, is not a unit.
    spec.units[0].init_code = {{"x();\n", 1}};
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);
    spec.units[0] = given;
    spec.units[0].init_function = "init(); evil";
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);
    spec.units[0] = opweave::UnitSpec{};
    spec.units[0].init_function = "opweave_unit_init_0";
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);
}

OPWEAVE_TEST(exports_come_after_the_graph_and_fill_the_nodes_dict) {
    ModuleSpec spec = two_block_spec();
    const std::string plain = opweave::assemble_module(spec).text;
    CHECK(plain.find("\"node_exports\"") == std::string::npos);  // no exports: the text of before
    opweave::GraphExport graph;
    graph.key = "0123abcd-node_key";
    graph.table = "opweave_node_one";
    graph.definitions = {{{"static const opweave_graph_abi opweave_node_one = {};\n", 1}}};
    spec.exports = {graph};
    const opweave::AssembledModule module = opweave::assemble_module(spec);
    const std::string& text = module.text;
    CHECK(at(text, "static const opweave_graph_abi opweave_abi_table") <
          at(text, "static const opweave_graph_abi opweave_node_one"));
    CHECK(at(text, "opweave_node_one = {};") < at(text, "static int opweave_exec("));
    // One table of (key, export) and one loop that fills the dict.
    CHECK(text.find("{\"0123abcd-node_key\", &opweave_node_one},") != std::string::npos);
    CHECK(text.find("PyCapsule_New(const_cast<void*>(exports[i].table)") != std::string::npos);
    CHECK(text.find("PyDict_SetItemString(nodes, exports[i].key, table)") != std::string::npos);
    CHECK(text.find("PyModule_AddObjectRef(module, \"node_exports\", nodes)") != std::string::npos);
    // The export's fragment is attributed to its origin.
    const int line = line_of(text, "opweave_node_one = {};");
    CHECK_EQ(opweave::origin_of_line(module, line), 1u);
    // With units, the table is named in the shared namespace.
    spec.units = {opweave::UnitSpec{}};
    CHECK(opweave::assemble_module(spec).body.text.find("&opweave_code::opweave_node_one") !=
          std::string::npos);
}

OPWEAVE_TEST(bad_exports_are_rejected) {
    ModuleSpec spec = two_block_spec();
    opweave::GraphExport graph;
    graph.key = "key\"with quote";
    graph.table = "t";
    spec.exports = {graph};
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);
    spec.exports[0].key = "good_key";
    spec.exports[0].table = "not an identifier";
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);
    spec.exports[0].table = "t";
    spec.exports.push_back(spec.exports[0]);  // the same key twice
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);
    spec.exports.pop_back();
    spec.exports[0].definitions = {{{"x", 99}}};  // an origin out of range
    CHECK_THROWS_AS(opweave::assemble_module(spec), std::invalid_argument);
}

// The includes of a text: from the Python prelude to the first blank line.
std::string includes_of(const std::string& text) {
    const std::size_t from = at(text, std::string(opweave::k_python_prelude));
    return text.substr(from, text.find("\n\n", from) + 1 - from);
}

// Every text of a module with units starts its includes with the module's
// leading standard headers (a body of types' headers, units of ops' headers
// included, in the one-unit order), so that one prelude serves them all.
OPWEAVE_TEST(every_text_of_a_module_starts_with_its_shared_standard_headers) {
    ModuleSpec spec = two_block_spec();
    spec.headers = {"<math.h>", "<numpy/arrayobject.h>"};
    opweave::UnitSpec ops;
    ops.headers = {"<numpy/arrayobject.h>", "<vector>", "<algorithm>", "mine.h", "<map>"};
    ops.definitions = {{{"int op_a_run() { return 1; }\n", 1}}};
    opweave::UnitSpec shapes;
    shapes.headers = {"<math.h>"};
    shapes.definitions = {{{"int op_b_run() { return 2; }\n", 1}}};
    spec.units = {ops, shapes};
    const std::vector<std::string> shared = opweave::shared_headers(spec);
    CHECK(shared == std::vector<std::string>({"<math.h>", "<numpy/arrayobject.h>", "<vector>",
                                              "<algorithm>"}));
    const AssembledModule module = opweave::assemble_module(spec);
    const std::string start = std::string(opweave::k_python_prelude) +
                              "#include <new>\n#include <math.h>\n#include <numpy/arrayobject.h>\n"
                              "#include <vector>\n#include <algorithm>\n";
    CHECK_EQ(includes_of(module.body.text), start);
    CHECK_EQ(includes_of(module.units[0].text), start + "#include \"mine.h\"\n#include <map>\n");
    CHECK_EQ(includes_of(module.units[1].text), start);
    // A header that is not standard ends the run: what follows it stays in
    // the texts that asked for it, where they asked.
    spec.headers = {"<math.h>", "\"types.h\"", "<numpy/arrayobject.h>"};
    CHECK(opweave::shared_headers(spec) == std::vector<std::string>({"<math.h>"}));
    CHECK(opweave::is_standard_header("<numpy/npy_math.h>"));
    CHECK(!opweave::is_standard_header("numpy/npy_math.h"));
    CHECK(!opweave::is_standard_header("<numpy/../../etc/x.h>"));
    CHECK(!opweave::is_standard_header("<cblas.h>"));
    // Without units, the module's includes are its headers, as before.
    spec.units.clear();
    CHECK_EQ(includes_of(opweave::assemble_module(spec).text),
             std::string(opweave::k_python_prelude) +
                 "#include <new>\n#include <math.h>\n#include \"types.h\"\n"
                 "#include <numpy/arrayobject.h>\n");
}

// Unit tests of assemble_module: layout (nesting, labels, init/cleanup
// order), de-duplication, #line directives, the line map, the content key and
// the validation of bad specs.
#include "check.hpp"

#include "opweave/hash.hpp"
#include "opweave/module_source.hpp"

#include <stdexcept>
#include <string>

using opweave::AssembledModule;
using opweave::CodeFragment;
using opweave::ModuleSpec;

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
    spec.run_blocks = {
        {1, {"int a;\n", 0}, {"BEHAVIOR_A\n", 0}, {"CLEANUP_A\n", 0}},
        {3, {"int b;\n", 1}, {"BEHAVIOR_B\nSECOND_LINE\n", 1}, {"CLEANUP_B\n", 1}},
    };
    spec.struct_blocks = {
        {5, {"int s1;\n", 0}, {"INIT_S1\n", 0}, {"CLEAN_S1\n", 0}},
        {6, {"int s2;\n", 0}, {"INIT_S2\n", 0}, {"CLEAN_S2\n", 0}},
    };
    spec.init_code = {{"import_array();\n", 0}, {"import_array();\n", 0}};
    spec.init_code_apply = {{"APPLY_INIT\n", 2}};
    spec.n_inputs = 1;
    spec.n_outputs = 1;
    return spec;
}

}  // namespace

OPWEAVE_TEST(run_blocks_nest_with_labels_in_reverse_order) {
    const std::string text = opweave::assemble_module(two_block_spec()).text;
    // Declarations first, then behaviors in order, then cleanups inside out.
    CHECK(at(text, "int a;") < at(text, "int b;"));
    CHECK(at(text, "int b;") < at(text, "BEHAVIOR_A"));
    CHECK(at(text, "BEHAVIOR_A") < at(text, "BEHAVIOR_B"));
    CHECK(at(text, "BEHAVIOR_B") < at(text, "__label_3: ;"));
    CHECK(at(text, "__label_3: ;") < at(text, "CLEANUP_B"));
    CHECK(at(text, "CLEANUP_B") < at(text, "__label_1: ;"));
    CHECK(at(text, "__label_1: ;") < at(text, "CLEANUP_A"));
    CHECK(text.find("OPWEAVE_FAIL(id) { __failure = id;") != std::string::npos);
}

OPWEAVE_TEST(struct_init_in_order_and_cleanup_in_reverse_up_to_reached_block) {
    const std::string text = opweave::assemble_module(two_block_spec()).text;
    CHECK(at(text, "__init_reached = 1;") < at(text, "INIT_S1"));
    CHECK(at(text, "INIT_S1") < at(text, "__init_reached = 2;"));
    CHECK(at(text, "__init_reached = 2;") < at(text, "INIT_S2"));
    CHECK(at(text, "if (__init_reached > 1)") < at(text, "CLEAN_S2"));
    CHECK(at(text, "CLEAN_S2") < at(text, "if (__init_reached > 0)"));
    CHECK(at(text, "if (__init_reached > 0)") < at(text, "CLEAN_S1"));
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
    CHECK_EQ(opweave::origin_of_line(module, line_of(module.text, "__label_3")),
             opweave::k_no_origin);
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
    changed.run_blocks[1].behavior.text = "BEHAVIOR_B2\n";
    CHECK(opweave::assemble_module(changed).content_key != a.content_key);
}

OPWEAVE_TEST(bad_specs_are_rejected) {
    ModuleSpec duplicate_id = two_block_spec();
    duplicate_id.struct_blocks[0].id = 1;
    CHECK_THROWS_AS(opweave::assemble_module(duplicate_id), std::invalid_argument);
    ModuleSpec zero_id = two_block_spec();
    zero_id.run_blocks[0].id = 0;
    CHECK_THROWS_AS(opweave::assemble_module(zero_id), std::invalid_argument);
    ModuleSpec bad_origin = two_block_spec();
    bad_origin.support_code.push_back(CodeFragment{"x", 99});
    CHECK_THROWS_AS(opweave::assemble_module(bad_origin), std::invalid_argument);
    ModuleSpec negative = two_block_spec();
    negative.n_outputs = -1;
    CHECK_THROWS_AS(opweave::assemble_module(negative), std::invalid_argument);
}

// Tests of what the link of a module from units checks
// (build/link_check.hpp): undefined symbols and names defined twice, as GNU
// ld, gold and lld report them.
#include <string>
#include <vector>

#include "builder/link_check.hpp"
#include "builder/link_merge.hpp"
#include "check.hpp"
#include "opweave/errors.hpp"

using namespace opweave;

namespace {

CompileResult linked_with(std::string diagnostics) {
    CompileResult result;
    result.commands = {{"c++", "-shared", "-o", "module.so", "module.o"}};
    result.diagnostics = std::move(diagnostics);
    return result;
}

}  // namespace

OPWEAVE_TEST(python_symbols_are_expected_and_their_reports_dropped) {
    CompileResult result = linked_with(
        "/usr/bin/ld: module.o: in function `run(int)':\n"
        "module.cpp:(.text+0x2c): warning: undefined reference to `_Py_NoneStruct'\n"
        "module.o:module.cpp:function f(): warning: undefined reference to 'PyErr_SetString'\n"
        "module.o:module.cpp:function f(): warning: undefined reference to '__asan_report'\n"
        "module.cpp:1: warning: something else\n");
    builder::check_undefined_symbols(result);
    CHECK_EQ(result.diagnostics, std::string("module.cpp:1: warning: something else\n"));
}

OPWEAVE_TEST(any_other_undefined_symbol_is_an_error_naming_it) {
    for (const std::string& report :
         {std::string("module.cpp:(.text+0x3e): warning: undefined reference to `missing(int)'\n"),
          std::string("unit-1.o:unit.cpp:function g(): warning: undefined reference to "
                      "'missing(int)'\n")}) {
        CompileResult result = linked_with(report);
        bool thrown = false;
        try {
            builder::check_undefined_symbols(result);
        } catch (const CompileError& error) {
            thrown = true;
            CHECK(std::string(error.what()).find("'missing(int)'") != std::string::npos);
            CHECK_EQ(error.diagnostics(), report);
        }
        CHECK(thrown);
    }
}

OPWEAVE_TEST(the_names_defined_twice_are_read_from_each_linker) {
    const std::vector<std::string> reports = {
        "unit.cpp:(.text+0x0): multiple definition of `helper(int)'; module.o: first defined\n",
        "unit-1.o:unit.cpp:function helper(int): error: multiple definition of 'helper(int)'\n",
        "ld.lld: error: duplicate symbol: helper(int)\n"};
    for (const std::string& report : reports) {
        const std::vector<std::string> names = builder::duplicate_symbols(report);
        CHECK_EQ(names.size(), 1u);
        CHECK_EQ(names.at(0), std::string("helper(int)"));
    }
    CHECK(builder::duplicate_symbols("ld: cannot find -lfoo\n").empty());
    // Each name once, however many times it is reported.
    CHECK_EQ(builder::duplicate_symbols(reports[0] + reports[0]).size(), 1u);
}

OPWEAVE_TEST(a_piece_defines_a_name_only_with_a_body_or_a_value) {
    CHECK(builder::defines("int helper(int x) { return x; }\n", "helper"));
    CHECK(builder::defines("static inline int\nhelper(int x) noexcept\n{\n  return x;\n}\n", "helper"));
    CHECK(builder::defines("int counter = 0;\n", "counter"));
    CHECK(builder::defines("double table[4];\n", "table"));
    CHECK(builder::defines("namespace ns {\nint helper() { return 1; }\n}\n", "helper"));
    CHECK(builder::defines("extern \"C\" {\nint helper() { return 1; }\n}\n", "helper"));
    CHECK(builder::defines("{ int x; }\nint helper() { return 1; }\n", "helper"));  // a brace first
    // Declarations, uses, comments and strings define nothing.
    CHECK(!builder::defines("int helper(int);\n", "helper"));
    CHECK(!builder::defines("extern int counter;\n", "counter"));
    CHECK(!builder::defines("int f() { if (helper(1)) { return 1; } return 0; }\n", "helper"));
    CHECK(!builder::defines("// int helper() { return 1; }\nconst char* s = \"helper() {}\";\n",
                          "helper"));
    CHECK(!builder::defines("int helpers() { return 1; }\n", "helper"));
}

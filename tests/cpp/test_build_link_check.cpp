// Tests of what the link of a module from units checks
// (build/link_check.hpp): undefined symbols and names defined twice, as GNU
// ld, gold and lld report them.
#include <string>
#include <vector>

#include "build/link_check.hpp"
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
    cache::check_undefined_symbols(result);
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
            cache::check_undefined_symbols(result);
        } catch (const CompileError& error) {
            thrown = true;
            CHECK(std::string(error.what()).find("'missing(int)'") != std::string::npos);
            CHECK_EQ(error.diagnostics(), report);
        }
        CHECK(thrown);
    }
}

OPWEAVE_TEST(duplicates_merge_only_when_one_piece_of_shared_code_names_them) {
    const std::vector<std::string> shared = {"int helper(int x) { return x; }\n",
                                             "static int other = 1;\n"};
    const std::vector<std::string> reports = {
        "unit.cpp:(.text+0x0): multiple definition of `helper(int)'; module.o: first defined\n",
        "unit-1.o:unit.cpp:function helper(int): error: multiple definition of 'helper(int)'\n",
        "ld.lld: error: duplicate symbol: opweave_code::helper(int)\n"};
    for (const std::string& report : reports) {
        CHECK(cache::duplicates_from_shared_code(report, shared));
        // Named by two pieces (one may only declare it): not merged.
        CHECK(!cache::duplicates_from_shared_code(report, {shared[0], "int helper(int);\n"}));
        // Named by none (a macro made it): not merged.
        CHECK(!cache::duplicates_from_shared_code(report, {shared[1]}));
    }
    // "helpers" is not "helper".
    CHECK(!cache::duplicates_from_shared_code(reports[0], {"int helpers(int);\n"}));
    // A failure that is not a duplicate.
    CHECK(!cache::duplicates_from_shared_code("ld: cannot find -lfoo\n", shared));
}

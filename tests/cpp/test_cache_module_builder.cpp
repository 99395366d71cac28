// Tests of build_module and the module key with unkeyed flags: the key and
// its material ignore them, build_module passes them to the compiler, and a
// compile that fails with them is retried once without them. A fake compiler
// records jobs; one test uses the real compiler.
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "check.hpp"
#include "fake_compiler.hpp"
#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "temp_dir.hpp"

using namespace opweave;
using opweave_test::FakeCompiler;
using opweave_test::TempDir;
using opweave_test::make_cache;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> k_prelude_flags = {"-include", "/nonexistent/opweave_prelude.h"};

CompileJob base_job() {
    CompileJob job;
    job.flags = {"-DX=1"};
    job.include_dirs = {"/inc"};
    job.libraries = {"m"};
    return job;
}

bool has_word(const std::vector<std::string>& words, const std::string& word) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The command recorded in the only entry of `cache`.
std::string only_command(const ModuleCache& cache) {
    const std::vector<EntryInfo> entries = cache.list();
    CHECK_EQ(entries.size(), static_cast<std::size_t>(1));
    return entries.empty() ? std::string() : entries.front().command;
}

}  // namespace

OPWEAVE_TEST(module_key_ignores_unkeyed_flags) {
    const FakeCompiler compiler;
    const CompileJob plain = base_job();
    CompileJob with_prelude = plain;
    with_prelude.unkeyed_flags = k_prelude_flags;

    CHECK_EQ(module_key("int x;", compiler, plain, "abi"),
             module_key("int x;", compiler, with_prelude, "abi"));
    CHECK_EQ(module_key_material(compiler, plain, "abi"),
             module_key_material(compiler, with_prelude, "abi"));
    CHECK(!contains(module_key_material(compiler, with_prelude, "abi"), "-include"));

    // The same flags as keyed flags do change the key.
    CompileJob keyed = plain;
    keyed.flags.insert(keyed.flags.end(), k_prelude_flags.begin(), k_prelude_flags.end());
    CHECK(module_key("int x;", compiler, plain, "abi") !=
          module_key("int x;", compiler, keyed, "abi"));
}

OPWEAVE_TEST(build_module_passes_unkeyed_flags_and_shares_the_entry) {
    TempDir dir;
    ModuleCache cache = make_cache(dir);
    const FakeCompiler compiler;
    CompileJob with_prelude = base_job();
    with_prelude.unkeyed_flags = k_prelude_flags;

    const BuiltModule first = build_module(cache, "int x;", compiler, base_job(), "abi");
    CHECK(first.outcome == Outcome::built);
    CHECK(compiler.jobs.at(0).unkeyed_flags.empty());

    // Built without the prelude, found with it: the same entry, no compile.
    const BuiltModule second = build_module(cache, "int x;", compiler, with_prelude, "abi");
    CHECK(second.outcome == Outcome::hit);
    CHECK_EQ(second.dir, first.dir);
    CHECK_EQ(compiler.jobs.size(), static_cast<std::size_t>(1));

    // A new module compiled with the prelude gets the flags on its command.
    const BuiltModule third = build_module(cache, "int y;", compiler, with_prelude, "abi");
    CHECK(third.outcome == Outcome::built);
    CHECK_EQ(compiler.jobs.size(), static_cast<std::size_t>(2));
    CHECK(compiler.jobs.at(1).unkeyed_flags == k_prelude_flags);
    CHECK(build_module(cache, "int y;", compiler, base_job(), "abi").outcome == Outcome::hit);
}

OPWEAVE_TEST(failed_compile_with_unkeyed_flags_is_retried_without_them) {
    TempDir dir;
    ModuleCache cache = make_cache(dir);
    FakeCompiler compiler;
    compiler.fail_with_unkeyed_flag = "-include";
    CompileJob job = base_job();
    job.unkeyed_flags = k_prelude_flags;

    const BuiltModule built = build_module(cache, "int x;", compiler, job, "abi");
    CHECK(built.outcome == Outcome::built);
    CHECK(fs::exists(built.library));
    CHECK_EQ(compiler.jobs.size(), static_cast<std::size_t>(2));
    CHECK(compiler.jobs.at(1).unkeyed_flags.empty());
    CHECK(compiler.jobs.at(1).flags == job.flags);
    // The entry records the compile that succeeded.
    CHECK(!contains(only_command(cache), "-include"));
}

OPWEAVE_TEST(genuine_failure_is_reported_from_the_compile_without_unkeyed_flags) {
    TempDir dir;
    ModuleCache cache = make_cache(dir);
    FakeCompiler compiler;
    compiler.always_fail = true;
    CompileJob job = base_job();
    job.unkeyed_flags = k_prelude_flags;
    try {
        build_module(cache, "int x;", compiler, job, "abi");
        CHECK(false);
    } catch (const CompileError& e) {
        CHECK(!has_word(e.command(), "-include"));
        CHECK(contains(e.source().string(), "failed"));
    }
    CHECK_EQ(compiler.jobs.size(), static_cast<std::size_t>(2));

    // Without unkeyed flags there is nothing to retry.
    compiler.jobs.clear();
    CHECK_THROWS_AS(build_module(cache, "int x;", compiler, base_job(), "abi"), CompileError);
    CHECK_EQ(compiler.jobs.size(), static_cast<std::size_t>(1));
}

OPWEAVE_TEST(real_compile_survives_a_vanished_prelude) {
    TempDir dir;
    ModuleCache cache = make_cache(dir);
    const SystemCompiler compiler;
    CompileJob job;
    job.unkeyed_flags = k_prelude_flags;
    const std::string source =
        "extern \"C\" __attribute__((visibility(\"default\"))) int opweave_answer() {\n"
        "    return 42;\n"
        "}\n";
    const BuiltModule built = build_module(cache, source, compiler, job, "");
    CHECK(built.outcome == Outcome::built);
    CHECK(!contains(only_command(cache), "-include"));

    void* handle = ::dlopen(built.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    CHECK(handle != nullptr);
    if (handle != nullptr) {
        using Function = int (*)();
        void* address = ::dlsym(handle, "opweave_answer");
        CHECK(address != nullptr);
        if (address != nullptr) {
            CHECK_EQ(reinterpret_cast<Function>(address)(), 42);
        }
        ::dlclose(handle);
    }
}

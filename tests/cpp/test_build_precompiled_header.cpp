// Tests of precompiled preludes: which compilers support them, what their key
// covers, building and finding an entry, damaged entries, and (with a real
// GCC) that a module compiled with the prelude's flags really uses the .gch.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "call_answer.hpp"
#include "check.hpp"
#include "fake_compiler.hpp"
#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "opweave/precompiled_header.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"
#include "util/zstd.hpp"
#include "builder/staged_prelude.hpp"

using namespace opweave;
using opweave_test::FakeCompiler;
using opweave_test::TempDir;
using opweave_test::k_gcc_version;
using opweave_test::cache_options;
namespace fs = std::filesystem;

namespace {

constexpr const char* k_clang_version =
    "Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\n";
constexpr const char* k_header = "#include <vector>\n#include <string>\n";

CompileJob base_job() {
    CompileJob job;
    job.flags = {"-DX=1"};
    job.include_dirs = {"/inc"};
    return job;
}

ModuleRequest prelude_request(const CompileJob& job, const std::string& extra = "abi") {
    ModuleRequest request;
    request.job = job;
    request.prelude = PreludeRequest{k_header, extra};
    return request;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The precompiled header as the entry keeps it: compressed (this machine
// has libzstd; the C++ suite needs it, see util_zstd's test).
fs::path stored_gch(const fs::path& entry) { return entry / "opweave_prelude.h.gch.zst"; }

std::string decompressed(const fs::path& path) {
    return util::zstd_decompress(util::read_file(path).value_or(""), 1u << 30).value_or("!");
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace

OPWEAVE_TEST(only_gcc_without_a_launcher_supports_preludes) {
    CHECK(supports_prelude(FakeCompiler(k_gcc_version)));
    CHECK(!supports_prelude(FakeCompiler(k_clang_version)));
    CHECK(!supports_prelude(FakeCompiler("fakecxx 1.0\n")));
    FakeCompiler launched(k_gcc_version);
    launched.identity().launcher = {"/usr/bin/ccache"};
    CHECK(!supports_prelude(launched));
}

OPWEAVE_TEST(prelude_key_covers_what_changes_the_header_compile) {
    const FakeCompiler compiler(k_gcc_version);
    const CompileJob job = base_job();
    const std::string key = prelude_key(compiler, job, k_header, "abi");
    CHECK_EQ(key.size(), static_cast<std::size_t>(64));

    // What does not reach a header compile does not change the key.
    CompileJob same = job;
    same.source = "/somewhere/module.cpp";
    same.output = "/somewhere/module.so";
    same.unkeyed_flags = {"-include", "/x.h"};
    same.lib_dirs = {"/lib"};
    same.libraries = {"m"};
    CHECK_EQ(prelude_key(compiler, same, k_header, "abi"), key);

    CompileJob other = job;
    other.flags.push_back("-DY=2");
    CHECK(prelude_key(compiler, other, k_header, "abi") != key);
    other = job;
    other.include_dirs.push_back("/inc2");
    CHECK(prelude_key(compiler, other, k_header, "abi") != key);
    other = job;
    other.opt_level = OptLevel::o3;
    CHECK(prelude_key(compiler, other, k_header, "abi") != key);
    other = job;
    other.debug_info = DebugInfo::yes;
    CHECK(prelude_key(compiler, other, k_header, "abi") != key);
    CHECK(prelude_key(compiler, job, "#include <map>\n", "abi") != key);
    CHECK(prelude_key(compiler, job, k_header, "abi2") != key);
    CHECK(prelude_key(FakeCompiler("g++ 13\nFree Software Foundation\n"), job, k_header, "abi") !=
          key);
    // A prelude never shares a key with a module of the same text.
    CHECK(module_key(k_header, compiler, job, "abi") != key);

    const KeyedText keyed = prelude_key_text(compiler, job, k_header, "abi");
    CHECK_EQ(keyed.key, key);  // one pass gives the key and its text
    // The first field is the version every key recipe answers to.
    CHECK_EQ(keyed.text.rfind("layout: prelude " + std::to_string(k_module_layout_version) + "\n", 0),
             0u);
    CHECK(contains(keyed.text, "flags: -DX=1\n"));
    CHECK(contains(keyed.text, "header:\n  #include <vector>\n  #include <string>\n"));
}

OPWEAVE_TEST(build_prelude_publishes_header_and_gch) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    CompileJob job = base_job();
    job.unkeyed_flags = {"-include", "/old.h"};
    job.libraries = {"m"};
    const std::string key = prelude_key(compiler, job, k_header, "abi");
    CHECK(!find_prelude(cache, key));

    const CacheResult built = build_prelude(cache, compiler, prelude_request(job));
    CHECK(built.outcome == Outcome::built);
    CHECK_EQ(built.entry.dir, cache.entry_dir(key));
    CHECK_EQ(built.entry.kind, std::string("prelude"));
    CHECK_EQ(built.entry.label, std::string("precompiled vector string"));
    CHECK_EQ(*util::read_file(built.entry.dir / "opweave_prelude.h"), std::string(k_header));
    CHECK_EQ(decompressed(stored_gch(built.entry.dir)), compiler.output_content);
    CHECK(!fs::exists(built.entry.dir / k_prelude_gch_name));
    CHECK_EQ(compiler.jobs.size(), 1u);
    CHECK(compiler.jobs.at(0).unkeyed_flags.empty());
    CHECK(compiler.jobs.at(0).libraries.empty());
    CHECK(compiler.jobs.at(0).flags == job.flags);
    CHECK(!compiler.jobs.at(0).depfile.empty());

    CHECK(build_prelude(cache, compiler, prelude_request(job)).outcome == Outcome::hit);
    CHECK_EQ(compiler.jobs.size(), 1u);
    const std::optional<Entry> found = find_prelude(cache, key);
    CHECK(found.has_value() && found->dir == built.entry.dir);
    const std::vector<std::string> flags = prelude_include_flags(built.entry.dir);
    CHECK_EQ(flags.size(), 2u);
    CHECK_EQ(flags.at(0), std::string("-include"));
    CHECK_EQ(flags.at(1), (built.entry.dir / "opweave_prelude.h").string());

    const std::vector<Entry> entries = cache.list();
    CHECK_EQ(entries.size(), 1u);
    CHECK(contains(entries.at(0).key_material, "layout: prelude "));
    CHECK(contains(entries.at(0).command, built.entry.dir.string()));
    CHECK_THROWS_AS(build_prelude(cache, compiler, ModuleRequest{}), std::invalid_argument);
}

OPWEAVE_TEST(damaged_prelude_is_quarantined_and_reported_missing) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    compiler.output_content = std::string(4096, 'p');
    const CompileJob job = base_job();
    const std::string key = prelude_key(compiler, job, k_header, "abi");

    int damaged = 0;
    const auto damage_and_check = [&](const auto& damage) {
        const CacheResult built = build_prelude(cache, compiler, prelude_request(job));
        CHECK(built.outcome == Outcome::built);
        CHECK(find_prelude(cache, key).has_value());
        damage(built.entry.dir);
        CHECK(!find_prelude(cache, key));
        CHECK(!fs::exists(built.entry.dir));  // quarantined, so the next build replaces it
        CHECK_EQ(fs::directory_iterator(dir / "cache" / "v2" / "quarantine") ==
                     fs::directory_iterator(),
                 false);
        ++damaged;
    };
    damage_and_check([](const fs::path& entry) { write_file(stored_gch(entry), "fake"); });
    damage_and_check([](const fs::path& entry) { write_file(stored_gch(entry), ""); });
    damage_and_check([](const fs::path& entry) {  // the same size, other bytes
        write_file(stored_gch(entry), std::string(fs::file_size(stored_gch(entry)), 'q'));
    });
    damage_and_check([](const fs::path& entry) { fs::remove(stored_gch(entry)); });
    damage_and_check([](const fs::path& entry) { fs::remove(entry / "opweave_prelude.h"); });
    damage_and_check([](const fs::path& entry) { fs::remove(entry / "meta.json"); });
    damage_and_check([](const fs::path& entry) { write_file(entry / "meta.json", "{\"form"); });
    CHECK_EQ(compiler.jobs.size(), static_cast<std::size_t>(damaged));
}

OPWEAVE_TEST(failed_prelude_build_publishes_nothing) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    compiler.always_fail = true;
    const CompileJob job = base_job();
    CHECK_THROWS_AS(build_prelude(cache, compiler, prelude_request(job)), CompileError);
    CHECK(!find_prelude(cache, prelude_key(compiler, job, k_header, "abi")));
    CHECK(cache.list().empty());
}

// The real thing: GCC must accept the .gch for a module compiled with the
// same job plus the include flags (`-H` marks a used PCH with "! "), and the
// module must work.
OPWEAVE_TEST(real_gcc_uses_the_prelude) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    const SystemCompiler compiler;
    if (!supports_prelude(compiler)) {
        SKIP(compiler.identity().path + " is not GCC");
    }
    CompileJob job;
    job.flags = {"-DOPWEAVE_PROBE=1", "-Wno-unused-variable"};
    job.opt_level = OptLevel::o3;
    const CacheResult built = build_prelude(cache, compiler, prelude_request(job, ""));
    CHECK(built.outcome == Outcome::built);
    const Entry& prelude = built.entry;

    write_file(dir / "module.cpp",
               "#include <vector>\n"
               "extern \"C\" __attribute__((visibility(\"default\"))) int opweave_answer() {\n"
               "    std::vector<int> v = {40, 2};\n"
               "    return v[0] + v[1] + OPWEAVE_PROBE - 1;\n"
               "}\n");
    job.source = dir / "module.cpp";
    job.output = dir / "module.so";
    // As a build does: staged (decompressed) in a private directory.
    fs::create_directory(dir / "staging");
    std::optional<builder::StagedPrelude> staged =
        builder::StagedPrelude::stage(prelude.dir, dir / "staging");
    CHECK(staged.has_value() && staged->verify(prelude));
    job.unkeyed_flags = staged->include_flags();
    job.unkeyed_flags.insert(job.unkeyed_flags.end(), {"-Winvalid-pch", "-H"});
    const CompileResult result = compiler.compile(job);
    CHECK(contains(result.diagnostics, "! " + (dir / "staging" / k_prelude_gch_name).string()));
    CHECK(!contains(result.diagnostics, "invalid-pch"));

    CHECK_EQ(opweave_test::call_answer(job.output), 42);
}

// Tests of build_module: what the key covers, the prelude it compiles with
// (and the retry without it), libraries named after their content, and the
// headers a build read (recorded, checked, and what a change does). A fake
// compiler records jobs; two tests use the real compiler.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "call_answer.hpp"
#include "check.hpp"
#include "fake_compiler.hpp"
#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "opweave/module_source.hpp"
#include "opweave/precompiled_header.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"
#include "util/zstd.hpp"

using namespace opweave;
using opweave_test::FakeCompiler;
using opweave_test::call_answer;
using opweave_test::TempDir;
using opweave_test::k_gcc_version;
using opweave_test::cache_options;
namespace fs = std::filesystem;

namespace {

// A prelude's text starts with the Python prelude, and only sources whose
// includes start with it compile with it (prelude_text.cpp).
const std::string k_prelude_text = std::string(k_python_prelude) + "#include <vector>\n";

CompileJob base_job() {
    CompileJob job;
    job.flags = {"-DX=1"};
    job.include_dirs = {"/inc"};
    job.libraries = {"m"};
    return job;
}

ModuleRequest request_for(const std::string& source, bool with_prelude = false) {
    ModuleRequest request;
    request.source = source;
    request.job = base_job();
    request.extra = "abi";
    request.label = "TestOp";
    if (with_prelude) {
        request.source = k_prelude_text + source;
        request.prelude = PreludeRequest{k_prelude_text, "abi"};
    }
    return request;
}

bool has_word(const std::vector<std::string>& words, const std::string& word) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Lets the filesystem's clock move past the last write, so that the next
// compile's record of that file is not "racy" (see header_manifest.hpp).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

// The command recorded in the entry of `key`.
std::string command_of(ModuleCache& cache, const std::string& key) {
    const std::optional<Entry> entry = cache.lookup(key);
    CHECK(entry.has_value());
    return entry ? entry->command : std::string();
}


}  // namespace

OPWEAVE_TEST(module_key_ignores_unkeyed_flags_and_the_depfile) {
    const FakeCompiler compiler;
    const CompileJob plain = base_job();
    CompileJob with_extras = plain;
    with_extras.unkeyed_flags = {"-include", "/p/opweave_prelude.h"};
    with_extras.depfile = "/tmp/module.d";

    CHECK_EQ(module_key("int x;", compiler, plain, "abi"),
             module_key("int x;", compiler, with_extras, "abi"));
    const KeyedText keyed_text = module_key_text("int x;", compiler, with_extras, "abi");
    // The first field is the version every key recipe answers to.
    CHECK_EQ(keyed_text.text.rfind(
                 "layout: module " + std::to_string(k_module_layout_version) + "\n", 0),
             0u);
    CHECK_EQ(module_key_text("int x;", compiler, plain, "abi").text, keyed_text.text);
    CHECK(!contains(keyed_text.text, "-include"));
    CHECK_EQ(keyed_text.key, module_key("int x;", compiler, plain, "abi"));

    // The same flags as keyed flags do change the key.
    CompileJob keyed = plain;
    keyed.flags.push_back("-include");
    CHECK(module_key("int x;", compiler, plain, "abi") !=
          module_key("int x;", compiler, keyed, "abi"));
}

OPWEAVE_TEST(relative_directories_are_keyed_by_where_they_lead) {
    const FakeCompiler compiler;
    CompileJob relative = base_job();
    relative.include_dirs = {"include"};
    CompileJob absolute = base_job();
    absolute.include_dirs = {(fs::current_path() / "include").string()};
    CHECK_EQ(module_key("int x;", compiler, relative, "abi"),
             module_key("int x;", compiler, absolute, "abi"));
    CHECK(contains(module_key_text("int x;", compiler, relative, "abi").text,
                   "include_dirs: " + absolute.include_dirs[0]));
}

OPWEAVE_TEST(library_is_named_after_its_content_and_metadata_describes_it) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler;
    const BuiltModule built = build_module(cache, compiler, request_for("int x;"));
    CHECK(built.outcome == Outcome::built);
    const std::string name = built.library.filename().string();
    CHECK(name.rfind("module-", 0) == 0 && name.size() == std::string("module-.so").size() + 16);
    CHECK(fs::exists(built.library));
    CHECK(!fs::exists(built.dir / "module.so") && !fs::exists(built.dir / "module.d"));
    CHECK_EQ(built.source, built.dir / "module.cpp");
    const std::vector<Entry> entries = cache.list();
    CHECK_EQ(entries.size(), 1u);
    CHECK_EQ(entries[0].kind, std::string("module"));
    CHECK_EQ(entries[0].label, std::string("TestOp"));
    CHECK_EQ(entries[0].files.size(), 2u);
    CHECK(!contains(entries[0].command, "/v2/tmp/"));  // the published path, not the staging one
    CHECK(contains(entries[0].command, built.dir.string()));
}

// Counts what build_module tells it.
struct RecordingMonitor : BuildMonitor {
    int missing = 0;
    void prelude_missing(const ModuleRequest& request) override {
        CHECK(request.prelude.has_value());
        ++missing;
    }
};

// The unkeyed flag every module compile gets: its lines cite the source
// where the entry keeps it.
std::string source_flag(const fs::path& entry_dir) {
    return "-DOPWEAVE_MODULE_SOURCE=\"" + (entry_dir / "module.cpp").string() + "\"";
}

// Debug information names a directory that exists after the build: the
// entry's own. Under a launcher, a name without the cache root that
// /opweave stands for, the same in every root (the launcher hashes it).
OPWEAVE_TEST(compiles_name_their_working_directory_after_the_entry) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    const BuiltModule direct = build_module(cache, compiler, request_for("int x;", false));
    CHECK_EQ(compiler.jobs.back().debug_dir, direct.dir);

    compiler.identity().launcher = {"ccache"};
    const BuiltModule launched = build_module(cache, compiler, request_for("int y;", false));
    const fs::path name = compiler.jobs.back().debug_dir;
    CHECK_EQ(name, "/opweave" / launched.dir.lexically_relative(cache.root()));
    CHECK(compiler.jobs.back().unkeyed_flags.empty());
}

// A compiler whose launcher needs a wrapper (GCC under sccache) gets it as a
// file of the cache, kept as written: a regular file of mode 0700.
OPWEAVE_TEST(a_launcher_wrapper_is_written_into_the_cache_tools) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    compiler.identity().launcher = {"sccache"};
    compiler.identity().launcher_wrapper = "#!/bin/sh\nexec /usr/bin/g++ \"$@\"\n";
    build_module(cache, compiler, request_for("int x;", false));
    const fs::path wrapper = compiler.jobs.back().launched_compiler;
    CHECK_EQ(wrapper.parent_path(), cache.root() / "v2" / "tools");
    const auto content = [](const fs::path& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const auto mode = [](const fs::path& path) {
        struct stat st {};
        CHECK_EQ(::lstat(path.c_str(), &st), 0);
        return S_ISREG(st.st_mode) ? st.st_mode & 07777 : 0u;
    };
    CHECK_EQ(content(wrapper), compiler.identity().launcher_wrapper);
    CHECK_EQ(mode(wrapper), 0700u);

    // Altered, loosened or replaced by a symlink, it is written afresh (the
    // symlink's target is left alone).
    const fs::path target = dir / "target";
    std::ofstream(target) << "elsewhere";
    const std::vector<std::function<void()>> damage = {
        [&] { std::ofstream(wrapper) << "#!/bin/sh\nexit 0\n"; },
        [&] { fs::permissions(wrapper, fs::perms(0755)); },
        [&] {
            fs::remove(wrapper);
            fs::create_symlink(target, wrapper);
        },
    };
    int n = 0;
    for (const auto& harm : damage) {
        harm();
        const std::string source = "int y" + std::to_string(n++) + ";";
        build_module(cache, compiler, request_for(source, false));
        CHECK_EQ(compiler.jobs.back().launched_compiler, wrapper);
        CHECK_EQ(content(wrapper), compiler.identity().launcher_wrapper);
        CHECK_EQ(mode(wrapper), 0700u);
    }
    CHECK_EQ(content(target), std::string("elsewhere"));

    // Without a wrapper (ccache, clang), the compiler is run itself.
    compiler.identity().launcher_wrapper.clear();
    build_module(cache, compiler, request_for("int z;", false));
    CHECK(compiler.jobs.back().launched_compiler.empty());
}

OPWEAVE_TEST(missing_prelude_is_reported_and_a_built_one_is_used) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    RecordingMonitor monitor;

    const BuiltModule first = build_module(cache, compiler, request_for("int x;", true), &monitor);
    CHECK(first.outcome == Outcome::built);
    CHECK_EQ(monitor.missing, 0);  // wanted once: not worth tens of MB yet
    CHECK(compiler.jobs.at(0).unkeyed_flags == std::vector<std::string>{source_flag(first.dir)});
    // Wanted again, by another module in another process (another object):
    // now it is worth building.
    ModuleCache later(cache_options(dir));
    build_module(later, compiler, request_for("int w;", true), &monitor);
    CHECK_EQ(monitor.missing, 1);

    const CacheResult prelude = build_prelude(cache, compiler, request_for("", true));
    CHECK(prelude.outcome == Outcome::built);

    // Built without the prelude, found with it: the same entry, no compile.
    const BuiltModule again = build_module(cache, compiler, request_for("int x;", true), &monitor);
    CHECK(again.outcome == Outcome::hit);
    CHECK_EQ(again.library, first.library);

    // A new module compiles with it: the header hard-linked from the
    // verified entry, the precompiled header decompressed from it, both in
    // the build's private directory and never published with the module.
    struct stat recorded {};
    CHECK(::stat((prelude.entry.dir / k_prelude_header_name).c_str(), &recorded) == 0);
    CHECK(!fs::exists(prelude.entry.dir / k_prelude_gch_name));
    bool same_inode = false;
    std::string staged_gch;
    compiler.during_compile = [&] {
        const fs::path staged = compiler.jobs.back().working_dir / k_prelude_header_name;
        struct stat st {};
        same_inode = ::stat(staged.c_str(), &st) == 0 && st.st_ino == recorded.st_ino &&
                     st.st_dev == recorded.st_dev;
        staged_gch = util::read_file(compiler.jobs.back().working_dir / k_prelude_gch_name)
                         .value_or("");
    };
    const BuiltModule second =
        build_module(cache, compiler, request_for("int y;", true), &monitor);
    compiler.during_compile = nullptr;
    CHECK(second.outcome == Outcome::built);
    CHECK_EQ(monitor.missing, 1);
    CHECK(same_inode);
    CHECK_EQ(staged_gch, compiler.output_content);  // what the fake compiled
    std::vector<std::string> expected = prelude_include_flags(compiler.jobs.back().working_dir);
    expected.insert(expected.begin(), source_flag(second.dir));
    CHECK(compiler.jobs.back().unkeyed_flags == expected);
    // The record names the header where the prelude's entry keeps it.
    CHECK(contains(command_of(cache, second.key),
                   "-include " + (prelude.entry.dir / k_prelude_header_name).string()));
    CHECK(!fs::exists(second.dir / k_prelude_gch_name));
    CHECK(!fs::exists(second.dir / k_prelude_header_name));
    // Decompressed once: the next builds link the same copy, shared with
    // the cache's other processes in v2/unpacked/.
    ino_t staged_inode = 0;
    compiler.during_compile = [&] {
        struct stat st {};
        if (::stat((compiler.jobs.back().working_dir / k_prelude_gch_name).c_str(), &st) == 0) {
            staged_inode = staged_inode == 0 || staged_inode == st.st_ino ? st.st_ino : 1;
        }
    };
    build_module(cache, compiler, request_for("int v;", true), &monitor);
    build_module(cache, compiler, request_for("int u;", true), &monitor);
    compiler.during_compile = nullptr;
    CHECK(staged_inode > 1);
    struct stat shared {};
    CHECK(::stat((*fs::directory_iterator(dir / "cache" / "v2" / "unpacked")).path().c_str(),
                 &shared) == 0);
    CHECK_EQ(staged_inode, shared.st_ino);

    // Not for a compiler that cannot use one.
    FakeCompiler other("fakecxx 2\n");
    build_module(cache, other, request_for("int z;", true), &monitor);
    CHECK(monitor.missing == 1 && other.jobs.back().unkeyed_flags.size() == 1);
}

// A prelude kept as it is (built where libzstd could not be loaded) is
// staged by hard links: the very files of the verified entry.
OPWEAVE_TEST(an_uncompressed_prelude_is_staged_by_hard_links) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    const ModuleRequest wanting = request_for("", true);
    const std::string key = prelude_key(compiler, wanting.job, wanting.prelude->header_text,
                                        wanting.prelude->extra);
    cache.get_or_build(key, [&](const fs::path& staging) {
        write_file(staging / k_prelude_header_name, wanting.prelude->header_text);
        write_file(staging / k_prelude_gch_name, "raw precompiled header");
        BuildRecord record;
        record.kind = "prelude";
        return record;
    });
    struct stat recorded {};
    CHECK(::stat((cache.entry_dir(key) / k_prelude_gch_name).c_str(), &recorded) == 0);
    bool same_inode = false;
    compiler.during_compile = [&] {
        const fs::path staged = compiler.jobs.back().working_dir / k_prelude_gch_name;
        struct stat st {};
        same_inode = ::stat(staged.c_str(), &st) == 0 && st.st_ino == recorded.st_ino &&
                     st.st_dev == recorded.st_dev;
    };
    const BuiltModule built = build_module(cache, compiler, request_for("int y;", true));
    CHECK(built.outcome == Outcome::built);
    CHECK(same_inode);
    CHECK(contains(command_of(cache, built.key), "-include"));
}

OPWEAVE_TEST(failed_compile_with_the_prelude_is_retried_without_it) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    build_prelude(cache, compiler, request_for("", true));
    compiler.fail_with_unkeyed_flag = "-include";
    compiler.jobs.clear();

    const BuiltModule built = build_module(cache, compiler, request_for("int x;", true));
    CHECK(built.outcome == Outcome::built);
    CHECK(fs::exists(built.library));
    CHECK_EQ(compiler.jobs.size(), 2u);
    CHECK(compiler.jobs.at(0).unkeyed_flags.size() == 3);
    CHECK(compiler.jobs.at(1).unkeyed_flags == std::vector<std::string>{source_flag(built.dir)});
    // The job's flags, then those that make the link report undefined symbols.
    std::vector<std::string> flags = base_job().flags;
    flags.insert(flags.end(), {"-Wl,--no-undefined", "-Wl,--warn-unresolved-symbols"});
    CHECK(compiler.jobs.at(1).flags == flags);
    // The entry records the compile that succeeded.
    CHECK(!contains(command_of(cache, built.key), "-include"));
}

OPWEAVE_TEST(genuine_failure_is_reported_from_the_compile_without_the_prelude) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    build_prelude(cache, compiler, request_for("", true));
    compiler.always_fail = true;
    compiler.jobs.clear();
    try {
        build_module(cache, compiler, request_for("int x;", true));
        CHECK(false);
    } catch (const CompileError& e) {
        CHECK(!has_word(e.command(), "-include"));
        CHECK(contains(e.source().string(), "failed"));
    }
    CHECK_EQ(compiler.jobs.size(), 2u);

    // Without a prelude there is nothing to retry.
    compiler.jobs.clear();
    CHECK_THROWS_AS(build_module(cache, compiler, request_for("int x;")), CompileError);
    CHECK_EQ(compiler.jobs.size(), 1u);
}

// A precompiled header replaced by another well-formed frame: the compile
// reads it while it is verified, and is done again without it.
OPWEAVE_TEST(prelude_replaced_by_another_frame_is_not_trusted) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    const CacheResult prelude = build_prelude(cache, compiler, request_for("", true));
    write_file(prelude.entry.dir / k_prelude_zst_name,
               util::zstd_compress("planted precompiled header", 3).value());
    compiler.jobs.clear();
    const BuiltModule built = build_module(cache, compiler, request_for("int x;", true));
    CHECK(built.outcome == Outcome::built);
    CHECK_EQ(compiler.jobs.size(), 2u);
    CHECK(has_word(compiler.jobs.at(0).unkeyed_flags, "-include"));
    CHECK(compiler.jobs.at(1).unkeyed_flags == std::vector<std::string>{source_flag(built.dir)});
    CHECK(!contains(command_of(cache, built.key), "-include"));
    CHECK(!fs::exists(prelude.entry.dir));
}

OPWEAVE_TEST(prelude_damaged_on_disk_is_verified_during_the_compile_and_not_trusted) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    RecordingMonitor monitor;
    const CacheResult prelude = build_prelude(cache, compiler, request_for("", true));
    const fs::path gch = prelude.entry.dir / k_prelude_zst_name;
    const std::uintmax_t size = fs::file_size(gch);
    write_file(gch, std::string(size, 'x'));  // the same size, other bytes
    compiler.jobs.clear();

    const BuiltModule built = build_module(cache, compiler, request_for("int x;", true), &monitor);
    CHECK(built.outcome == Outcome::built);
    // Its bytes do not decompress: compiled without it while it was
    // verified (and found damaged).
    CHECK_EQ(compiler.jobs.size(), 1u);
    CHECK(compiler.jobs.at(0).unkeyed_flags == std::vector<std::string>{source_flag(built.dir)});
    CHECK(!contains(command_of(cache, built.key), "-include"));
    CHECK_EQ(monitor.missing, 1);  // so that it is built again
    CHECK(!fs::exists(prelude.entry.dir));
    const auto quarantined = std::count_if(built.events.begin(), built.events.end(),
                                           [](const CacheEvent& event) {
                                               return event.kind == CacheEvent::Kind::quarantined;
                                           });
    CHECK_EQ(quarantined, 1);
}

OPWEAVE_TEST(module_compiled_with_a_prelude_records_the_prelude_headers) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    fs::create_directories(dir / "ops");
    write_file(dir / "ops" / "op.h", "#define X 1\n");
    settle();
    FakeCompiler compiler(k_gcc_version);
    compiler.dependencies = {(dir / "ops" / "op.h").string()};
    build_prelude(cache, compiler, request_for("", true));
    compiler.dependencies.clear();

    const BuiltModule built = build_module(cache, compiler, request_for("int x;", true));
    CHECK(has_word(compiler.jobs.back().unkeyed_flags, "-include"));
    const std::optional<Entry> entry = cache.lookup(built.key);
    CHECK(entry.has_value());
    CHECK_EQ(entry->headers.size(), 1u);
    CHECK_EQ(entry->headers.at(0).path, (dir / "ops" / "op.h").string());
}

OPWEAVE_TEST(headers_are_recorded_except_covered_and_cache_ones) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    fs::create_directories(dir / "ops");
    fs::create_directories(dir / "python");
    write_file(dir / "ops" / "op.h", "#define X 1\n");
    write_file(dir / "python" / "Python.h", "/* covered */\n");
    settle();
    FakeCompiler compiler;
    compiler.dependencies = {(dir / "ops" / "op.h").string(),
                             (dir / "python" / "Python.h").string(),
                             (dir / "cache" / "v2" / "x" / "opweave_prelude.h").string()};
    ModuleRequest request = request_for("int x;");
    request.covered_header_dirs = {(dir / "python").string()};
    const BuiltModule built = build_module(cache, compiler, request);
    const std::optional<Entry> entry = cache.lookup(built.key);
    CHECK(entry.has_value());
    if (!entry) {
        return;
    }
    CHECK_EQ(entry->headers.size(), 1u);
    CHECK_EQ(entry->headers.at(0).path, (dir / "ops" / "op.h").string());
    CHECK_EQ(entry->headers.at(0).size, 12u);
    CHECK_EQ(entry->headers.at(0).sha256.size(), 64u);
}

OPWEAVE_TEST(a_changed_header_rebuilds_and_replaces_the_entry) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    const fs::path header = dir / "op.h";
    write_file(header, "#define X 1\n");
    settle();
    FakeCompiler compiler;
    compiler.dependencies = {header.string()};
    compiler.output_content = "first build";
    const BuiltModule first = build_module(cache, compiler, request_for("int x;"));
    CHECK(build_module(cache, compiler, request_for("int x;")).outcome == Outcome::hit);

    // Same size, new content: stat data differs, the hash decides.
    write_file(header, "#define X 2\n");
    settle();
    compiler.output_content = "second build";
    const BuiltModule second = build_module(cache, compiler, request_for("int x;"));
    CHECK(second.outcome == Outcome::built);
    CHECK_EQ(second.dir, first.dir);
    CHECK(second.library != first.library);  // dlopen() can tell them apart
    CHECK(!fs::exists(first.library));
    CHECK_EQ(second.events.size(), 1u);
    CHECK(second.events.at(0).kind == CacheEvent::Kind::stale);
    CHECK(contains(second.events.at(0).problem, header.string()));

    // Touched but not changed: still a hit.
    settle();
    write_file(header, "#define X 2\n");
    CHECK(build_module(cache, compiler, request_for("int x;")).outcome == Outcome::hit);
    // Removed: rebuilt.
    fs::remove(header);
    CHECK(build_module(cache, compiler, request_for("int x;")).outcome == Outcome::built);
}

OPWEAVE_TEST(a_header_written_while_compiling_is_not_trusted) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    const fs::path header = dir / "op.h";
    write_file(header, "#define X 1\n");
    settle();
    FakeCompiler compiler;
    compiler.dependencies = {header.string()};
    // Edited while the compiler runs: what it read is unknown.
    compiler.during_compile = [&] { write_file(header, "#define X 2\n"); };
    const BuiltModule first = build_module(cache, compiler, request_for("int x;"));
    CHECK(!cache.lookup(first.key).has_value());  // stale: rebuilt by the next build
    compiler.during_compile = nullptr;
    settle();
    const BuiltModule again = build_module(cache, compiler, request_for("int x;"));
    CHECK(again.outcome == Outcome::built);
    CHECK(build_module(cache, compiler, request_for("int x;")).outcome == Outcome::hit);
}

// The real compiler's dependency output: a header found through an include
// directory, included with angle brackets, and a header it includes.
OPWEAVE_TEST(real_compile_tracks_headers_it_includes) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    const SystemCompiler compiler;
    fs::create_directories(dir / "inc" / "sub");
    write_file(dir / "inc" / "answer.h", "#include \"sub/part.h\"\n#define ANSWER (40 + PART)\n");
    write_file(dir / "inc" / "sub" / "part.h", "#define PART 2\n");
    settle();
    ModuleRequest request;
    request.source =
        "#include <answer.h>\n"
        "extern \"C\" __attribute__((visibility(\"default\"))) int opweave_answer() {\n"
        "    return ANSWER;\n"
        "}\n";
    request.job.include_dirs = {(dir / "inc").string()};
    const BuiltModule first = build_module(cache, compiler, request);
    CHECK(first.outcome == Outcome::built);
    CHECK_EQ(call_answer(first.library), 42);
    const std::optional<Entry> entry = cache.lookup(first.key);
    CHECK(entry.has_value());
    if (!entry) {
        return;
    }
    const auto recorded = [&](const fs::path& path) {
        return std::any_of(entry->headers.begin(), entry->headers.end(),
                           [&](const HeaderRecord& h) { return h.path == path.string(); });
    };
    CHECK(recorded(dir / "inc" / "answer.h"));
    CHECK(recorded(dir / "inc" / "sub" / "part.h"));
    CHECK(build_module(cache, compiler, request).outcome == Outcome::hit);

    write_file(dir / "inc" / "sub" / "part.h", "#define PART 3\n");
    settle();
    const BuiltModule second = build_module(cache, compiler, request);
    CHECK(second.outcome == Outcome::built);
    CHECK_EQ(call_answer(second.library), 43);
}

// Tests of the compiler version memo: SystemCompiler with a VersionMemo
// (used for an ELF compiler only, never run when the memo has its output)
// and compiler_version_records (the memo kept as records of a real cache,
// named by the compiler file's identity and times).
#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
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
using opweave_test::TempDir;
using opweave_test::cache_options;
namespace fs = std::filesystem;

namespace {

// A memo that answers `answer` and counts what it is asked.
struct CountingMemo {
    std::optional<std::string> answer;
    std::vector<fs::path> asked;
    std::vector<std::string> kept;

    VersionMemo memo() {
        VersionMemo out;
        out.find = [this](const fs::path& file) {
            asked.push_back(file);
            return answer;
        };
        out.keep = [this](const fs::path&, const std::string& version) {
            kept.push_back(version);
        };
        return out;
    }
};

SystemCompiler compiler_at(const fs::path& path, const VersionMemo* memo) {
    CompilerOptions options;
    options.cxx = path.string();
    return SystemCompiler(options, memo);
}

}  // namespace

OPWEAVE_TEST(an_elf_compiler_whose_version_the_memo_has_is_not_run) {
    // /bin/false fails `--version`: only a memo that answers can make it.
    const fs::path no_compiler = fs::canonical("/bin/false");
    CHECK_THROWS_AS(compiler_at(no_compiler, nullptr), Error);
    CountingMemo counting;
    counting.answer = "sentinel c++ 1.0\n";
    const VersionMemo memo = counting.memo();
    const SystemCompiler known = compiler_at("/bin/false", &memo);
    CHECK_EQ(known.identity().version, std::string("sentinel c++ 1.0\n"));
    CHECK_EQ(counting.asked.size(), 1u);
    CHECK(counting.asked[0] == no_compiler);  // after symbolic links
    CHECK(counting.kept.empty());
}

OPWEAVE_TEST(a_version_the_memo_lacks_is_asked_for_and_kept) {
    CountingMemo counting;
    const VersionMemo memo = counting.memo();
    const SystemCompiler real = compiler_at(find_compiler("g++"), &memo);
    CHECK_EQ(counting.asked.size(), 1u);
    CHECK_EQ(counting.kept.size(), 1u);
    CHECK_EQ(counting.kept[0], real.identity().version);
    CHECK(real.identity().version.find("g++") != std::string::npos);
}

OPWEAVE_TEST(a_script_compiler_is_always_asked) {
    TempDir dir;
    const fs::path script = dir / "cxx";
    std::ofstream(script) << "#!/bin/sh\necho \"script-cxx $OPWEAVE_TEST_SCRIPT_VERSION\"\n";
    fs::permissions(script, fs::perms::owner_all);
    CountingMemo counting;
    counting.answer = "sentinel\n";
    const VersionMemo memo = counting.memo();
    const SystemCompiler asked = compiler_at(script, &memo);
    CHECK(asked.identity().version.rfind("script-cxx", 0) == 0);
    CHECK(counting.asked.empty() && counting.kept.empty());
}

OPWEAVE_TEST(versions_are_kept_as_records_named_by_the_compiler_file) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    const VersionMemo memo = compiler_version_records(cache);
    // A copy of the real driver, so that its times can change.
    const fs::path copy = dir / "g++-copy";
    fs::copy_file(fs::canonical(find_compiler("g++")), copy);
    fs::permissions(copy, fs::perms::owner_all);
    const std::string real = compiler_at(copy, &memo).identity().version;
    const std::vector<std::string> names = cache.record_names("compilers");
    CHECK_EQ(names.size(), 1u);
    CHECK(cache.read_record("compilers", names[0]) == real);
    // The record is what a later compiler of the same file reads.
    CHECK(cache.write_record("compilers", names[0], "kept g++ 9.9\n"));
    CHECK_EQ(compiler_at(copy, &memo).identity().version, std::string("kept g++ 9.9\n"));
    // A record that is not a version is not used: the compiler is asked.
    CHECK(cache.write_record("compilers", names[0], std::string("bad\0version", 11)));
    CHECK_EQ(compiler_at(copy, &memo).identity().version, real);
    // Modified (new times): another name, asked again.
    CHECK(cache.write_record("compilers", names[0], "kept g++ 9.9\n"));
    const struct timespec times[2] = {{1, 0}, {1, 0}};
    CHECK_EQ(::utimensat(AT_FDCWD, copy.c_str(), times, 0), 0);
    CHECK_EQ(compiler_at(copy, &memo).identity().version, real);
    CHECK_EQ(cache.record_names("compilers").size(), 2u);
}

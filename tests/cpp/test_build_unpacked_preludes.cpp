// Tests of the decompressed preludes the processes of a cache share
// (cache/unpacked_preludes.hpp): the builder shares its copy, another
// process stages it by a symbolic link without decompressing, a copy that
// differs from the frame is not kept, and sweeps remove the copies of
// preludes that are gone. "Another process" is another cache root holding
// a copy of the cache: this process has made no copy of its own there.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "fake_compiler.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "opweave/module_source.hpp"
#include "opweave/precompiled_header.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"

using namespace opweave;
using opweave_test::FakeCompiler;
using opweave_test::TempDir;
using opweave_test::k_gcc_version;
using opweave_test::cache_options;
namespace fs = std::filesystem;

namespace {

ModuleRequest request_for(const std::string& source) {
    ModuleRequest request;
    const std::string prelude = std::string(k_python_prelude) + "#include <vector>\n";
    request.source = prelude + source;
    request.job.flags = {"-DX=1"};
    request.extra = "abi";
    request.label = "TestOp";
    request.prelude = PreludeRequest{prelude, "abi"};
    return request;
}

std::vector<fs::path> shared_copies(const TempDir& dir, const char* root) {
    std::vector<fs::path> found;
    const fs::path unpacked = dir / root / "v2" / "unpacked";
    for (const auto& item : fs::directory_iterator(unpacked)) {
        found.push_back(item.path());
    }
    return found;
}

bool included_prelude(const CompileJob& job) {
    for (const std::string& flag : job.unkeyed_flags) {
        if (flag == "-include") {
            return true;
        }
    }
    return false;
}

// The inode of the precompiled header the compile running now reads.
ino_t staged_gch_inode(const FakeCompiler& compiler) {
    struct stat st {};
    const fs::path staged = compiler.jobs.back().working_dir / k_prelude_gch_name;
    return ::stat(staged.c_str(), &st) == 0 ? st.st_ino : 0;
}

// `dir`/cache with a prelude built by this process, copied to `dir`/other.
CacheResult built_and_copied(const TempDir& dir, FakeCompiler& compiler) {
    ModuleCache cache(cache_options(dir));
    const CacheResult prelude = build_prelude(cache, compiler, request_for(""));
    fs::copy(dir / "cache", dir / "other", fs::copy_options::recursive);
    return prelude;
}

}  // namespace

OPWEAVE_TEST(the_builder_shares_its_copy_and_another_process_links_it) {
    TempDir dir;
    FakeCompiler compiler(k_gcc_version);
    const CacheResult prelude = built_and_copied(dir, compiler);
    // Named after the prelude and its frame; the decompressed header.
    const std::vector<fs::path> copies = shared_copies(dir, "cache");
    CHECK_EQ(copies.size(), 1u);
    CHECK(copies.at(0).filename().string().rfind(prelude.entry.key + ".", 0) == 0);
    CHECK_EQ(util::read_file(copies.at(0)).value_or(""), compiler.output_content);

    CacheOptions other = cache_options(dir);
    other.root = dir / "other";
    ModuleCache cache(other);
    const fs::path shared = shared_copies(dir, "other").at(0);
    struct stat recorded {};
    CHECK(::stat(shared.c_str(), &recorded) == 0);
    bool same_inode = false;
    compiler.during_compile = [&] { same_inode = staged_gch_inode(compiler) == recorded.st_ino; };
    compiler.jobs.clear();
    const BuiltModule built = build_module(cache, compiler, request_for("int x;"));
    compiler.during_compile = nullptr;
    CHECK(built.outcome == Outcome::built);
    CHECK(same_inode);  // linked, not decompressed
    CHECK_EQ(compiler.jobs.size(), 1u);
    CHECK(included_prelude(compiler.jobs.at(0)));
    // The next compile links the same file again.
    same_inode = false;
    compiler.during_compile = [&] { same_inode = staged_gch_inode(compiler) == recorded.st_ino; };
    build_module(cache, compiler, request_for("int y;"));
    compiler.during_compile = nullptr;
    CHECK(same_inode);
    CHECK(included_prelude(compiler.jobs.back()));
    // Staged by symbolic links: its version (ctime, link count), which the
    // memo of hashed file versions keys on, is as it was.
    struct stat after {};
    CHECK(::stat(shared.c_str(), &after) == 0);
    CHECK(after.st_nlink == recorded.st_nlink);
    CHECK(after.st_ctim.tv_sec == recorded.st_ctim.tv_sec &&
          after.st_ctim.tv_nsec == recorded.st_ctim.tv_nsec);
}

OPWEAVE_TEST(a_shared_copy_that_differs_from_the_frame_is_not_kept) {
    TempDir dir;
    FakeCompiler compiler(k_gcc_version);
    built_and_copied(dir, compiler);
    const fs::path shared = shared_copies(dir, "other").at(0);
    fs::remove(shared);
    std::ofstream(shared) << "planted precompiled header";
    fs::permissions(shared, fs::perms::owner_read | fs::perms::owner_write);

    CacheOptions other = cache_options(dir);
    other.root = dir / "other";
    ModuleCache cache(other);
    compiler.jobs.clear();
    const BuiltModule built = build_module(cache, compiler, request_for("int x;"));
    CHECK(built.outcome == Outcome::built);
    // Compiled with it while it was checked, then again without it.
    CHECK_EQ(compiler.jobs.size(), 2u);
    CHECK(included_prelude(compiler.jobs.at(0)));
    CHECK(!included_prelude(compiler.jobs.at(1)));
    CHECK(cache.lookup(built.key).has_value());
    // Removed, so the next build decompresses the frame and shares a good
    // copy again, under the same name, and compiles once, with it.
    CHECK(!fs::exists(shared));
    compiler.jobs.clear();
    build_module(cache, compiler, request_for("int y;"));
    CHECK_EQ(compiler.jobs.size(), 1u);
    CHECK(included_prelude(compiler.jobs.at(0)));
    CHECK_EQ(util::read_file(shared).value_or(""), compiler.output_content);
}

OPWEAVE_TEST(a_copy_others_can_write_is_not_used) {
    TempDir dir;
    FakeCompiler compiler(k_gcc_version);
    built_and_copied(dir, compiler);
    const fs::path shared = shared_copies(dir, "other").at(0);
    fs::permissions(shared, fs::perms::others_write, fs::perm_options::add);
    CacheOptions other = cache_options(dir);
    other.root = dir / "other";
    ModuleCache cache(other);
    struct stat recorded {};
    CHECK(::stat(shared.c_str(), &recorded) == 0);
    bool linked = true;
    compiler.during_compile = [&] { linked = staged_gch_inode(compiler) == recorded.st_ino; };
    compiler.jobs.clear();
    build_module(cache, compiler, request_for("int x;"));
    compiler.during_compile = nullptr;
    CHECK(!linked);  // decompressed from the verified frame instead
    CHECK_EQ(compiler.jobs.size(), 1u);
    CHECK(included_prelude(compiler.jobs.at(0)));
}

OPWEAVE_TEST(sweeps_remove_the_copies_of_preludes_that_are_gone) {
    TempDir dir;
    FakeCompiler compiler(k_gcc_version);
    ModuleCache cache(cache_options(dir));
    const CacheResult prelude = build_prelude(cache, compiler, request_for(""));
    const fs::path newest = shared_copies(dir, "cache").at(0);
    // An older copy of the same prelude (of a frame it held before), and
    // one of a prelude that is gone.
    const std::string digests = "." + std::string(64, '0') + "." + std::string(64, '1') + ".gch";
    const fs::path older = newest.parent_path() / (prelude.entry.key + digests);
    const fs::path orphan = newest.parent_path() / (std::string(64, 'e') + digests);
    std::ofstream(older) << "older";
    std::ofstream(orphan) << "orphan";
    fs::last_write_time(older, fs::last_write_time(newest) - std::chrono::hours(1));
    CHECK_EQ(shared_copies(dir, "cache").size(), 3u);
    cache.sweep();
    CHECK(shared_copies(dir, "cache") == std::vector<fs::path>{newest});
    CHECK(cache.evict(prelude.entry.key));
    cache.sweep();
    CHECK(shared_copies(dir, "cache").empty());
}

// Tests of the cache's records (cpp/cache/record_store.cpp): written whole
// and private, read back, refused when damaged or untrusted (and the
// damaged ones removed), read from read-only layers, never written there;
// cleared and swept. And the machine's memo of file hashes kept in them
// (ModuleCache::keep_file_digests): a source file whose times changed but
// not its content is hashed once per machine.
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "fake_compiler.hpp"
#include "opweave/module_cache.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"

using namespace opweave;
using opweave_test::TempDir;
using opweave_test::cache_options;
namespace fs = std::filesystem;

namespace {

const std::string k_name = "abcdef0123456789";

fs::path record_file(const ModuleCache& cache, const std::string& kind, const std::string& name) {
    return cache.root() / "v2" / "records" / kind / name.substr(0, 2) / name;
}

void write(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Sets the file's times to `seconds` ago; its ctime becomes now, so this
// waits past the filesystem clock's tick (a version of the current tick is
// never memoised).
void age(const fs::path& path, double seconds) {
    struct timeval times[2];
    ::gettimeofday(&times[0], nullptr);
    times[0].tv_sec -= static_cast<time_t>(seconds);
    times[1] = times[0];
    ::utimes(path.c_str(), times);
    ::usleep(30000);
}

}  // namespace

OPWEAVE_TEST(a_record_is_written_private_and_read_back) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    CHECK(!cache.read_record("graphs", k_name));
    CHECK(cache.write_record("graphs", k_name, std::string("a\0b", 3)));
    CHECK_EQ(*cache.read_record("graphs", k_name), std::string("a\0b", 3));
    struct stat st {};
    CHECK(::stat(record_file(cache, "graphs", k_name).c_str(), &st) == 0);
    CHECK_EQ(st.st_mode & 0777, 0600u);
    CHECK(cache.record_names("graphs") == std::vector<std::string>{k_name});
    CHECK(cache.remove_record("graphs", k_name));
    CHECK(!cache.read_record("graphs", k_name));
}

OPWEAVE_TEST(bad_kinds_names_and_sizes_are_invalid_arguments) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    CHECK_THROWS_AS(cache.read_record("Graphs", k_name), std::invalid_argument);
    CHECK_THROWS_AS(cache.read_record("graphs", "../x"), std::invalid_argument);
    CHECK_THROWS_AS(cache.write_record("a/b", k_name, "x"), std::invalid_argument);
    const std::string huge(ModuleCache::k_max_record_bytes + 1, 'x');
    CHECK_THROWS_AS(cache.write_record("graphs", k_name, huge), std::invalid_argument);
}

OPWEAVE_TEST(a_damaged_record_is_a_miss_and_is_removed) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.write_record("graphs", k_name, "the data");
    const fs::path file = record_file(cache, "graphs", k_name);
    write(file, util::read_file(file).value() + "!");
    CHECK(!cache.read_record("graphs", k_name));
    CHECK(!fs::exists(file));
}

OPWEAVE_TEST(an_untrusted_record_or_a_symlink_is_a_miss_and_is_left_alone) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.write_record("graphs", k_name, "the data");
    const fs::path file = record_file(cache, "graphs", k_name);
    ::chmod(file.c_str(), 0666);
    CHECK(!cache.read_record("graphs", k_name));
    CHECK(fs::exists(file));
    ::chmod(file.c_str(), 0600);
    fs::rename(file, dir / "elsewhere");
    fs::create_symlink(dir / "elsewhere", file);
    CHECK(!cache.read_record("graphs", k_name));
    CHECK(fs::is_symlink(file));
}

OPWEAVE_TEST(records_come_from_read_only_layers_and_never_go_there) {
    TempDir dir;
    CacheOptions shared_options = cache_options(dir);
    shared_options.root = dir / "shared";
    ModuleCache shared(shared_options);
    shared.write_record("graphs", k_name, "shared");
    CacheOptions own_options = cache_options(dir);
    own_options.root = dir / "own";
    own_options.shared_roots = {dir / "shared"};
    ModuleCache own(own_options);
    CHECK_EQ(own.read_record("graphs", k_name).value_or(""), std::string("shared"));
    shared_options.read_only = true;
    ModuleCache read_only(shared_options);
    CHECK(!read_only.write_record("graphs", k_name, "mine"));
    CHECK(!read_only.remove_record("graphs", k_name));
    CHECK_EQ(read_only.read_record("graphs", k_name).value_or(""), std::string("shared"));
}

OPWEAVE_TEST(clear_removes_records_and_sweep_old_leftovers) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.write_record("graphs", k_name, "data");
    cache.write_record("digests", k_name, std::string(64, 'a'));
    const fs::path shard = record_file(cache, "graphs", k_name).parent_path();
    write(shard / ("." + k_name + ".tmp.old"), "left by a killed writer");
    write(shard / ("." + k_name + ".tmp.new"), "being written");
    age(shard / ("." + k_name + ".tmp.old"), 7200);
    age(record_file(cache, "digests", k_name), 40 * 86400.0);
    cache.sweep();
    CHECK(!fs::exists(shard / ("." + k_name + ".tmp.old")));
    CHECK(fs::exists(shard / ("." + k_name + ".tmp.new")));
    CHECK(!cache.read_record("digests", k_name));  // a month-old hash: gone
    CHECK(cache.read_record("graphs", k_name));
    cache.clear();
    CHECK(cache.record_names("graphs").empty());
}

OPWEAVE_TEST(the_machines_memo_keeps_the_hash_of_a_touched_source_file) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.keep_file_digests();
    const fs::path source = dir / "big_helper.py";  // 64 KiB or more: the memo's files
    write(source, "FACTOR = 2.0\n" + std::string(70000, '#') + "\n");
    age(source, 10);
    const std::vector<HeaderRecord> recorded =
        record_files({source.string()}, filesystem_now_ns());
    CHECK(!recorded[0].sha256.empty());
    CHECK_EQ(cache.record_names("digests").size(), 1u);
    age(source, 5);  // new times, same content
    CHECK(headers_changed(recorded).empty());
    CHECK_EQ(cache.record_names("digests").size(), 2u);  // the new version's hash, kept
    // A planted hash for a version would be believed: the memo is the
    // cache's own, in directories only this user can write. Another
    // content under new times is hashed and found changed.
    write(source, "FACTOR = 3.0\n" + std::string(70000, '#') + "\n");
    age(source, 3);
    CHECK(!headers_changed(recorded).empty());
    const fs::path small = dir / "helper.py";  // hashed faster than the memo is read
    write(small, "FACTOR = 2.0\n");
    age(small, 10);
    const std::size_t kept = cache.record_names("digests").size();
    CHECK(!record_files({small.string()}, filesystem_now_ns())[0].sha256.empty());
    CHECK_EQ(cache.record_names("digests").size(), kept);
}

// Tests of StagingDir: publish, losing a race, discard, and sweeping.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "check.hpp"
#include "cache/file_lock.hpp"
#include "cache/staging_dir.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"

using opweave::Published;
using opweave::StagingDir;
using opweave_test::TempDir;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
}

std::size_t count_entries(const fs::path& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) {
        ++n;
    }
    return n;
}

}  // namespace

OPWEAVE_TEST(publish_moves_whole_directory) {
    TempDir dir;
    fs::path staged;
    {
        StagingDir staging(dir / "tmp", "key1");
        staged = staging.path();
        CHECK(fs::is_directory(staged));
        struct stat st {};
        CHECK(::stat(staged.c_str(), &st) == 0);
        CHECK_EQ(st.st_mode & 0777, 0700u);
        CHECK(fs::exists(staged.string() + ".lock"));
        write(staged / "file.txt", "hello");
        CHECK(staging.publish(dir / "final") == Published::yes);
    }
    CHECK(!fs::exists(staged));
    CHECK(!fs::exists(staged.string() + ".lock"));
    CHECK_EQ(*opweave::util::read_file(dir / "final" / "file.txt"), std::string("hello"));
}

OPWEAVE_TEST(losing_the_race_keeps_the_winner_and_drops_our_copy) {
    TempDir dir;
    fs::create_directories(dir / "final");
    write(dir / "final" / "file.txt", "winner");
    StagingDir staging(dir / "tmp", "key1");
    write(staging.path() / "file.txt", "loser");
    CHECK(staging.publish(dir / "final") == Published::lost_race);
    CHECK_EQ(*opweave::util::read_file(dir / "final" / "file.txt"), std::string("winner"));
    CHECK_EQ(count_entries(dir / "tmp"), 0u);
}

OPWEAVE_TEST(destructor_discards_unpublished_directory) {
    TempDir dir;
    {
        StagingDir staging(dir / "tmp", "key1");
        write(staging.path() / "file.txt", "partial");
    }
    CHECK_EQ(count_entries(dir / "tmp"), 0u);
}

OPWEAVE_TEST(sweep_keeps_live_builds_and_removes_dead_ones) {
    TempDir dir;
    StagingDir live(dir / "tmp", "live");
    // A dead build: a directory whose owner lock file exists but is free.
    fs::create_directories(dir / "tmp" / "dead.1.abc");
    write(dir / "tmp" / "dead.1.abc" / "partial.so", "xx");
    write(dir / "tmp" / "dead.1.abc.lock", "1\n");
    // An ownerless leftover, fresh (kept) and one made old (removed).
    fs::create_directories(dir / "tmp" / "fresh.2.abc");
    fs::create_directories(dir / "tmp" / "old.3.abc");
    const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(3);
    fs::last_write_time(dir / "tmp" / "old.3.abc", old_time);
    // A lock file whose directory is gone.
    write(dir / "tmp" / "orphan.4.abc.lock", "4\n");

    CHECK_EQ(StagingDir::sweep(dir / "tmp", 3600.0), 2u);
    CHECK(fs::exists(live.path()));
    CHECK(!fs::exists(dir / "tmp" / "dead.1.abc"));
    CHECK(!fs::exists(dir / "tmp" / "dead.1.abc.lock"));
    CHECK(fs::exists(dir / "tmp" / "fresh.2.abc"));
    CHECK(!fs::exists(dir / "tmp" / "old.3.abc"));
    CHECK(!fs::exists(dir / "tmp" / "orphan.4.abc.lock"));
}

OPWEAVE_TEST(publish_twice_throws) {
    TempDir dir;
    StagingDir staging(dir / "tmp", "key1");
    CHECK(staging.publish(dir / "final") == Published::yes);
    CHECK_THROWS_AS(staging.publish(dir / "final2"), opweave::CacheError);
}

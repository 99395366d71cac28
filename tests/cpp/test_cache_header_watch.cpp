// Tests of the header watch (cache/header_watch.hpp): a header found as
// recorded needs no stat until something happens to it, and whatever
// happens to it, through any path, makes it checked again.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/file_digest.hpp"
#include "cache/header_manifest.hpp"
#include "cache/header_watch.hpp"
#include "check.hpp"
#include "util/fd.hpp"
#include "temp_dir.hpp"

using namespace opweave;
using opweave_test::TempDir;
namespace fs = std::filesystem;

namespace {

// `path` written with `text`, and recorded as a compile that started well
// after it was written would record it.
HeaderRecord recorded(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    cache::HeaderFilter filter;
    filter.working_dir = path.parent_path();
    filter.source = path.parent_path() / "module.cpp";
    const std::vector<HeaderRecord> records =
        cache::record_headers({path.string()}, filter, cache::filesystem_now_ns());
    CHECK_EQ(records.size(), 1u);
    return records.at(0);
}

// `path` written with `text` and recorded by hand: not watched yet.
HeaderRecord unwatched(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
    HeaderRecord record;
    record.path = path.string();
    struct stat st {};
    CHECK_EQ(::stat(record.path.c_str(), &st), 0);
    record.size = static_cast<std::uint64_t>(st.st_size);
    record.mtime_ns = cache::ns_of(st.st_mtim);
    record.ctime_ns = cache::ns_of(st.st_ctim);
    const util::Fd fd(::open(record.path.c_str(), O_RDONLY | O_CLOEXEC));
    record.sha256 = cache::file_sha256(fd.get(), st, cache::Memo::bypass).value_or("");
    return record;
}

bool known(const HeaderRecord& header) { return cache::WatchedHeaders().known(header); }

constexpr int k_sightings = cache::WatchedHeaders::k_sightings_before_watch;

// Checked until it is watched (at most as often as a process sees a header
// before it watches it): known, and still as recorded.
void check_watched(const HeaderRecord& header) {
    for (int check = 0; check < k_sightings && !known(header); ++check) {
        CHECK_EQ(cache::check_headers({header}, cache::Memo::use), std::string());
    }
    CHECK(known(header));
}

}  // namespace

OPWEAVE_TEST(a_header_written_in_place_is_checked_again) {
    TempDir dir;
    const HeaderRecord header = recorded(dir / "a.h", "#define A 1\n");
    check_watched(header);
    CHECK(known(header));  // nothing happened: still known
    std::ofstream(dir / "a.h", std::ios::in | std::ios::out) << "#define A 2\n";
    CHECK(!known(header));
    CHECK_EQ(cache::check_headers({header}, cache::Memo::use),
             "header " + header.path + " changed");
}

OPWEAVE_TEST(a_header_touched_or_replaced_is_checked_again) {
    TempDir dir;
    const HeaderRecord header = recorded(dir / "b.h", "#define B 1\n");
    check_watched(header);
    CHECK_EQ(::utimensat(AT_FDCWD, header.path.c_str(), nullptr, 0), 0);  // touch
    CHECK(!known(header));
    const HeaderRecord again = recorded(dir / "b.h", "#define B 1\n");
    check_watched(again);
    std::ofstream(dir / "other.h") << "#define B 3\n";
    fs::rename(dir / "other.h", dir / "b.h");
    CHECK(!known(again));
    CHECK(cache::check_headers({again}, cache::Memo::use) != std::string());
}

OPWEAVE_TEST(a_header_written_through_another_link_is_checked_again) {
    TempDir dir;
    const HeaderRecord header = recorded(dir / "inc" / "c.h", "#define C 1\n");
    fs::create_directories(dir / "elsewhere");
    fs::create_hard_link(dir / "inc" / "c.h", dir / "elsewhere" / "link.h");
    const HeaderRecord linked = recorded(dir / "inc" / "c.h", "#define C 1\n");
    check_watched(linked);
    std::ofstream(dir / "elsewhere" / "link.h", std::ios::in | std::ios::out) << "#define C 2\n";
    CHECK(!known(linked));
    CHECK(cache::check_headers({linked}, cache::Memo::use) != std::string());
    (void)header;
}

OPWEAVE_TEST(a_directory_on_the_path_moved_makes_it_checked_again) {
    TempDir dir;
    const HeaderRecord header = recorded(dir / "up" / "inc" / "d.h", "#define D 1\n");
    check_watched(header);
    // The same content at the same path, in another directory.
    fs::rename(dir / "up", dir / "gone");
    fs::create_directories(dir / "up" / "inc");
    fs::copy_file(dir / "gone" / "inc" / "d.h", dir / "up" / "inc" / "d.h");
    CHECK(!known(header));
}

OPWEAVE_TEST(names_off_the_path_change_nothing) {
    TempDir dir;
    const HeaderRecord header = recorded(dir / "inc" / "e.h", "#define E 1\n");
    check_watched(header);
    std::ofstream(dir / "unrelated.txt") << "x";
    std::ofstream(dir / "inc" / "f.h") << "x";
    fs::remove(dir / "unrelated.txt");
    CHECK(known(header));
}

OPWEAVE_TEST(a_path_through_a_symbolic_link_is_never_watched) {
    TempDir dir;
    recorded(dir / "real" / "g.h", "#define G 1\n");
    fs::create_directory_symlink(dir / "real", dir / "link");
    const HeaderRecord header = recorded(dir / "link" / "g.h", "#define G 1\n");
    CHECK_EQ(cache::check_headers({header}, cache::Memo::use), std::string());
    CHECK(!known(header));
    fs::create_symlink(dir / "real" / "g.h", dir / "h.h");
    const HeaderRecord to_file = recorded(dir / "h.h", "");  // writes through the link
    CHECK_EQ(cache::check_headers({to_file}, cache::Memo::use), std::string());
    CHECK(!known(to_file));
}

OPWEAVE_TEST(a_header_is_watched_once_seen_often_and_a_bypass_never_counts) {
    TempDir dir;
    const HeaderRecord header = unwatched(dir / "i.h", "#define I 1\n");
    CHECK(!known(header));
    for (int check = 0; check < k_sightings + 2; ++check) {
        CHECK_EQ(cache::check_headers({header}, cache::Memo::bypass), std::string());
    }
    CHECK(!known(header));
    // A lookup watches a header from its k-th check (a process that looks
    // a few entries up, or compiles a few modules, makes no inotify queue,
    // whose close at exit is slow).
    for (int check = 1; check < k_sightings; ++check) {
        CHECK_EQ(cache::check_headers({header}, cache::Memo::use), std::string());
    }
    CHECK(!known(header));
    CHECK_EQ(cache::check_headers({header}, cache::Memo::use), std::string());
    CHECK(known(header));
}

OPWEAVE_TEST(a_compile_that_records_a_header_counts_as_a_sighting) {
    TempDir dir;
    const HeaderRecord header = recorded(dir / "k.h", "#define K 1\n");
    CHECK(!known(header));
    for (int check = 2; check < k_sightings; ++check) {
        CHECK_EQ(cache::check_headers({header}, cache::Memo::use), std::string());
    }
    CHECK(!known(header));
    CHECK_EQ(cache::check_headers({header}, cache::Memo::use), std::string());
    CHECK(known(header));
    std::ofstream(dir / "k.h", std::ios::app) << "#define L 2\n";
    CHECK(!known(header));
}

OPWEAVE_TEST(a_forked_child_never_takes_its_parents_events) {
    TempDir dir;
    const HeaderRecord header = recorded(dir / "j.h", "#define J 1\n");
    check_watched(header);
    const pid_t child = ::fork();
    if (child == 0) {
        // The change, then a check in the child: with its parent's queue,
        // that check would read the parent's event of the change.
        std::ofstream(dir / "j.h", std::ios::in | std::ios::out) << "#define J 2\n";
        const bool seen = cache::check_headers({header}, cache::Memo::use) != std::string();
        ::_exit(seen ? 0 : 1);
    }
    int status = 0;
    CHECK_EQ(::waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(!known(header));  // the parent saw it too
}

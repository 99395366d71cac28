// Tests of ModuleCache in one process: build-once, hits, failed builds,
// metadata, eviction, pruning, permissions and key validation. Verification
// and trust are in test_cache_entry_check.cpp; the multi-process tests are
// in tests/python/_core/test_module_cache_processes.py.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "check.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_cache.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"

using namespace opweave;
using opweave_test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_key_a = "aaaaaaaaaaaaaaaa";
const std::string k_key_b = "bbbbbbbbbbbbbbbb";
const std::string k_key_c = "cccccccccccccccc";

CacheOptions options_in(const TempDir& dir) {
    CacheOptions options;
    options.root = dir / "cache";
    return options;
}

BuildFn writer(const std::string& content, std::atomic<int>* calls = nullptr,
               std::size_t size = 0) {
    return [content, calls, size](const fs::path& staging) {
        if (calls != nullptr) {
            ++*calls;
        }
        std::ofstream(staging / "payload") << content << std::string(size, 'x');
        BuildRecord record;
        record.kind = "test";
        record.label = "payload " + content;
        record.key_material = "material for " + content;
        record.command = "fake-cc " + content;
        record.compile_seconds = 0.25;
        return record;
    };
}

std::string payload(const fs::path& dir) { return *util::read_file(dir / "payload"); }

// Makes an entry look last used `seconds_ago` (its directory's mtime).
void age(const ModuleCache& cache, const std::string& key, double seconds_ago) {
    const auto when = fs::file_time_type::clock::now() -
                      std::chrono::duration_cast<fs::file_time_type::duration>(
                          std::chrono::duration<double>(seconds_ago));
    fs::last_write_time(cache.entry_dir(key), when);
}

}  // namespace

OPWEAVE_TEST(miss_builds_then_hits) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    std::atomic<int> calls{0};
    CHECK(!cache.lookup(k_key_a));
    const CacheResult first = cache.get_or_build(k_key_a, writer("one", &calls));
    CHECK(first.outcome == Outcome::built);
    CHECK_EQ(payload(first.entry.dir), std::string("one"));
    const CacheResult second = cache.get_or_build(k_key_a, writer("two", &calls));
    CHECK(second.outcome == Outcome::hit);
    CHECK_EQ(second.entry.dir, first.entry.dir);
    CHECK_EQ(payload(second.entry.dir), std::string("one"));
    CHECK_EQ(calls.load(), 1);
    const std::optional<Entry> found = cache.lookup(k_key_a);
    CHECK(found.has_value());
    CHECK_EQ(found->dir, cache.entry_dir(k_key_a));
}

OPWEAVE_TEST(layout_is_versioned_and_private) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    cache.get_or_build(k_key_a, writer("one"));
    const fs::path entry = cache.entry_dir(k_key_a);
    CHECK_EQ(entry, dir / "cache" / "v2" / "entries" / "aa" / k_key_a);
    CHECK(fs::exists(dir / "cache" / "CACHEDIR.TAG"));
    struct stat st {};
    CHECK(::stat((dir / "cache").c_str(), &st) == 0);
    CHECK_EQ(st.st_mode & 0777, 0700u);
    CHECK(::stat(entry.c_str(), &st) == 0);
    CHECK_EQ(st.st_mode & 0777, 0700u);
    CHECK(::stat((entry / "payload").c_str(), &st) == 0);
    CHECK_EQ(st.st_mode & 0777, 0600u);
    // The build lock is gone once the build is published.
    CHECK(!fs::exists(dir / "cache" / "v2" / "locks" / (k_key_a + ".lock")));
}

OPWEAVE_TEST(metadata_is_recorded_and_listed) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    cache.get_or_build(k_key_a, writer("one", nullptr, 100));
    const std::string meta = *util::read_file(cache.entry_dir(k_key_a) / "meta.json");
    CHECK(meta.find("\"format\": 2") != std::string::npos);
    CHECK(meta.find("\"command\": \"fake-cc one\"") != std::string::npos);
    CHECK(meta.find("\"files\": [[\"payload\",103,\"") != std::string::npos);
    const std::vector<Entry> entries = cache.list();
    CHECK_EQ(entries.size(), 1u);
    CHECK_EQ(entries[0].key, k_key_a);
    CHECK_EQ(entries[0].kind, std::string("test"));
    CHECK_EQ(entries[0].label, std::string("payload one"));
    CHECK_EQ(entries[0].files.size(), 1u);
    CHECK_EQ(entries[0].files[0].size, 103u);
    CHECK_EQ(entries[0].command, std::string("fake-cc one"));
    CHECK_EQ(entries[0].key_material, std::string("material for one"));
    CHECK_EQ(entries[0].compile_seconds, 0.25);
    CHECK(entries[0].size_bytes >= 103);
    CHECK(entries[0].created > 0 && entries[0].last_used >= entries[0].created);
    const CacheStats stats = cache.stats();
    CHECK_EQ(stats.entries, 1u);
    CHECK_EQ(stats.total_bytes, entries[0].size_bytes);
    CHECK_EQ(stats.builds_in_flight, 0u);
}

OPWEAVE_TEST(failed_build_publishes_nothing_and_leaves_nothing) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    const BuildFn failing = [](const fs::path& staging) -> BuildRecord {
        std::ofstream(staging / "payload") << "half";
        throw std::runtime_error("compiler exploded");
    };
    CHECK_THROWS_AS(cache.get_or_build(k_key_a, failing), std::runtime_error);
    CHECK(!cache.lookup(k_key_a));
    CHECK(fs::is_empty(dir / "cache" / "v2" / "tmp"));
    CHECK(fs::is_empty(dir / "cache" / "v2" / "locks"));
    // The key can be built afterwards.
    CHECK(cache.get_or_build(k_key_a, writer("one")).outcome == Outcome::built);
}

OPWEAVE_TEST(threads_on_one_key_build_once) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    std::atomic<int> calls{0};
    const BuildFn slow = [&calls](const fs::path& staging) {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::ofstream(staging / "payload") << "slow";
        return BuildRecord{};
    };
    std::vector<std::thread> threads;
    std::atomic<int> built{0};
    for (int i = 0; i < 6; ++i) {
        threads.emplace_back([&] {
            if (cache.get_or_build(k_key_a, slow).outcome == Outcome::built) {
                ++built;
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    CHECK_EQ(calls.load(), 1);
    CHECK_EQ(built.load(), 1);
    CHECK_EQ(payload(cache.entry_dir(k_key_a)), std::string("slow"));
}

OPWEAVE_TEST(evict_and_clear) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    cache.get_or_build(k_key_a, writer("a"));
    cache.get_or_build(k_key_b, writer("b"));
    cache.get_or_build(k_key_c, writer("c"));
    CHECK(cache.evict(k_key_b));
    CHECK(!cache.evict(k_key_b));
    CHECK(!cache.lookup(k_key_b));
    CHECK_EQ(cache.list().size(), 2u);
    CHECK_EQ(cache.clear(), 2u);
    CHECK(cache.list().empty());
    CHECK(fs::is_empty(dir / "cache" / "v2" / "trash"));
}

OPWEAVE_TEST(prune_by_age_then_by_size_in_lru_order) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    cache.get_or_build(k_key_a, writer("a", nullptr, 1000));
    cache.get_or_build(k_key_b, writer("b", nullptr, 1000));
    cache.get_or_build(k_key_c, writer("c", nullptr, 1000));
    // Age the entries: a is the oldest, c the newest.
    age(cache, k_key_a, 10 * 86400.0);
    age(cache, k_key_b, 2 * 86400.0);
    age(cache, k_key_c, 1 * 86400.0);

    PruneResult by_age = cache.prune(std::nullopt, 5 * 86400.0);
    CHECK_EQ(by_age.removed, 1u);
    CHECK(!cache.lookup(k_key_a));
    // Two entries of ~1 KiB each remain; a 1.5 KiB budget drops the older (b).
    PruneResult by_size = cache.prune(1500, std::nullopt);
    CHECK_EQ(by_size.removed, 1u);
    CHECK(by_size.freed_bytes >= 1000);
    CHECK(!cache.entry_dir(k_key_b).empty() && !fs::exists(cache.entry_dir(k_key_b)));
    CHECK(fs::exists(cache.entry_dir(k_key_c)));
    CHECK_EQ(cache.prune(std::nullopt, std::nullopt).removed, 0u);
}

OPWEAVE_TEST(keys_are_validated) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    CHECK_THROWS_AS(cache.lookup("short"), std::invalid_argument);
    CHECK_THROWS_AS(cache.lookup("../../../../etc/passwd"), std::invalid_argument);
    CHECK_THROWS_AS(cache.lookup("aaaaaaaa/bbbbbbbb"), std::invalid_argument);
    CHECK_THROWS_AS(cache.lookup(std::string(129, 'a')), std::invalid_argument);
    CHECK(!cache.lookup(std::string(128, 'a')).has_value());
}

// The CacheError that opening a cache with `options` throws, if any.
static std::optional<CacheError> refusal(const CacheOptions& options) {
    try {
        ModuleCache cache(options);
    } catch (const CacheError& e) {
        return e;
    }
    return std::nullopt;
}

OPWEAVE_TEST(root_writable_by_others_is_refused) {
    TempDir dir;
    fs::create_directories(dir / "open");
    ::chmod((dir / "open").c_str(), 0777);
    CacheOptions options;
    options.root = dir / "open";
    const std::optional<CacheError> refused = refusal(options);
    CHECK(refused.has_value());
    if (refused) {
        const std::string message = refused->what();
        CHECK(message.find("writable by other users") != std::string::npos);
        CHECK(message.find("chmod go-w") != std::string::npos);
        CHECK_EQ(refused->path(), dir / "open");
    }
    // Group-writable is refused too; owner-only write is fine.
    ::chmod((dir / "open").c_str(), 0770);
    CHECK_THROWS_AS(ModuleCache{options}, CacheError);
    ::chmod((dir / "open").c_str(), 0755);
    ModuleCache private_cache(options);
    CHECK(private_cache.root() == fs::canonical(dir / "open"));
}

// Every directory above the root is checked as ssh's StrictModes does:
// writable by others only when sticky, owned by this user, root or the
// named shared owner. A symlink on the way is followed where it sits in
// such a directory.
OPWEAVE_TEST(ancestors_of_the_root_are_checked_like_strict_modes) {
    TempDir dir;
    fs::create_directories(dir / "open" / "mine");
    ::chmod((dir / "open").c_str(), 0777);
    CacheOptions options;
    options.root = dir / "open" / "mine" / "cache";
    const std::optional<CacheError> refused = refusal(options);
    CHECK(refused.has_value());
    if (refused) {
        const std::string message = refused->what();
        CHECK(message.find((dir / "open").string() + " is writable by group or others") !=
              std::string::npos);
        CHECK(message.find("chmod go-w") != std::string::npos);
    }
    ::chmod((dir / "open").c_str(), 01777);  // sticky, like /tmp
    { ModuleCache sticky(options); }
    ::chmod((dir / "open").c_str(), 0755);

    // Reached through a symlink and "..": the directories it leads through
    // are the ones checked.
    fs::create_directories(dir / "real");
    fs::create_directory_symlink(dir / "real", dir / "open" / "link");
    options.root = dir / "open" / ".." / "open" / "link" / "cache";
    { ModuleCache linked(options); }
    CHECK(fs::exists(dir / "real" / "cache" / "CACHEDIR.TAG"));
    ::chmod((dir / "real").c_str(), 0775);
    CHECK_THROWS_AS(ModuleCache{options}, CacheError);
    ::chmod((dir / "real").c_str(), 0755);

    if (::geteuid() == 0) {  // another owner needs root to make
        ::chown((dir / "real").c_str(), 4321, 4321);
        CHECK_THROWS_AS(ModuleCache{options}, CacheError);
        options.shared_owner = 4321;
        { ModuleCache trusted(options); }
    }
}

OPWEAVE_TEST(root_that_is_a_file_is_refused) {
    TempDir dir;
    std::ofstream(dir / "file") << "x";
    CacheOptions options;
    options.root = dir / "file";
    CHECK_THROWS_AS(ModuleCache{options}, CacheError);
}

OPWEAVE_TEST(default_root_follows_xdg_then_home) {
    const char* old_xdg = ::getenv("XDG_CACHE_HOME");
    const std::string saved_xdg = old_xdg != nullptr ? old_xdg : "";
    ::setenv("XDG_CACHE_HOME", "/some/xdg", 1);
    CHECK_EQ(ModuleCache::default_root(), fs::path("/some/xdg/opweave"));
    ::unsetenv("XDG_CACHE_HOME");
    const char* home = ::getenv("HOME");
    if (home != nullptr) {
        CHECK_EQ(ModuleCache::default_root(), fs::path(home) / ".cache" / "opweave");
    }
    if (old_xdg != nullptr) {
        ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
    }
}

OPWEAVE_TEST(sweep_removes_dead_builds_and_stale_locks) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    cache.get_or_build(k_key_b, writer("b"));  // makes the layout
    const fs::path v2 = dir / "cache" / "v2";
    fs::create_directories(v2 / "tmp" / "deadbeef.1.x");
    std::ofstream(v2 / "tmp" / "deadbeef.1.x.lock") << "1\n";
    std::ofstream(v2 / "locks" / (k_key_a + ".lock")) << "1\n";
    fs::create_directories(v2 / "trash" / "old.1.y");
    CHECK_EQ(cache.sweep(), 2u);
    CHECK(fs::is_empty(v2 / "tmp"));
    CHECK(fs::is_empty(v2 / "locks"));
    CHECK(fs::is_empty(v2 / "trash"));
}

OPWEAVE_TEST(sweep_removes_older_layouts_but_not_newer_ones) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    fs::create_directories(dir / "cache" / "v1" / "entries" / "aa" / k_key_a);
    std::ofstream(dir / "cache" / "v1" / "entries" / "aa" / k_key_a / "module.so") << "old";
    fs::create_directories(dir / "cache" / "v3" / "entries");
    fs::create_directories(dir / "cache" / "vintage");
    fs::create_directories(dir / "cache" / "v0" / "photos");  // the user's, not a layout
    cache.sweep();
    CHECK(!fs::exists(dir / "cache" / "v1"));
    CHECK(fs::exists(dir / "cache" / "v3" / "entries"));
    CHECK(fs::exists(dir / "cache" / "vintage"));
    CHECK(fs::exists(dir / "cache" / "v0" / "photos"));
    // An old entry is never read as a new one.
    CHECK(!cache.lookup(k_key_a));
}

OPWEAVE_TEST(keep_failed_source) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    const fs::path kept = cache.keep_failed_source(k_key_a, "int x = ;\n");
    CHECK_EQ(kept, dir / "cache" / "v2" / "failed" / (k_key_a + ".cpp"));
    CHECK_EQ(*util::read_file(kept), std::string("int x = ;\n"));
}

// A want is noted once per key, for every process of the cache; clear
// forgets them, a read-only cache notes none (it builds nothing).
OPWEAVE_TEST(wanted_before_is_true_from_the_second_want) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    CHECK(!cache.wanted_before(k_key_a));
    CHECK(cache.wanted_before(k_key_a));
    CHECK(!cache.wanted_before(k_key_b));
    ModuleCache other(options_in(dir));
    CHECK(other.wanted_before(k_key_b));
    const fs::path note = dir / "cache" / "v2" / "wants" / k_key_a;
    CHECK(fs::is_regular_file(note));
    CHECK((fs::status(note).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write));
    cache.clear();
    CHECK(!fs::exists(note));
    CHECK(!cache.wanted_before(k_key_a));
    CacheOptions read_only = options_in(dir);
    read_only.read_only = true;
    ModuleCache reader(read_only);
    CHECK(!reader.wanted_before(k_key_b));
    CHECK(!reader.wanted_before(k_key_b));
    CHECK_THROWS_AS(cache.wanted_before("../escape"), std::invalid_argument);
}

OPWEAVE_TEST(concurrent_builds_of_different_keys_never_trip_over_sweeps) {
    // Every miss sweeps the staging area while other builders are creating
    // their staging directories. Regression: a sweeper could take a new
    // directory's owner lock before its owner did, failing that build with
    // "cannot lock fresh staging directory".
    TempDir dir;
    ModuleCache cache(options_in(dir));
    std::atomic<int> failures{0};
    std::atomic<int> built{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 40; ++i) {
                const std::string key = "t" + std::to_string(t) + "k" + std::to_string(i) + "-padding";
                try {
                    if (cache.get_or_build(key, writer(key)).outcome == Outcome::built) {
                        ++built;
                    }
                } catch (const std::exception& e) {
                    std::cerr << "build of " << key << " failed: " << e.what() << "\n";
                    ++failures;
                }
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    CHECK_EQ(failures.load(), 0);
    CHECK_EQ(built.load(), 8 * 40);
    CHECK_EQ(cache.list().size(), 320u);
    CHECK(fs::is_empty(dir / "cache" / "v2" / "tmp"));
}

OPWEAVE_TEST(size_limit_evicts_least_recently_used_after_a_build) {
    TempDir dir;
    CacheOptions options = options_in(dir);
    options.max_total_bytes = 3500;
    ModuleCache cache(options);
    cache.get_or_build(k_key_a, writer("a", nullptr, 1000));
    age(cache, k_key_a, 300);
    cache.get_or_build(k_key_b, writer("b", nullptr, 1000));
    age(cache, k_key_b, 200);
    CHECK_EQ(cache.list().size(), 2u);
    // A third ~1.3 KiB entry goes over 3500 bytes: the oldest one goes.
    const CacheResult c = cache.get_or_build(k_key_c, writer("c", nullptr, 1000));
    CHECK(c.outcome == Outcome::built);
    const std::vector<Entry> left = cache.list();
    CHECK_EQ(left.size(), 2u);
    CHECK_EQ(left[0].key, k_key_b);
    CHECK_EQ(left[1].key, k_key_c);
    // The entry just built is never the one evicted, however small the limit.
    options.max_total_bytes = 10;
    ModuleCache tiny(options);
    const std::string key_d = "dddddddddddddddd";
    CHECK(tiny.get_or_build(key_d, writer("d", nullptr, 1000)).outcome == Outcome::built);
    CHECK_EQ(tiny.list().size(), 1u);
    CHECK(tiny.lookup(key_d).has_value());
}

// The size stats.json records, written as a listing would write it.
void record_size(const TempDir& dir, std::uint64_t bytes, double listed_at) {
    std::ofstream(dir / "cache" / "v2" / "stats.json")
        << "{\"format\": 1, \"bytes\": " << bytes << ", \"listed_at\": " << std::fixed
        << listed_at << "}\n";
}

std::uint64_t listed_bytes(const ModuleCache& cache) {
    std::uint64_t total = 0;
    for (const Entry& entry : cache.list()) {
        total += entry.size_bytes;
    }
    return total;
}

OPWEAVE_TEST(a_first_build_reads_the_recorded_size_instead_of_listing) {
    TempDir dir;
    CacheOptions options = options_in(dir);
    options.max_total_bytes = 3500;
    {
        ModuleCache cache(options);
        cache.get_or_build(k_key_a, writer("a", nullptr, 1000));  // lists: one entry
        cache.get_or_build(k_key_b, writer("b", nullptr, 1000));
    }  // writes what it published
    ModuleCache reader(options);
    const std::optional<std::string> stats = util::read_file(dir / "cache" / "v2" / "stats.json");
    CHECK(stats && stats->find("\"bytes\":" + std::to_string(listed_bytes(reader))) !=
                       std::string::npos);
    // A record that says the cache is empty: a new process's build trusts
    // it, lists nothing, and evicts nothing though three entries pass 3500.
    const double now = static_cast<double>(::time(nullptr));
    record_size(dir, 0, now);
    ModuleCache trusting(options);
    trusting.get_or_build(k_key_c, writer("c", nullptr, 1000));
    CHECK_EQ(trusting.list().size(), 3u);
    // A record older than a day is not trusted: the build lists, evicts the
    // oldest entries and records what it found.
    age(trusting, k_key_a, 300);
    age(trusting, k_key_b, 200);
    record_size(dir, 0, now - 2 * 24 * 3600.0);
    ModuleCache listing(options);
    listing.get_or_build("dddddddddddddddd", writer("d", nullptr, 1000));
    CHECK_EQ(listing.list().size(), 2u);
    CHECK(!listing.lookup(k_key_a) && !listing.lookup(k_key_b));
    const std::optional<std::string> after = util::read_file(dir / "cache" / "v2" / "stats.json");
    CHECK(after && after->find("\"bytes\":" + std::to_string(listed_bytes(listing))) !=
                       std::string::npos);
}

OPWEAVE_TEST(counters_persist_across_cache_objects) {
    TempDir dir;
    {
        ModuleCache cache(options_in(dir));
        cache.get_or_build(k_key_a, writer("a"));
        cache.get_or_build(k_key_a, writer("a"));
        cache.get_or_build(k_key_a, writer("a"));
    }  // the destructor writes what it gathered
    ModuleCache again(options_in(dir));
    again.get_or_build(k_key_b, writer("b"));
    again.flush_counters();
    const CacheCounters counters = again.stats().counters;
    CHECK_EQ(counters.hits, 2u);
    CHECK_EQ(counters.misses, 2u);
    CHECK_EQ(counters.builds, 2u);
    CHECK_EQ(counters.compile_seconds, 0.5);
    CHECK_EQ(counters.saved_seconds, 0.5);
    again.clear();
    CHECK_EQ(again.stats().counters.builds, 0u);
}

OPWEAVE_TEST(quarantine_leaves_a_replaced_entry_alone) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    cache.get_or_build(k_key_a, writer("a"));
    // A caller that failed to load a file the entry no longer holds.
    CHECK(!cache.quarantine(k_key_a, "cannot be loaded", "module-0123456789abcdef.so"));
    CHECK(cache.lookup(k_key_a).has_value());
    CHECK(cache.quarantine(k_key_a, "cannot be loaded", "payload"));
    CHECK(!cache.lookup(k_key_a).has_value());
    // Quarantined items age from their quarantine, not from their last use.
    const fs::path quarantine = dir / "cache" / "v2" / "quarantine";
    for (const auto& item : fs::directory_iterator(quarantine)) {
        const auto age = fs::file_time_type::clock::now() - fs::last_write_time(item.path());
        CHECK(age < std::chrono::minutes(1));
    }
}

OPWEAVE_TEST(verify_checks_again_and_handles_stray_files) {
    TempDir dir;
    ModuleCache cache(options_in(dir));
    cache.get_or_build(k_key_a, writer("a"));
    cache.get_or_build(k_key_b, writer("b"));
    std::ofstream(cache.entry_dir(k_key_a).parent_path() / "notes.txt") << "x";
    std::ofstream(cache.entry_dir(k_key_b) / "payload") << "damaged";
    VerifyReport report = cache.verify(Repair::no);
    CHECK_EQ(report.entries_checked, 3u);
    CHECK_EQ(report.problems.size(), 2u);
    report = cache.verify(Repair::yes);
    CHECK_EQ(report.problems.size(), 2u);
    CHECK(report.problems.at(0).repaired && report.problems.at(1).repaired);
    CHECK(cache.verify(Repair::no).problems.empty());
    CHECK(cache.lookup(k_key_a).has_value());
    // A stray name does not stop pruning either (it is listed, and removed
    // like an entry).
    std::ofstream(cache.entry_dir(k_key_a).parent_path() / "more-notes.txt") << "x";
    CHECK_EQ(cache.list().size(), 2u);
    CHECK_EQ(cache.prune(std::nullopt, -1.0).removed, 2u);
    CHECK(cache.list().empty());
}

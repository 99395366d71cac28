// Tests of the entries named by what they are for, not by their content
// (graph records): ModuleCache::replace publishes in place of any entry of
// the key, and read_entry_file hands out an entry's bytes only as recorded,
// this cache's before a read-only layer's.
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "check.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_cache.hpp"
#include "temp_dir.hpp"

using namespace opweave;
using opweave_test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_key = "0123456789abcdef";

BuildFn writer(const std::string& content) {
    return [content](const fs::path& staging) {
        std::ofstream(staging / "graph.json") << content;
        BuildRecord record;
        record.kind = "graph";
        record.compile_seconds = 0.5;
        return record;
    };
}

CacheOptions options_at(const fs::path& root) {
    CacheOptions options;
    options.root = root;
    return options;
}

}  // namespace

OPWEAVE_TEST(replace_publishes_in_place_of_a_valid_entry) {
    TempDir dir;
    ModuleCache cache(options_at(dir / "cache"));
    CHECK(!cache.read_entry_file(k_key, "graph.json"));
    CHECK(cache.replace(k_key, writer("one")).outcome == Outcome::built);
    CHECK_EQ(cache.read_entry_file(k_key, "graph.json").value_or(""), std::string("one"));
    // get_or_build keeps a valid entry; replace does not.
    CHECK(cache.get_or_build(k_key, writer("two")).outcome == Outcome::hit);
    CHECK_EQ(cache.read_entry_file(k_key, "graph.json").value_or(""), std::string("one"));
    const CacheResult replaced = cache.replace(k_key, writer("two"));
    CHECK(replaced.outcome == Outcome::built);
    CHECK_EQ(replaced.entry.kind, std::string("graph"));
    CHECK_EQ(cache.read_entry_file(k_key, "graph.json").value_or(""), std::string("two"));
    CHECK_EQ(cache.list().size(), std::size_t{1});
    CHECK(!cache.read_entry_file(k_key, "meta.json"));  // not a file the entry records
    CHECK(!cache.read_entry_file(k_key, "other.json"));
}

OPWEAVE_TEST(read_entry_file_refuses_altered_bytes) {
    TempDir dir;
    ModuleCache cache(options_at(dir / "cache"));
    const CacheResult built = cache.replace(k_key, writer("{\"a\": 1}"));
    std::ofstream(built.entry.dir / "graph.json") << "{\"a\": 2}";  // same size, other bytes
    CHECK(!cache.read_entry_file(k_key, "graph.json"));
    CHECK(cache.replace(k_key, writer("{\"a\": 3}")).outcome == Outcome::built);
    CHECK_EQ(cache.read_entry_file(k_key, "graph.json").value_or(""), std::string("{\"a\": 3}"));
}

OPWEAVE_TEST(this_caches_entry_comes_before_a_layers) {
    TempDir dir;
    {
        ModuleCache shared(options_at(dir / "shared"));
        shared.replace(k_key, writer("shared"));
    }
    CacheOptions own_options = options_at(dir / "own");
    own_options.shared_roots = {dir / "shared"};
    ModuleCache own(own_options);
    CHECK_EQ(own.read_entry_file(k_key, "graph.json").value_or(""), std::string("shared"));
    // replace writes this cache's entry, never the layer's.
    CHECK(own.replace(k_key, writer("own")).outcome == Outcome::built);
    CHECK_EQ(own.read_entry_file(k_key, "graph.json").value_or(""), std::string("own"));
    ModuleCache shared(options_at(dir / "shared"));
    CHECK_EQ(shared.read_entry_file(k_key, "graph.json").value_or(""), std::string("shared"));
    CacheOptions read_only = options_at(dir / "shared");
    read_only.read_only = true;
    ModuleCache frozen(read_only);
    CHECK_THROWS_AS(frozen.replace(k_key, writer("no")), CacheError);
}

OPWEAVE_TEST(note_hit_counts_the_seconds_saved) {
    TempDir dir;
    ModuleCache cache(options_at(dir / "cache"));
    cache.replace(k_key, writer("{}"));  // stats.json lives beside the entries
    cache.flush_counters();
    const std::uint64_t hits = cache.stats().counters.hits;
    const double saved = cache.stats().counters.saved_seconds;
    cache.note_hit(1.5);
    cache.note_hit();
    cache.flush_counters();
    const CacheStats stats = cache.stats();
    CHECK_EQ(stats.counters.hits - hits, std::uint64_t{2});
    CHECK(stats.counters.saved_seconds - saved > 1.49 &&
          stats.counters.saved_seconds - saved < 1.51);
    CHECK(stats.counters.saved_seconds > 1.49 && stats.counters.saved_seconds < 1.51);
}

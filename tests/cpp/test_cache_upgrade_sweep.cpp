// Tests of the sweep after an upgrade (cpp/cache/upgrade_sweep.hpp): the
// first writable open of a root after the key recipe changed removes the
// entries of older recipes and older layouts' directories, leaves the
// others, and goes on at the next open when its time ran out.
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "cache/module_cache_impl.hpp"
#include "cache/upgrade_sweep.hpp"
#include "check.hpp"
#include "opweave/module_cache.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"

using namespace opweave;
using opweave_test::TempDir;
namespace fs = std::filesystem;

namespace {

BuildFn writer(const std::string& material) {
    return [material](const fs::path& staging) {
        std::ofstream(staging / "payload") << material;
        BuildRecord record;
        record.kind = "module";
        record.key_material = material;
        return record;
    };
}

CacheOptions options_at(const fs::path& root, int recipe) {
    CacheOptions options;
    options.root = root;
    options.recipe = recipe;
    return options;
}

std::string marker(const fs::path& root) {
    return util::read_file(root / "v2" / cache::k_recipe_file).value_or("");
}

// Entries of recipes 2 and 3 and of none, spread over shards, and a v1
// layout directory, made without a sweep.
void fill(const fs::path& root) {
    ModuleCache cache(options_at(root, 0));
    for (const char first : std::string("0123456789abcdef")) {
        const std::string shard(2, first);
        cache.get_or_build(shard + "old0000000000", writer("layout: module 2\ncompiler: x\n"));
        cache.get_or_build(shard + "new0000000000", writer("layout: unit 3\ncompiler: x\n"));
        cache.get_or_build(shard + "any0000000000", writer("graph record\nmodule: y\n"));
    }
    fs::create_directories(root / "v1" / "entries" / "ab" / "abcdefabcdefabcd");
}

std::size_t count_with(const fs::path& root, const std::string& part) {
    std::size_t found = 0;
    for (const auto& shard : fs::directory_iterator(root / "v2" / "entries")) {
        for (const auto& entry : fs::directory_iterator(shard.path())) {
            found += entry.path().filename().string().find(part) != std::string::npos ? 1 : 0;
        }
    }
    return found;
}

}  // namespace

OPWEAVE_TEST(the_first_open_after_an_upgrade_removes_older_recipes_and_layouts) {
    TempDir dir;
    fill(dir / "cache");
    CHECK_EQ(count_with(dir / "cache", "old"), std::size_t{16});
    ModuleCache cache(options_at(dir / "cache", 3));
    CHECK_EQ(count_with(dir / "cache", "old"), std::size_t{0});
    CHECK_EQ(count_with(dir / "cache", "new"), std::size_t{16});
    CHECK_EQ(count_with(dir / "cache", "any"), std::size_t{16});  // no recipe: left
    CHECK(!fs::exists(dir / "cache" / "v1"));
    CHECK_EQ(marker(dir / "cache"), std::string("3 done\n"));
    CHECK(fs::is_empty(dir / "cache" / "v2" / "trash"));
    // Done: a later open reads the marker and nothing else.
    {
        ModuleCache plain(options_at(dir / "cache", 0));
        plain.get_or_build("ffold1111111111", writer("layout: module 2\n"));
    }
    ModuleCache again(options_at(dir / "cache", 3));
    CHECK_EQ(count_with(dir / "cache", "old"), std::size_t{1});
}

OPWEAVE_TEST(a_sweep_out_of_time_goes_on_at_the_next_open) {
    TempDir dir;
    fill(dir / "cache");
    const cache::Places places = cache::open_places(dir / "cache", nullptr);
    cache::upgrade_sweep(places.root, 3, 0.0);  // no time: layouts only
    CHECK(!fs::exists(dir / "cache" / "v1"));
    CHECK_EQ(count_with(dir / "cache", "old"), std::size_t{16});
    CHECK_EQ(marker(dir / "cache"), std::string("3 from 00\n"));
    CHECK_EQ(cache::upgrade_sweep(places.root, 3, 10.0), std::size_t{16});
    CHECK_EQ(count_with(dir / "cache", "old"), std::size_t{0});
    CHECK_EQ(marker(dir / "cache"), std::string("3 done\n"));
    // Another recipe later (a second upgrade): the recipe 3 entries go.
    CHECK_EQ(cache::upgrade_sweep(places.root, 4, 10.0), std::size_t{16});
    CHECK_EQ(count_with(dir / "cache", "new"), std::size_t{0});
    CHECK_EQ(count_with(dir / "cache", "any"), std::size_t{16});
}

OPWEAVE_TEST(a_damaged_marker_is_a_sweep_from_the_start) {
    TempDir dir;
    fill(dir / "cache");
    ModuleCache(options_at(dir / "cache", 3));
    std::ofstream(dir / "cache" / "v2" / cache::k_recipe_file) << "3 from \xff\xfe";
    {
        ModuleCache plain(options_at(dir / "cache", 0));
        plain.get_or_build("00old1111111111", writer("layout: module 2\n"));
    }
    ModuleCache again(options_at(dir / "cache", 3));
    CHECK_EQ(count_with(dir / "cache", "old"), std::size_t{0});
    CHECK_EQ(marker(dir / "cache"), std::string("3 done\n"));
}

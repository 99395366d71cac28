// Tests of build_module with a RemoteStorage (remote_storage.hpp), as a C++
// tool embedding the core plugs in its own: a miss asks the storage, under
// the key's lock, and what it returns is published only once it verifies; a
// module built here is put there. Packs are ModuleCache::export_entry's.
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "check.hpp"
#include "fake_compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "opweave/remote_storage.hpp"
#include "temp_dir.hpp"

using namespace opweave;
using opweave_test::FakeCompiler;
using opweave_test::TempDir;
namespace fs = std::filesystem;

namespace {

class MapStorage final : public RemoteStorage {
public:
    std::optional<std::string> get(std::string_view key) override {
        ++gets;
        if (fail) {
            throw std::runtime_error("the store is down");
        }
        const auto found = packs.find(std::string(key));
        return found == packs.end() ? std::nullopt : std::optional<std::string>(found->second);
    }
    void put(std::string_view key, std::string_view pack) override {
        packs[std::string(key)] = std::string(pack);
    }

    std::map<std::string, std::string> packs;
    int gets = 0;
    bool fail = false;
};

ModuleRequest request_for(const std::string& source) {
    ModuleRequest request;
    request.source = source;
    request.extra = "abi";
    return request;
}

CacheOptions options_at(const fs::path& root) {
    CacheOptions options;
    options.root = root;
    return options;
}

// Builds `source` in the cache at `root`, with `storage`.
BuiltModule build_at(const fs::path& root, const FakeCompiler& compiler, MapStorage& storage,
                     const std::string& source = "int x;") {
    ModuleCache cache(options_at(root));
    return build_module(cache, compiler, request_for(source), nullptr, &storage);
}

}  // namespace

OPWEAVE_TEST(a_module_built_in_one_cache_is_fetched_by_another) {
    TempDir dir;
    MapStorage storage;
    const FakeCompiler compiler;
    const BuiltModule built = build_at(dir / "a", compiler, storage);
    CHECK(built.outcome == Outcome::built);
    CHECK_EQ(storage.packs.size(), 1u);
    CHECK(storage.packs.count(built.key) == 1);
    ModuleCache first(options_at(dir / "a"));
    CHECK(storage.packs[built.key] == first.export_entry(built.key).value_or(""));

    const std::size_t compiles = compiler.jobs.size();
    const BuiltModule fetched = build_at(dir / "b", compiler, storage);
    CHECK(fetched.outcome == Outcome::hit);
    CHECK_EQ(compiler.jobs.size(), compiles);  // nothing compiled
    CHECK_EQ(fetched.events.size(), 1u);
    CHECK(fetched.events.at(0).kind == CacheEvent::Kind::fetched);
    CHECK(fs::exists(fetched.library));
    CHECK(ModuleCache(options_at(dir / "b")).lookup(built.key).has_value());
}

OPWEAVE_TEST(bytes_that_do_not_verify_are_a_miss_built_here) {
    TempDir dir;
    MapStorage storage;
    const FakeCompiler compiler;
    const BuiltModule built = build_at(dir / "a", compiler, storage);
    std::string& pack = storage.packs[built.key];
    pack.back() = static_cast<char>(pack.back() ^ 1);  // a byte of the library
    const std::string altered = pack;

    const BuiltModule rebuilt = build_at(dir / "b", compiler, storage);
    CHECK(rebuilt.outcome == Outcome::built);
    CHECK_EQ(rebuilt.events.size(), 1u);
    CHECK(rebuilt.events.at(0).kind == CacheEvent::Kind::remote_failed);
    CHECK(rebuilt.events.at(0).problem.find("does not verify") != std::string::npos);
    // Only the library built here is in the entry, and it replaced the bad pack.
    ModuleCache first(options_at(dir / "a"));
    CHECK_EQ(ModuleCache(options_at(dir / "b")).lookup(built.key)->files.size(),
             first.lookup(built.key)->files.size());
    CHECK(storage.packs[built.key] != altered);
}

OPWEAVE_TEST(a_failing_storage_is_a_miss_built_here) {
    TempDir dir;
    MapStorage storage;
    storage.fail = true;
    const FakeCompiler compiler;
    ModuleCache cache(options_at(dir / "a"));
    const BuiltModule built = build_module(cache, compiler, request_for("int y;"), nullptr, &storage);
    CHECK(built.outcome == Outcome::built);
    CHECK_EQ(storage.gets, 1);
    CHECK_EQ(built.events.size(), 1u);
    CHECK(built.events.at(0).problem == "the store is down");
    // A hit does not ask the storage.
    CHECK(build_module(cache, compiler, request_for("int y;"), nullptr, &storage).outcome ==
          Outcome::hit);
    CHECK_EQ(storage.gets, 1);
}

OPWEAVE_TEST(a_pack_is_adopted_only_under_its_own_key) {
    TempDir dir;
    const FakeCompiler compiler;
    ModuleCache first(options_at(dir / "a"));
    const BuiltModule one = build_module(first, compiler, request_for("int x;"));
    const BuiltModule two = build_module(first, compiler, request_for("int z;"));
    const std::string pack = first.export_entry(one.key).value();
    ModuleCache second(options_at(dir / "b"));
    CHECK_THROWS_AS(second.adopt(two.key, pack), CacheError);
    CHECK_THROWS_AS(second.adopt(one.key, pack.substr(0, pack.size() - 1)), CacheError);
    CHECK_THROWS_AS(second.adopt(one.key, "OPWEAVE-ENTRY 1\n[]\n"), CacheError);
    CHECK(second.list().empty());
    CHECK(second.adopt(one.key, pack).outcome == Outcome::built);
    CHECK(!first.export_entry(std::string(64, '0')).has_value());
}

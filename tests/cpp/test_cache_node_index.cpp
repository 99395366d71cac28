// Tests of the node index (cpp/cache/node_index.cpp): build_module records a
// request's exports and find_export finds the entry; an index file that is
// wrong (another entry, garbage, a symlink) is a miss and is removed; evict,
// prune, clear and verify keep the index in step with the entries; adopt
// and read-only shared caches. A fake compiler stands in for g++.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "fake_compiler.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"

using namespace opweave;
using opweave_test::FakeCompiler;
using opweave_test::TempDir;
using opweave_test::cache_options;
namespace fs = std::filesystem;

namespace {

const std::string k_node_1 = std::string(64, '1');
const std::string k_node_2 = std::string(63, '2') + "f";
const std::string k_node_3 = "33" + std::string(62, 'a');
const std::string k_key_a = "aaaaaaaaaaaaaaaa";
const std::string k_key_b = "bbbbbbbbbbbbbbbb";

fs::path index_file(const ModuleCache& cache, const std::string& node) {
    return cache.root() / "v2" / "nodes" / node.substr(0, 2) / node;
}

std::string read(const fs::path& path) { return util::read_file(path).value_or("<none>"); }

void write(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

bool present(const fs::path& path) {
    std::error_code error;
    return fs::exists(fs::symlink_status(path, error));
}

// A build of one payload file that exports `exports`.
BuildFn exporting(const std::vector<std::string>& exports) {
    return [exports](const fs::path& staging) {
        std::ofstream(staging / "payload") << "payload";
        BuildRecord record;
        record.kind = "test";
        record.exports = exports;
        return record;
    };
}

ModuleRequest request_exporting(const std::vector<std::string>& exports) {
    ModuleRequest request;
    request.source = "extern \"C\" int node_1() { return 1; }\n";
    request.extra = "abi";
    request.label = "Node1";
    request.exports = exports;
    return request;
}

}  // namespace

OPWEAVE_TEST(build_module_records_exports_and_find_export_finds_the_entry) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler;
    const BuiltModule built =
        build_module(cache, compiler, request_exporting({k_node_1, k_node_2}));
    CHECK(built.outcome == Outcome::built);
    // Not in the key: the source spells the exports.
    CHECK_EQ(built.key, module_key(compiler, request_exporting({})));
    CHECK(read(built.dir / "meta.json").find("\"exports\": [\"" + k_node_1) != std::string::npos);
    CHECK_EQ(read(index_file(cache, k_node_1)), built.key + "\n");
    struct stat st {};
    CHECK(::lstat(index_file(cache, k_node_2).c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0600u);

    for (const std::string& node : {k_node_1, k_node_2}) {
        const std::optional<Entry> found = cache.find_export(node);
        CHECK(found.has_value());
        if (found) {
            CHECK_EQ(found->key, built.key);
            CHECK(found->exports == (std::vector<std::string>{k_node_1, k_node_2}));
            CHECK_EQ(found->file_ending(".so"), built.library);
        }
    }
    CHECK(!cache.find_export(k_node_3).has_value());
    CHECK_THROWS_AS(cache.find_export("no/such"), std::invalid_argument);
    CHECK_THROWS_AS(build_module(cache, compiler, request_exporting({"bad key!"})),
                    std::invalid_argument);
    // An entry without exports reads as before: no "exports" member at all.
    const BuiltModule plain = build_module(cache, compiler, [] {
        ModuleRequest request = request_exporting({});
        request.source += "// another\n";
        return request;
    }());
    CHECK(read(plain.dir / "meta.json").find("exports") == std::string::npos);
    CHECK(cache.lookup(plain.key).has_value());
}

OPWEAVE_TEST(a_build_with_a_bad_export_publishes_nothing) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    CHECK_THROWS_AS(cache.get_or_build(k_key_a, exporting({"../../evil"})),
                    std::invalid_argument);
    CHECK(!cache.lookup(k_key_a).has_value());
    CHECK(cache.list().empty());
}

OPWEAVE_TEST(a_wrong_index_file_is_a_miss_and_is_removed) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.get_or_build(k_key_a, exporting({k_node_1}));
    cache.get_or_build(k_key_b, exporting({}));
    const fs::path file = index_file(cache, k_node_1);
    CHECK(cache.find_export(k_node_1).has_value());

    const std::vector<std::string> wrong = {
        k_key_b + "\n",           // an entry that does not export the node
        "cccccccccccccccc\n",     // no such entry
        "garbage\x01\n",          // not a key
        k_key_a,                  // no newline
        std::string(4096, 'a'),  // too long
    };
    for (const std::string& content : wrong) {
        write(file, content);
        CHECK(!cache.find_export(k_node_1).has_value());
        CHECK(!present(file));
    }

    // A symlink, even to a good file, is never followed; only the link goes.
    write(dir / "elsewhere", k_key_a + "\n");
    fs::create_symlink(dir / "elsewhere", file);
    CHECK(!cache.find_export(k_node_1).has_value());
    CHECK(!present(file));
    CHECK_EQ(read(dir / "elsewhere"), k_key_a + "\n");

    // A file writable by others is not trusted either.
    write(file, k_key_a + "\n");
    fs::permissions(file, fs::perms::others_write, fs::perm_options::add);
    CHECK(!cache.find_export(k_node_1).has_value());
    CHECK(!present(file));

    // The next hit of the entry writes its missing index file again.
    CHECK(cache.get_or_build(k_key_a, exporting({k_node_1})).outcome == Outcome::hit);
    CHECK_EQ(read(file), k_key_a + "\n");
    const std::optional<Entry> found = cache.find_export(k_node_1);
    CHECK(found && found->key == k_key_a);
}

OPWEAVE_TEST(a_damaged_entry_is_not_found_through_the_index) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.get_or_build(k_key_a, exporting({k_node_1}));
    write(cache.entry_dir(k_key_a) / "payload", "tampered");
    std::vector<CacheEvent> events;
    CHECK(!cache.find_export(k_node_1, &events).has_value());
    CHECK(!events.empty() && events.front().kind == CacheEvent::Kind::quarantined);
    CHECK(!present(index_file(cache, k_node_1)));
}

OPWEAVE_TEST(the_last_writer_wins_and_evict_removes_only_its_own_index_files) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.get_or_build(k_key_a, exporting({k_node_1, k_node_2}));
    cache.get_or_build(k_key_b, exporting({k_node_1}));
    CHECK_EQ(read(index_file(cache, k_node_1)), k_key_b + "\n");
    CHECK_EQ(cache.find_export(k_node_1)->key, k_key_b);
    // Evicting A leaves node 1's file, which names B.
    CHECK(cache.evict(k_key_a));
    CHECK(!present(index_file(cache, k_node_2)));
    CHECK_EQ(read(index_file(cache, k_node_1)), k_key_b + "\n");
    CHECK(cache.evict(k_key_b));
    CHECK(!present(index_file(cache, k_node_1)));
    CHECK(!cache.find_export(k_node_1).has_value());
}

OPWEAVE_TEST(prune_and_clear_remove_index_files) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.get_or_build(k_key_a, exporting({k_node_1}));
    cache.get_or_build(k_key_b, exporting({k_node_2}));
    fs::last_write_time(cache.entry_dir(k_key_a),
                        fs::file_time_type::clock::now() - std::chrono::hours(2));
    CHECK_EQ(cache.prune(std::nullopt, 3600.0).removed, 1u);
    CHECK(!present(index_file(cache, k_node_1)));
    CHECK(present(index_file(cache, k_node_2)));
    CHECK(cache.find_export(k_node_2).has_value());

    cache.get_or_build(k_key_a, exporting({k_node_1, k_node_3}));
    CHECK(present(index_file(cache, k_node_3)));
    CHECK_EQ(cache.clear(), 2u);
    CHECK(!present(cache.root() / "v2" / "nodes"));
    CHECK(!cache.find_export(k_node_1).has_value());
    CHECK(!cache.find_export(k_node_2).has_value());
    // The index comes back with the next build.
    cache.get_or_build(k_key_a, exporting({k_node_1}));
    CHECK(cache.find_export(k_node_1).has_value());
}

OPWEAVE_TEST(verify_reports_and_repairs_bad_index_files) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    cache.get_or_build(k_key_a, exporting({k_node_1}));
    cache.get_or_build(k_key_b, exporting({k_node_2}));
    CHECK(cache.verify(Repair::no).problems.empty());

    const fs::path nodes = cache.root() / "v2" / "nodes";
    write(index_file(cache, k_node_2), k_key_a + "\n");  // A does not export node 2
    fs::create_directories(nodes / "33");
    write(index_file(cache, k_node_3), "cccccccccccccccc\n");  // no such entry
    write(nodes / "33" / "notakey", k_key_a + "\n");
    write(nodes / "11" / ("44" + std::string(62, '4')), k_key_a + "\n");  // wrong directory
    write(nodes / "stray.txt", "x");

    VerifyReport report = cache.verify(Repair::no);
    CHECK_EQ(report.problems.size(), 5u);
    bool named = false;
    for (const VerifyProblem& problem : report.problems) {
        CHECK(!problem.repaired);
        named = named || problem.problem == "node index " + k_node_2 + " points to entry " +
                                                k_key_a + " which does not export it";
    }
    CHECK(named);
    CHECK(present(index_file(cache, k_node_3)));

    report = cache.verify(Repair::yes);
    CHECK_EQ(report.problems.size(), 5u);
    for (const VerifyProblem& problem : report.problems) {
        CHECK(problem.repaired);
    }
    CHECK(cache.verify(Repair::no).problems.empty());
    CHECK(!present(index_file(cache, k_node_2)));
    CHECK(!present(nodes / "stray.txt"));
    // The good one stays.
    CHECK_EQ(read(index_file(cache, k_node_1)), k_key_a + "\n");
    CHECK(cache.find_export(k_node_1).has_value());
}

OPWEAVE_TEST(adopt_indexes_the_exports_of_a_foreign_entry) {
    TempDir dir;
    ModuleCache there(cache_options(dir));
    there.get_or_build(k_key_a, exporting({k_node_1}));
    const std::optional<std::string> pack = there.export_entry(k_key_a);
    CHECK(pack.has_value());

    CacheOptions options;
    options.root = dir / "here";
    ModuleCache here(options);
    CHECK(here.adopt(k_key_a, *pack).outcome == Outcome::built);
    CHECK_EQ(read(index_file(here, k_node_1)), k_key_a + "\n");
    const std::optional<Entry> found = here.find_export(k_node_1);
    CHECK(found && found->dir == here.entry_dir(k_key_a));
}

OPWEAVE_TEST(find_export_looks_in_shared_read_only_caches_without_removing) {
    TempDir dir;
    {
        ModuleCache shared(cache_options(dir));
        shared.get_or_build(k_key_a, exporting({k_node_1}));
        shared.get_or_build(k_key_b, exporting({k_node_2}));
    }
    CacheOptions options;
    options.root = dir / "mine";
    options.shared_roots = {dir / "cache"};
    ModuleCache mine(options);
    const std::optional<Entry> found = mine.find_export(k_node_1);
    CHECK(found && found->key == k_key_a);

    CacheOptions read_only;
    read_only.root = dir / "cache";
    read_only.read_only = true;
    ModuleCache reader(read_only);
    const fs::path file = index_file(reader, k_node_2);
    write(file, k_key_a + "\n");  // A does not export node 2
    CHECK(!mine.find_export(k_node_2).has_value());
    CHECK(!reader.find_export(k_node_2).has_value());
    CHECK(present(file));  // left as it is
    CHECK(reader.find_export(k_node_1).has_value());
}

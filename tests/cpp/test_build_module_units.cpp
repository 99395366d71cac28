// Tests of modules built from units (ModuleRequest::units): each unit is a
// cache entry compiled once, only missing units are compiled, units are
// linked with the module's own source, a unit gone or damaged is rebuilt,
// a failing unit fails the build with its source kept; and one real build
// that links three objects and calls across them.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "call_answer.hpp"
#include "check.hpp"
#include "fake_compiler.hpp"
#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "opweave/module_source.hpp"
#include "opweave/precompiled_header.hpp"
#include "temp_dir.hpp"

using namespace opweave;
using opweave_test::FakeCompiler;
using opweave_test::TempDir;
using opweave_test::cache_options;
using opweave_test::k_gcc_version;
namespace fs = std::filesystem;

namespace {

ModuleRequest request_with_units(const std::vector<std::string>& units) {
    ModuleRequest request;
    request.source = "main";
    request.extra = "abi";
    request.label = "Units";
    for (const std::string& unit : units) {
        request.units.push_back({unit, "unit " + unit});
    }
    return request;
}

std::size_t count(const std::vector<std::string>& modes, const std::string& mode) {
    return static_cast<std::size_t>(std::count(modes.begin(), modes.end(), mode));
}

// The compiles done by the time build_module reports a missing prelude.
struct WhenPreludeMissing : BuildMonitor {
    const FakeCompiler* compiler = nullptr;
    std::vector<std::size_t> compiles;
    void prelude_missing(const ModuleRequest& /*request*/) override {
        const std::lock_guard<std::mutex> guard(compiler->mutex);
        compiles.push_back(count(compiler->modes, "-c"));
    }
};

std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

OPWEAVE_TEST(units_are_compiled_once_each_and_linked_with_the_source) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler;
    const BuiltModule built = build_module(cache, compiler, request_with_units({"u0", "u1"}));
    CHECK(built.outcome == Outcome::built);
    CHECK_EQ(count(compiler.modes, "-c"), 3u);  // the source and two units
    CHECK_EQ(count(compiler.modes, "link"), 1u);
    CHECK_EQ(count(compiler.modes, "-shared"), 0u);
    CHECK_EQ(built.units.size(), 2u);
    for (const BuiltUnit& unit : built.units) {
        CHECK(unit.outcome == Outcome::built);
        const std::optional<Entry> entry = cache.lookup(unit.key);
        CHECK(entry.has_value() && entry->kind == "unit");
    }
    // The library is the link of three objects (the fake writes its output
    // then each object's content).
    CHECK_EQ(read(built.library), std::string("fake output") + "fake output" + "fake output" +
                                      "fake output");
    // Only the module's own file, library and metadata are published.
    CHECK(!fs::exists(built.dir / "module.o"));
    CHECK(fs::exists(built.source));
    CHECK_EQ(unit_key(TranslationUnit{"u0", ""}, compiler, CompileJob{}, "abi"),
             built.units[0].key);

    // The same module again is a hit; nothing is compiled.
    compiler.modes.clear();
    CHECK(build_module(cache, compiler, request_with_units({"u0", "u1"})).outcome ==
          Outcome::hit);
    CHECK(compiler.modes.empty());
}

OPWEAVE_TEST(a_unit_records_what_it_holds_and_is_found_by_it) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler;
    const std::string held(64, 'a');
    ModuleRequest request = request_with_units({"u0", "u1"});
    request.units[1].exports = {held};
    const BuiltModule built = build_module(cache, compiler, request);
    const std::optional<Entry> found = cache.find_export(held);
    CHECK(found.has_value() && found->key == built.units[1].key && found->kind == "unit");
    CHECK(found.has_value() && found->exports.size() == 1 && found->exports[0] == held);
    CHECK(cache.lookup(built.units[0].key)->exports.empty());
    // Not part of the key: the same units with other exports are the same.
    request.units[1].exports.clear();
    CHECK(unit_keys(compiler, request) == (std::vector<std::string>{built.units[0].key,
                                                                   built.units[1].key}));
    CHECK(build_module(cache, compiler, request).outcome == Outcome::hit);
    request.units[0].exports = {"not a key!"};
    CHECK_THROWS_AS(build_module(cache, compiler, request), std::invalid_argument);
}

OPWEAVE_TEST(an_edit_compiles_only_the_changed_unit_and_the_source) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler;
    build_module(cache, compiler, request_with_units({"u0", "u1", "u2"}));
    compiler.modes.clear();
    compiler.jobs.clear();
    ModuleRequest edited = request_with_units({"u0", "u1", "u2-edited"});
    edited.source = "main edited";
    const BuiltModule built = build_module(cache, compiler, edited);
    CHECK(built.outcome == Outcome::built);
    CHECK_EQ(count(compiler.modes, "-c"), 2u);
    CHECK_EQ(count(compiler.modes, "link"), 1u);
    CHECK(built.units[0].outcome == Outcome::hit);
    CHECK(built.units[1].outcome == Outcome::hit);
    CHECK(built.units[2].outcome == Outcome::built);
    // A unit repeated in one request is compiled and linked once.
    compiler.modes.clear();
    const BuiltModule twice = build_module(cache, compiler, request_with_units({"u3", "u3"}));
    CHECK_EQ(count(compiler.modes, "-c"), 2u);
    CHECK_EQ(twice.units.size(), 1u);
}

OPWEAVE_TEST(a_unit_evicted_or_damaged_before_a_build_is_rebuilt) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler;
    const BuiltModule first = build_module(cache, compiler, request_with_units({"u0", "u1"}));
    CHECK(cache.evict(first.units[0].key));
    // Damage the other unit's object (same size, other bytes).
    const fs::path object = cache.entry_dir(first.units[1].key) / "unit.o";
    fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(object, std::ios::binary | std::ios::trunc) << "FAKE OUTPUT";
    ModuleRequest other = request_with_units({"u0", "u1"});
    other.source = "main 2";
    const BuiltModule built = build_module(cache, compiler, other);
    CHECK(built.outcome == Outcome::built);
    CHECK(built.units[0].outcome == Outcome::built);
    CHECK(built.units[1].outcome == Outcome::built);
    CHECK(std::any_of(built.events.begin(), built.events.end(), [](const CacheEvent& event) {
        return event.kind == CacheEvent::Kind::quarantined;
    }));
    CHECK_EQ(read(built.library).find("FAKE"), std::string::npos);
}

OPWEAVE_TEST(a_failing_unit_fails_the_build_and_keeps_its_source) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler;
    compiler.fail_with_source_text = "broken";
    const ModuleRequest request = request_with_units({"u0", "broken unit"});
    bool thrown = false;
    try {
        build_module(cache, compiler, request);
    } catch (const CompileError& error) {
        thrown = true;
        const std::string key = unit_key(request.units[1], compiler, request.job, "abi");
        CHECK_EQ(error.source(), cache.root() / "v2" / "failed" / (key + ".cpp"));
        CHECK_EQ(read(error.source()), std::string("broken unit"));
    }
    CHECK(thrown);
    CHECK_EQ(cache.stats().entries <= 2u, true);  // the good unit, at most; no module
    for (const Entry& entry : cache.list()) {
        CHECK(entry.kind == "unit");
    }
}

OPWEAVE_TEST(real_units_link_into_one_library_that_calls_across_them) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    const SystemCompiler compiler;
    ModuleRequest request;
    request.source =
        "int twice(int);\nint support();\n"
        "extern \"C\" __attribute__((visibility(\"default\"))) int opweave_answer() {\n"
        "    return twice(20) + support();\n"
        "}\n";
    // Both units define support(), as support code repeated in two units
    // does: the link fails, and merges them only when one piece of shared
    // code names it, defines it, and is held by every unit that defines it.
    request.units.push_back({"int support() { return 2; }\nint twice(int x) { return 2 * x; }\n",
                             "twice"});
    request.units.push_back({"int support() { return 2; }\n", "support"});
    const auto refused = [&](const char* why) {
        try {
            build_module(cache, compiler, request);
        } catch (const CompileError& error) {
            CHECK(std::string(error.what()).find("support()") != std::string::npos);
            CHECK(std::string(error.what()).find(why) != std::string::npos);
            return true;
        }
        return false;
    };
    CHECK(refused("support()"));  // no shared code: two definitions
    // Two pieces name it: which one defines each copy cannot be told.
    request.shared_code = {"int support() { return 2; }\n", "int support();\n"};
    CHECK(refused("not one piece of support code"));
    // The one piece that names it only declares it.
    request.shared_code = {"int support();\n"};
    CHECK(refused("not one piece of support code"));
    request.shared_code = {"int support() { return 2; }\n", "int supported = 1;\n"};
    const BuiltModule built = build_module(cache, compiler, request);
    CHECK_EQ(opweave_test::call_answer(built.library), 42);
}

OPWEAVE_TEST(two_different_definitions_of_a_name_never_link_at_any_optimisation_level) {
    for (const OptLevel level : {OptLevel::o0, OptLevel::o2}) {
        TempDir dir;
        ModuleCache cache(cache_options(dir));
        const SystemCompiler compiler;
        ModuleRequest request;
        request.source =
            "int support();\n"
            "extern \"C\" __attribute__((visibility(\"default\"))) int opweave_answer() {\n"
            "    return support();\n"
            "}\n";
        request.job.opt_level = level;
        // One unit holds the shared piece, the other its own, different text.
        request.units.push_back({"int support() { return 2; }\n", "first op"});
        request.units.push_back({"int support() { return 3; }\n", "second op"});
        request.shared_code = {"int support() { return 2; }\n"};
        bool thrown = false;
        try {
            build_module(cache, compiler, request);
        } catch (const CompileError& error) {
            thrown = true;
            const std::string what = error.what();
            CHECK(what.find("'support()' is defined more than once") != std::string::npos);
            CHECK(what.find("unit 1 (second op)") != std::string::npos);
        }
        CHECK(thrown);
    }
}

OPWEAVE_TEST(a_link_that_leaves_a_symbol_undefined_fails_and_names_it) {
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    const SystemCompiler compiler;
    ModuleRequest request;
    request.source =
        "int twice(int);\n"
        "extern \"C\" __attribute__((visibility(\"default\"))) int opweave_answer() {\n"
        "    return twice(20);\n"
        "}\n";
    request.units.push_back({"int nowhere_defined(int);\n"
                             "int twice(int x) { return nowhere_defined(x); }\n",
                             "twice"});
    bool thrown = false;
    try {
        build_module(cache, compiler, request);
    } catch (const CompileError& error) {
        thrown = true;
        const std::string what = error.what();
        CHECK(what.find("'nowhere_defined(int)'") != std::string::npos);
    }
    CHECK(thrown);
}

// A units build reports a prelude not built yet (its build starts) before
// its compiles when they leave a compile job free, else once they are done.
OPWEAVE_TEST(a_missing_prelude_is_reported_when_the_units_leave_a_job_free_or_after_them) {
    for (const int jobs : {1, 8}) {
        TempDir dir;
        CacheOptions options = cache_options(dir);
        options.compile_jobs = jobs;
        ModuleCache cache(options);
        FakeCompiler compiler(k_gcc_version);
        WhenPreludeMissing monitor;
        monitor.compiler = &compiler;
        ModuleRequest request = request_with_units({"u0", "u1"});
        request.prelude = PreludeRequest{std::string(k_python_prelude), "abi"};
        build_module(cache, compiler, request, &monitor);  // wanted once: not reported
        CHECK(monitor.compiles.empty());
        request.units = {{"u2", "unit u2"}, {"u3", "unit u3"}};
        compiler.modes.clear();
        build_module(cache, compiler, request, &monitor);
        // Two units take the one job: reported after the three compiles.
        CHECK_EQ(monitor.compiles.size(), 1u);
        CHECK_EQ(monitor.compiles.at(0), jobs == 1 ? 3u : 0u);
    }
}

// A source compiles with the prelude only when its includes start with the
// prelude's text: including it first is then exactly what the source does.
// The unit names of an assembled module include nothing, and compile
// without it; so does a unit that includes another header first.
OPWEAVE_TEST(only_sources_whose_includes_start_with_the_prelude_compile_with_it) {
    const std::string prelude = std::string(k_python_prelude) + "#include <vector>\n";
    TempDir dir;
    ModuleCache cache(cache_options(dir));
    FakeCompiler compiler(k_gcc_version);
    ModuleRequest request = request_with_units({prelude + "u0", "#include <a.h>\n" + prelude});
    request.prelude = PreludeRequest{prelude, "abi"};
    CHECK(build_prelude(cache, compiler, request).outcome == Outcome::built);
    const std::map<std::string, bool> expected = {
        {"names", false},
        {prelude + "#include <algorithm>\nint x;", true},
        {std::string(k_python_prelude) + "#include <algorithm>\n#include <vector>\n", false},
    };
    std::map<std::string, bool> seen_units;
    for (const auto& [source, with_prelude] : expected) {
        request.source = source;
        compiler.jobs.clear();
        compiler.sources.clear();
        build_module(cache, compiler, request);
        for (std::size_t i = 0; i < compiler.jobs.size(); ++i) {
            const CompileJob& job = compiler.jobs[i];
            const bool included =
                std::find(job.unkeyed_flags.begin(), job.unkeyed_flags.end(), "-include") !=
                job.unkeyed_flags.end();
            if (job.source.filename() == "module.cpp") {
                CHECK_EQ(included, with_prelude);
            } else if (job.source.filename() == "unit.cpp") {
                seen_units[compiler.sources[i]] = included;
            }
        }
    }
    CHECK_EQ(seen_units.size(), 2u);  // each unit compiled once, then a hit
    CHECK(seen_units[prelude + "u0"]);
    CHECK(!seen_units["#include <a.h>\n" + prelude]);
}

// opweave core: build_module (see include/opweave/module_builder.hpp).
#include "opweave/module_builder.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <future>
#include <set>

#include "builder/build_support.hpp"
#include "builder/compile_slots.hpp"
#include "builder/link_check.hpp"
#include "builder/link_merge.hpp"
#include "builder/module_key.hpp"
#include "builder/remote_tier.hpp"
#include "builder/source_paths.hpp"
#include "builder/staged_prelude.hpp"
#include "cache/file_digest.hpp"
#include "cache/header_manifest.hpp"
#include "cache/node_index.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "opweave/precompiled_header.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"

namespace opweave {

namespace {

// The objects of a link with their sources and labels (see link_merge.hpp).
std::vector<builder::LinkedObject> linked_objects(
    const std::vector<std::filesystem::path>& objects,
    const std::vector<std::pair<const std::string*, std::string>>& sources) {
    std::vector<builder::LinkedObject> linked;
    for (std::size_t i = 0; i < objects.size(); ++i) {
        linked.push_back({objects[i], sources[i].first, sources[i].second});
    }
    return linked;
}

constexpr const char* k_source_name = "module.cpp";
constexpr const char* k_staged_library = "module.so";
constexpr const char* k_staged_object = "module.o";
constexpr const char* k_depfile_name = "module.d";
constexpr const char* k_unit_source = "unit.cpp";
constexpr const char* k_unit_object = "unit.o";
constexpr const char* k_unit_depfile = "unit.d";
constexpr std::size_t k_library_hash_chars = 16;
// Times a link looks for a unit evicted or damaged since it was built.
constexpr int k_unit_attempts = 3;

// What a staged compile makes.
enum class Product { library, object };

using CompileStep = std::function<CompileResult(const CompileJob&)>;

// Compiles `staged`. Unkeyed flags may change how fast a module compiles,
// never what it compiles to, so a compile that exits with an error while
// using them is run again without them: a prelude that is damaged, or that a
// concurrent `cache clear` removed after it was found, must not fail a build.
// A genuine error in the source fails the second compile too, and that one is
// reported. A timeout or a signal is not retried (it would only double the
// wait). When it retried, staged.unkeyed_flags is left as `kept`.
CompileResult compile_with_fallback(const CompileStep& compile, CompileJob& staged,
                                    const std::vector<std::string>& kept) {
    if (staged.unkeyed_flags == kept) {
        return compile(staged);
    }
    try {
        return compile(staged);
    } catch (const CompileError& error) {
        if (error.exit_status() <= 0) {
            throw;
        }
    }
    staged.unkeyed_flags = kept;
    return compile(staged);
}

// Renames the staged library to module-<16 hex of its SHA-256>.so.
void name_library_after_content(const std::filesystem::path& staging) {
    const std::filesystem::path staged = staging / k_staged_library;
    const util::Fd fd(::open(staged.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        throw CacheError("the compiler wrote no library " + staged.string(), staged);
    }
    const std::optional<std::string> sha256 = cache::file_sha256(fd.get(), st, cache::Memo::bypass);
    if (!sha256) {
        throw CacheError("cannot read " + staged.string(), staged);
    }
    const std::filesystem::path named =
        staging / ("module-" + sha256->substr(0, k_library_hash_chars) + ".so");
    std::filesystem::rename(staged, named);
}

// The key of the prelude the module may use, if any.
std::optional<std::string> usable_prelude_key(const Compiler& compiler,
                                              const ModuleRequest& request,
                                              const CompileJob& job) {
    if (!request.prelude || !supports_prelude(compiler)) {
        return std::nullopt;
    }
    return prelude_key(compiler, job, request.prelude->header_text, request.prelude->extra);
}

// `entry` (the prelude of `key`, or nothing) as found; `monitor` is told
// when the module could have used a prelude that is not built yet (or was
// damaged), from the second time one is wanted: a prelude is tens of MB, so
// one flag set that compiles one module never gets one.
std::optional<Entry> reported_prelude(ModuleCache& cache, const std::string& key,
                                      std::optional<Entry> entry, const ModuleRequest& request,
                                      BuildMonitor* monitor) {
    if (!entry && monitor != nullptr && prelude_wanted_before(cache, key)) {
        monitor->prelude_missing(request);
    }
    return entry;
}

// The prelude the module may use: its entry, verified, or nothing.
std::optional<Entry> usable_prelude(ModuleCache& cache, const Compiler& compiler,
                                    const ModuleRequest& request, const CompileJob& job,
                                    BuildMonitor* monitor, std::vector<CacheEvent>& events) {
    const std::optional<std::string> key = usable_prelude_key(compiler, request, job);
    if (!key) {
        return std::nullopt;
    }
    return reported_prelude(cache, *key, find_prelude(cache, *key, &events), request, monitor);
}

// The verification of a prelude on a thread of its own. A precompiled
// header is tens of MB, and hashing it is a tenth of a small module's
// compile, so a build compiles with a prelude it found on disk while the
// prelude is verified, and keeps that compile only once it is (see
// Builder::library). The destructor waits for the thread.
class PreludeCheck {
public:
    // Verifies the prelude `key`, and checks the copies `staged` holds (see
    // StagedPrelude::check_copies) when given.
    PreludeCheck(ModuleCache& cache, std::string key, builder::StagedPrelude* staged)
        : m_verified(std::async(std::launch::async, [this, &cache, key = std::move(key), staged] {
              std::optional<Entry> entry = find_prelude(cache, key, &m_events);
              if (entry && staged != nullptr) {
                  staged->check_copies();
              }
              return entry;
          })) {}

    // The prelude's entry once verified, or nothing when it is damaged
    // (then quarantined) or gone; what the lookup found goes to `events`.
    std::optional<Entry> get(std::vector<CacheEvent>& events) {
        std::optional<Entry> entry = m_verified.get();
        events.insert(events.end(), m_events.begin(), m_events.end());
        return entry;
    }

private:
    std::vector<CacheEvent> m_events;  // written by the thread until get()
    std::future<std::optional<Entry>> m_verified;
};

// One compile of a build: `source` written as `names.source` in the
// staging directory, compiled to `names.output` (a library or an object),
// with the prelude when there is one.
struct StagedNames {
    const char* source;
    const char* output;
    const char* depfile;
};

struct StagedCompile {
    CompileResult result;
    std::vector<HeaderRecord> headers;
    bool used_prelude = false;  // the compile that succeeded included it
};

class Builder {
public:
    Builder(ModuleCache& cache, const Compiler& compiler, const ModuleRequest& request)
        : m_cache(cache), m_compiler(compiler), m_request(request),
          m_job(builder::absolute_dirs(request.job)),
          m_keyed(builder::keyed_job(m_job, request.covered_header_dirs)) {}

    const CompileJob& job() const { return m_job; }
    const CompileJob& keyed() const { return m_keyed; }

    std::optional<Entry> prelude(BuildMonitor* monitor, std::vector<CacheEvent>& events) const {
        return usable_prelude(m_cache, m_compiler, m_request, m_job, monitor, events);
    }

    // Compiles `source` in `staging` for the entry `key` (at `entry_dir`),
    // holding a compile slot; a failure keeps the source (see
    // rethrow_with_kept_source).
    StagedCompile compile(const std::string& key, std::string_view source,
                          const std::filesystem::path& staging,
                          const std::filesystem::path& entry_dir, StagedNames names,
                          Product product, const std::optional<builder::StagedPrelude>& prelude,
                          BuildMonitor* monitor) const {
        CompileJob staged = m_job;
        staged.source = staging / names.source;
        staged.output = staging / names.output;
        staged.depfile = staging / names.depfile;
        staged.working_dir = staging;
        staged.debug_dir = builder::debug_dir_of(m_compiler, m_cache, entry_dir);
        staged.launched_compiler = builder::launched_compiler_of(m_compiler, m_cache);
        const std::vector<std::string> kept =
            builder::source_path_flags(m_compiler, entry_dir / names.source);
        staged.unkeyed_flags = kept;
        if (prelude && starts_with_prelude(source, m_request.prelude->header_text)) {
            const std::vector<std::string> include = prelude->include_flags();
            staged.unkeyed_flags.insert(staged.unkeyed_flags.end(), include.begin(), include.end());
        }
        if (product == Product::library) {
            for (std::string& flag : builder::link_check_flags()) {
                staged.flags.push_back(std::move(flag));
            }
        }
        util::write_file_atomic(staged.source, source);
        const std::int64_t start = cache::filesystem_now_ns();
        const CompileStep step = [&](const CompileJob& run) {
            const builder::CompileSlot slot(m_cache, monitor);
            if (product == Product::object) {
                return m_compiler.compile_object(run, monitor);
            }
            CompileResult result = m_compiler.compile(run, monitor);
            builder::check_undefined_symbols(result);
            return result;
        };
        StagedCompile compiled;
        try {
            compiled.result = compile_with_fallback(step, staged, kept);
        } catch (const CompileError& error) {
            builder::rethrow_with_kept_source(m_cache, key, source, error,
                                     {staged.source, entry_dir / names.source});
        }
        compiled.headers = builder::compiled_headers(m_cache, m_request, staged, start);
        compiled.used_prelude = prelude && staged.unkeyed_flags != kept;
        if (compiled.used_prelude) {
            prelude->cite_entry(compiled.result);
            // What the precompiled header read, the source read too.
            cache::merge_headers(compiled.headers, prelude->headers());
        }
        return compiled;
    }

    // The record of an entry whose key is `keyed`.
    BuildRecord record(const char* kind, const std::string& label, const KeyedText& keyed,
                       const StagedCompile& compiled, const std::filesystem::path& staging,
                       const std::filesystem::path& entry_dir) const {
        BuildRecord record;
        record.kind = kind;
        record.label = label;
        record.environment = m_request.environment;
        record.key_material = keyed.text;
        record.command = builder::display_command(compiled.result, staging, entry_dir);
        record.compile_seconds = compiled.result.seconds;
        record.headers = compiled.headers;
        return record;
    }

    // Compiles the module's one source into a library, with the prelude
    // when there is one. A prelude found on disk is staged, and verified
    // while the source compiles with it; the compile is kept only when the
    // entry verifies and the staged files are the ones it records, else the
    // source is compiled again without it.
    StagedCompile library(const std::string& key, const std::filesystem::path& staging,
                          const std::filesystem::path& entry_dir, BuildMonitor* monitor,
                          std::vector<CacheEvent>& events) const {
        const StagedNames names = {k_source_name, k_staged_library, k_depfile_name};
        const std::optional<std::string> prelude_key =
            usable_prelude_key(m_compiler, m_request, m_job);
        const std::filesystem::path found = prelude_key ? m_cache.entry_dir(*prelude_key) : "";
        if (!prelude_key || !builder::StagedPrelude::present(found)) {
            return compile(key, m_request.source, staging, entry_dir, names, Product::library,
                           verified_prelude(staging, monitor, events), monitor);
        }
        std::optional<builder::StagedPrelude> staged = builder::StagedPrelude::stage(found, staging);
        // After staging (see StagedPrelude::stage); the compile only reads
        // the staged files while the check reads them too.
        PreludeCheck check(m_cache, *prelude_key, staged ? &*staged : nullptr);
        StagedCompile compiled = compile(key, m_request.source, staging, entry_dir, names,
                                         Product::library, staged, monitor);
        const std::optional<Entry> verified =
            reported_prelude(m_cache, *prelude_key, check.get(events), m_request, monitor);
        const bool kept = verified && staged && staged->verify(*verified);
        staged.reset();
        if (!kept) {
            return compiled.used_prelude
                       ? compile(key, m_request.source, staging, entry_dir, names,
                                 Product::library, std::nullopt, monitor)
                       : compiled;
        }
        if (compiled.used_prelude) {
            cache::merge_headers(compiled.headers, verified->headers);
        }
        return compiled;
    }

    // The prelude staged in `staging` and then verified, when there is one
    // and its staged files are the ones its entry records.
    std::optional<builder::StagedPrelude> verified_prelude(const std::filesystem::path& staging,
                                                         BuildMonitor* monitor,
                                                         std::vector<CacheEvent>& events) const {
        const std::optional<std::string> key = usable_prelude_key(m_compiler, m_request, m_job);
        std::optional<builder::StagedPrelude> staged =
            key ? builder::StagedPrelude::stage(m_cache.entry_dir(*key), staging) : std::nullopt;
        const std::optional<Entry> verified = prelude(monitor, events);
        if (!staged || !verified || !staged->verify(*verified)) {
            return std::nullopt;
        }
        return staged;
    }

    // The unit's entry, compiled (as an object) on a miss.
    CacheResult unit(const TranslationUnit& unit, const KeyedText& keyed,
                     const std::optional<builder::StagedPrelude>& prelude,
                     BuildMonitor* monitor) const {
        const std::string& key = keyed.key;
        const std::filesystem::path entry_dir = m_cache.entry_dir(key);
        const BuildFn build = [&](const std::filesystem::path& staging) {
            const StagedCompile compiled =
                compile(key, unit.source, staging, entry_dir,
                        {k_unit_source, k_unit_object, k_unit_depfile}, Product::object, prelude,
                        monitor);
            BuildRecord built = record("unit", unit.label, keyed, compiled, staging, entry_dir);
            built.exports = unit.exports;
            return built;
        };
        return m_cache.get_or_build(key, build, monitor);
    }

    // Copies the unit's object into `to`, checking it against the entry's
    // record. Returns false when the object is gone or differs (evicted, or
    // damaged since it was verified).
    static bool copy_object(const Entry& entry, const std::filesystem::path& to) {
        const std::filesystem::path from = entry.dir / k_unit_object;
        const util::Fd fd(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        const std::optional<std::string> bytes = fd ? util::read_all(fd.get()) : std::nullopt;
        if (!bytes) {
            return false;
        }
        for (const EntryFile& file : entry.files) {
            if (file.name == k_unit_object) {
                if (file.size != bytes->size() || file.sha256 != to_hex(Sha256::of(*bytes))) {
                    return false;
                }
                util::write_file_atomic(to, *bytes);
                return true;
            }
        }
        return false;
    }

    // Stages the object of unit `index` as `to`, rebuilding the unit when
    // it was evicted or damaged since it was found.
    BuiltUnit stage_unit(std::size_t index, const KeyedText& keyed, CacheResult& found,
                         const std::filesystem::path& to,
                         const std::optional<builder::StagedPrelude>& prelude,
                         BuildMonitor* monitor) const {
        const TranslationUnit& unit = m_request.units[index];
        const std::string& key = keyed.key;
        for (int attempt = 1; !copy_object(found.entry, to); ++attempt) {
            if (attempt == k_unit_attempts) {
                throw CacheError("cannot read the object of unit " + key + " in " +
                                     found.entry.dir.string(),
                                 found.entry.dir);
            }
            m_cache.quarantine(key, "its object differs from its record", k_unit_object, monitor);
            found = this->unit(unit, keyed, prelude, monitor);
        }
        return {key, unit.label, found.outcome, found.entry.compile_seconds};
    }

    // The build of a module linked from its source and units (see below).
    BuildRecord linked(const KeyedText& keyed, const std::vector<KeyedText>& unit_keys,
                       const std::filesystem::path& staging, BuildMonitor* monitor,
                       std::vector<CacheEvent>& events, std::vector<BuiltUnit>& built_units) const;

private:
    ModuleCache& m_cache;
    const Compiler& m_compiler;
    const ModuleRequest& m_request;
    CompileJob m_job;    // as compiled
    CompileJob m_keyed;  // as keyed
};

using Seconds = std::chrono::duration<double>;

std::filesystem::path unit_object(const std::filesystem::path& staging, std::size_t index) {
    return staging / ("unit-" + std::to_string(index) + ".o");
}

// The build of a module linked from its source and units: everything
// missing is compiled in parallel, then linked.
BuildRecord Builder::linked(const KeyedText& keyed, const std::vector<KeyedText>& unit_keys,
                            const std::filesystem::path& staging, BuildMonitor* monitor,
                            std::vector<CacheEvent>& events,
                            std::vector<BuiltUnit>& built_units) const {
    const auto start = std::chrono::steady_clock::now();
    const std::string& key = keyed.key;
    const std::filesystem::path entry_dir = m_cache.entry_dir(key);
    // Staged once in the module's staging directory, for every compile.
    // A prelude not built yet is reported (its build starts) now when the
    // units leave a core free, else once the compiles are done: the build
    // of a prelude would slow each of them.
    const int jobs = builder::compile_jobs(m_cache.options().compile_jobs);
    const bool report_now = m_request.units.size() < static_cast<std::size_t>(jobs);
    const std::optional<builder::StagedPrelude> usable =
        verified_prelude(staging, report_now ? monitor : nullptr, events);
    StagedCompile main;
    // Each unit's object is copied into the staging directory as soon as
    // it is found or built, so that an eviction meanwhile cannot lose it.
    std::vector<std::optional<CacheResult>> found(m_request.units.size());
    std::vector<std::optional<BuiltUnit>> staged(m_request.units.size());
    std::vector<util::Task> tasks;
    tasks.emplace_back([&](BuildMonitor* task_monitor) {
        // A source that includes nothing (the unit names of a module
        // assembled by opweave) does not start with the prelude, and
        // compiles without it.
        main = compile(key, m_request.source, staging, entry_dir,
                       {k_source_name, k_staged_object, k_depfile_name}, Product::object, usable,
                       task_monitor);
    });
    std::set<std::string> seen;
    for (std::size_t i = 0; i < m_request.units.size(); ++i) {
        if (seen.insert(unit_keys[i].key).second) {
            tasks.emplace_back([&, i](BuildMonitor* task_monitor) {
                found[i] = unit(m_request.units[i], unit_keys[i], usable, task_monitor);
                staged[i] = stage_unit(i, unit_keys[i], *found[i], unit_object(staging, i),
                                       usable, task_monitor);
            });
        }
    }
    util::run_parallel(tasks, jobs, monitor);
    if (!usable && !report_now) {
        prelude(monitor, events);
    }

    std::vector<std::filesystem::path> objects = {staging / k_staged_object};
    // Per object: its source and what it is (for link_merge.hpp).
    std::vector<std::pair<const std::string*, std::string>> staged_sources = {
        {&m_request.source, "the module's own translation unit"}};
    for (std::size_t i = 0; i < m_request.units.size(); ++i) {
        if (staged[i]) {  // else a duplicate of an earlier unit
            objects.push_back(unit_object(staging, i));
            staged_sources.emplace_back(&m_request.units[i].source,
                                        "unit " + std::to_string(i) + " (" +
                                            m_request.units[i].label + ")");
            built_units.push_back(*staged[i]);
            events.insert(events.end(), found[i]->events.begin(), found[i]->events.end());
            cache::merge_headers(main.headers, found[i]->entry.headers);
        }
    }
    // Run in the staging directory with relative names, as every compile
    // is: the linker writes the output's name as given into the library
    // (its base version in .gnu.version_d), which must not be the staging
    // path, or the library's content would name a directory that is gone
    // and differ with each build.
    CompileJob link = m_job;
    link.output = staging / k_staged_library;
    link.working_dir = staging;
    for (std::string& flag : builder::link_check_flags()) {
        link.flags.push_back(std::move(flag));
    }
    CompileResult linking;
    try {
        const builder::CompileSlot slot(m_cache, monitor);
        try {
            linking = m_compiler.link(link, objects, monitor);
        } catch (const CompileError& error) {
            // Support code repeated in several units defines its names in
            // each: the copies are merged, when every one is that piece's.
            if (!builder::weaken_shared_duplicates(error.diagnostics(),
                                                 linked_objects(objects, staged_sources),
                                                 m_request.shared_code,
                                                 m_compiler.identity().path, monitor)) {
                throw;
            }
            linking = m_compiler.link(link, objects, monitor);
        }
        builder::check_undefined_symbols(linking);
    } catch (const CompileError& error) {
        builder::rethrow_with_kept_source(m_cache, key, m_request.source, error,
                                 {staging / k_source_name, entry_dir / k_source_name});
    }
    for (const std::filesystem::path& object : objects) {
        std::filesystem::remove(object);
    }
    name_library_after_content(staging);
    main.result.commands.insert(main.result.commands.end(), linking.commands.begin(),
                                linking.commands.end());
    BuildRecord built = record("module", m_request.label, keyed, main, staging, entry_dir);
    built.compile_seconds = Seconds(std::chrono::steady_clock::now() - start).count();
    return built;
}

}  // namespace

BuiltModule build_module(ModuleCache& cache, const Compiler& compiler,
                         const ModuleRequest& request, BuildMonitor* monitor,
                         RemoteStorage* remote) {
    cache::check_node_keys(request.exports, "ModuleRequest::exports");
    for (const TranslationUnit& unit : request.units) {
        cache::check_node_keys(unit.exports, "TranslationUnit::exports");
    }
    const Builder builder(cache, compiler, request);
    const std::vector<KeyedText> unit_keys =
        builder::unit_keys_of(builder.keyed(), compiler, request);
    const KeyedText keyed = builder::request_key_of(builder.keyed(), compiler, request, unit_keys);
    const std::string& key = keyed.key;
    const std::filesystem::path entry_dir = cache.entry_dir(key);
    std::vector<CacheEvent> build_events;
    std::vector<BuiltUnit> built_units;
    bool fetched = false;
    const BuildFn build = [&](const std::filesystem::path& staging) {
        if (remote != nullptr) {
            std::optional<BuildRecord> record =
                builder::fetch_remote(*remote, key, staging, entry_dir, build_events);
            if (record) {
                fetched = true;
                return std::move(*record);
            }
        }
        if (!request.units.empty()) {
            BuildRecord linked =
                builder.linked(keyed, unit_keys, staging, monitor, build_events, built_units);
            linked.exports = request.exports;
            return linked;
        }
        const StagedCompile compiled =
            builder.library(key, staging, entry_dir, monitor, build_events);
        name_library_after_content(staging);
        BuildRecord record =
            builder.record("module", request.label, keyed, compiled, staging, entry_dir);
        record.exports = request.exports;
        return record;
    };
    CacheResult result = cache.get_or_build(key, build, monitor);
    BuiltModule built;
    built.key = key;
    built.dir = result.entry.dir;
    built.library = result.entry.file_ending(".so");
    built.source = result.entry.dir / k_source_name;
    built.outcome = result.outcome;
    built.compile_seconds = result.entry.compile_seconds;
    built.events = std::move(result.events);
    built.events.insert(built.events.end(), build_events.begin(), build_events.end());
    built.units = std::move(built_units);
    built.headers = std::move(result.entry.headers);
    if (fetched) {  // as a hit: nothing was compiled here
        built.outcome = Outcome::hit;
        built.events.push_back({CacheEvent::Kind::fetched, built.dir, {}});
    } else if (remote != nullptr && result.outcome == Outcome::built) {
        builder::store_remote(*remote, cache, key, built.events);
    }
    if (built.library.empty()) {
        throw CacheError("cache entry " + built.dir.string() + " holds no library", built.dir);
    }
    return built;
}

BuiltModule build_module(ModuleCache& cache, std::string_view source, const Compiler& compiler,
                         const CompileJob& job, std::string_view extra) {
    ModuleRequest request;
    request.source = std::string(source);
    request.job = job;
    request.extra = std::string(extra);
    return build_module(cache, compiler, request);
}

}  // namespace opweave

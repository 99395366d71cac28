// opweave core: build_module (see include/opweave/module_builder.hpp).
#include "opweave/module_builder.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include "cache/build_support.hpp"
#include "cache/file_digest.hpp"
#include "cache/header_manifest.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "opweave/precompiled_header.hpp"
#include "util/c_literal.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace {

constexpr const char* k_source_name = "module.cpp";
constexpr const char* k_staged_library = "module.so";
constexpr const char* k_depfile_name = "module.d";
constexpr std::size_t k_library_hash_chars = 16;

// Compiles `staged`. Unkeyed flags may change how fast a module compiles,
// never what it compiles to, so a compile that exits with an error while
// using them is run again without them: a prelude that is damaged, or that a
// concurrent `cache clear` removed after it was found, must not fail a build.
// A genuine error in the source fails the second compile too, and that one is
// reported. A timeout or a signal is not retried (it would only double the
// wait). When it retried, staged.unkeyed_flags is left as `kept`.
CompileResult compile_with_fallback(const Compiler& compiler, CompileJob& staged,
                                    const std::vector<std::string>& kept, BuildMonitor* monitor) {
    if (staged.unkeyed_flags == kept) {
        return compiler.compile(staged, monitor);
    }
    try {
        return compiler.compile(staged, monitor);
    } catch (const CompileError& error) {
        if (error.exit_status() <= 0) {
            throw;
        }
    }
    staged.unkeyed_flags = kept;
    return compiler.compile(staged, monitor);
}

// Diagnostics, debug information and sanitizer reports name the source
// where the entry keeps it, not the staging directory, which is gone after
// the build (the text attributes its lines to OPWEAVE_MODULE_SOURCE; see
// module_source.hpp). The flag changes no code, only the paths recorded.
std::vector<std::string> source_path_flags(const std::filesystem::path& entry_dir) {
    const std::string path = (entry_dir / k_source_name).string();
    return {"-DOPWEAVE_MODULE_SOURCE=\"" + util::c_string_body(path) + "\""};
}

std::string describe_list(std::string_view name, const std::vector<std::string>& items) {
    std::string text(name);
    text += ':';
    for (const std::string& item : items) {
        text += ' ';
        text += item;
    }
    return text + "\n";
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

// The prelude the module may use: its entry, or nothing (and `monitor` is
// told when it could have used one that is not built yet).
std::optional<Entry> usable_prelude(ModuleCache& cache, const Compiler& compiler,
                                    const ModuleRequest& request, const CompileJob& job,
                                    BuildMonitor* monitor, std::vector<CacheEvent>& events) {
    if (!request.prelude || !supports_prelude(compiler)) {
        return std::nullopt;
    }
    const std::string key =
        prelude_key(compiler, job, request.prelude->header_text, request.prelude->extra);
    std::optional<Entry> entry = find_prelude(cache, key, &events);
    if (!entry && monitor != nullptr) {
        monitor->prelude_missing(request);
    }
    return entry;
}

// Keeps the source of a failed compile where the user can open it, and
// points the error's message and diagnostics at that copy.
// `cited` are the paths the diagnostics may name the source by.
[[noreturn]] void rethrow_with_kept_source(ModuleCache& cache, const std::string& key,
                                           std::string_view source, const CompileError& error,
                                           const std::vector<std::filesystem::path>& cited) {
    const std::filesystem::path kept = cache.keep_failed_source(key, source);
    std::string what = error.what();
    std::string diagnostics = error.diagnostics();
    for (const std::filesystem::path& path : cited) {
        what = cache::replace_all(what, path.string(), kept.string());
        diagnostics = cache::replace_all(diagnostics, path.string(), kept.string());
    }
    throw CompileError(what, error.command(), diagnostics, kept, error.exit_status());
}

// module_key_material and module_key of a job whose directories are
// already absolute (build_module normalises the job once).
std::string material_of(const Compiler& compiler, const CompileJob& keyed,
                        std::string_view extra) {
    std::string text = "layout: " + std::to_string(k_module_layout_version) + "\n";
    text += compiler.identity().key_material();
    text += describe_list("flags", keyed.flags);
    text += describe_list("include_dirs", keyed.include_dirs);
    text += describe_list("lib_dirs", keyed.lib_dirs);
    text += describe_list("libraries", keyed.libraries);
    text += "opt_level: " + std::to_string(static_cast<int>(keyed.opt_level)) + "\n";
    text += "debug_info: " + std::to_string(static_cast<int>(keyed.debug_info)) + "\n";
    text += "extra: ";
    text += extra;
    text += "\n";
    return text;
}

std::string key_of(std::string_view source, const Compiler& compiler, const CompileJob& keyed,
                   std::string_view extra) {
    KeyHasher hasher;
    hasher.add("layout", std::to_string(k_module_layout_version));
    hasher.add("compiler", compiler.identity().key_material());
    hasher.add(keyed.flags);
    hasher.add(keyed.include_dirs);
    hasher.add(keyed.lib_dirs);
    hasher.add(keyed.libraries);
    hasher.add(static_cast<std::int64_t>(keyed.opt_level));
    hasher.add(static_cast<std::int64_t>(keyed.debug_info));
    hasher.add("extra", extra);
    hasher.add("source", source);
    return hasher.hex_digest();
}

}  // namespace

std::string module_key_material(const Compiler& compiler, const CompileJob& job,
                                std::string_view extra) {
    return material_of(compiler, cache::absolute_dirs(job), extra);
}

std::string module_key(std::string_view source, const Compiler& compiler, const CompileJob& job,
                       std::string_view extra) {
    return key_of(source, compiler, cache::absolute_dirs(job), extra);
}

BuiltModule build_module(ModuleCache& cache, const Compiler& compiler,
                         const ModuleRequest& request, BuildMonitor* monitor) {
    const CompileJob job = cache::absolute_dirs(request.job);
    const std::string key = key_of(request.source, compiler, job, request.extra);
    const std::filesystem::path entry_dir = cache.entry_dir(key);
    std::vector<CacheEvent> prelude_events;
    const BuildFn build = [&](const std::filesystem::path& staging) {
        CompileJob staged = job;
        staged.source = staging / k_source_name;
        staged.output = staging / k_staged_library;
        staged.depfile = staging / k_depfile_name;
        const std::optional<Entry> prelude =
            usable_prelude(cache, compiler, request, job, monitor, prelude_events);
        const std::vector<std::string> kept = source_path_flags(entry_dir);
        staged.unkeyed_flags = kept;
        if (prelude) {
            const std::vector<std::string> include = prelude_include_flags(prelude->dir);
            staged.unkeyed_flags.insert(staged.unkeyed_flags.end(), include.begin(), include.end());
        }
        util::write_file_atomic(staged.source, request.source);
        const std::int64_t start = cache::filesystem_now_ns();
        CompileResult result;
        try {
            result = compile_with_fallback(compiler, staged, kept, monitor);
        } catch (const CompileError& error) {
            rethrow_with_kept_source(cache, key, request.source, error,
                                     {staged.source, entry_dir / k_source_name});
        }
        BuildRecord record;
        record.headers = cache::compiled_headers(cache, request, staged, start);
        if (prelude && staged.unkeyed_flags != kept) {
            // What the precompiled header read, the module read too.
            cache::merge_headers(record.headers, prelude->headers);
        }
        name_library_after_content(staging);
        record.kind = "module";
        record.label = request.label;
        record.key_material = material_of(compiler, job, request.extra);
        record.command = cache::display_command(result, staging, entry_dir);
        record.compile_seconds = result.seconds;
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
    built.events.insert(built.events.end(), prelude_events.begin(), prelude_events.end());
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

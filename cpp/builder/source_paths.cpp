// opweave core (internal): where a compile's records point (see
// source_paths.hpp).
#include "builder/source_paths.hpp"

#include <cctype>

#include "builder/build_support.hpp"
#include "util/c_literal.hpp"

namespace opweave::builder {

namespace {

// Under a launcher, what stands for the cache root in the name a compile
// records for its staging directory (see debug_dir_of).
constexpr const char* k_launcher_root_name = "/opweave";

// `text` with the bare file name `name` (as a compile in its working
// directory names its source) replaced by `to` where it starts a word.
std::string replace_bare_name(std::string text, const std::string& name, const std::string& to) {
    for (std::size_t at = text.find(name); at != std::string::npos;
         at = text.find(name, at + 1)) {
        const char before = at == 0 ? ' ' : text[at - 1];
        const bool in_word = std::isalnum(static_cast<unsigned char>(before)) != 0 ||
                             std::string_view("_./-").find(before) != std::string_view::npos;
        if (!in_word) {
            text.replace(at, name.size(), to);
            at += to.size() - 1;
        }
    }
    return text;
}

}  // namespace

// Diagnostics, debug information and sanitizer reports name the source
// where the entry keeps it, not the staging directory, which is gone after
// the build (the text attributes its lines to OPWEAVE_MODULE_SOURCE; see
// module_source.hpp). The flag changes no code, only the paths recorded.
//
// Not through a launcher: the path names the cache root, and a launcher
// hashes it, so no other root (no other machine) would ever hit. Such a
// compile runs in its staging directory with relative names, its lines are
// attributed to the relative name, which its debug_dir (debug_dir_of)
// completes, and its diagnostics are pointed at the kept source
// (rethrow_with_kept_source).
std::vector<std::string> source_path_flags(const Compiler& compiler,
                                           const std::filesystem::path& source) {
    if (!compiler.identity().launcher.empty()) {
        return {};
    }
    const std::string path = source.string();
    return {"-DOPWEAVE_MODULE_SOURCE=\"" + util::c_string_body(path) + "\""};
}

// The name a compile in a staging directory of the entry at `entry_dir`
// records for that directory (CompileJob::debug_dir), so that debug
// information and sanitizer reports name a directory that exists after the
// build. Without a launcher it is the entry directory itself. A launcher
// hashes the name, so there it must not contain the cache root, or no other
// root (no other machine) would hit: it is the entry's path below the
// root, under k_launcher_root_name, e.g.
// /opweave/v3/entries/ab/ab12.../module.cpp for the source; replacing
// /opweave with the cache root that holds the entry gives the file. The
// key in it is the same in every root.
std::filesystem::path debug_dir_of(const Compiler& compiler, const ModuleCache& cache,
                                   const std::filesystem::path& entry_dir) {
    if (compiler.identity().launcher.empty()) {
        return entry_dir;
    }
    return std::filesystem::path(k_launcher_root_name) / entry_dir.lexically_relative(cache.root());
}

// The program a compile under the launcher runs in place of the compiler,
// when the compiler needs one to record its debug_dir (GCC under sccache:
// see CompilerIdentity::launcher_wrapper); else empty.
std::filesystem::path launched_compiler_of(const Compiler& compiler, const ModuleCache& cache) {
    const CompilerIdentity& identity = compiler.identity();
    if (identity.launcher.empty() || identity.launcher_wrapper.empty()) {
        return {};
    }
    return builder::launcher_wrapper_file(cache, identity.launcher_wrapper);
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
        what = replace_all(what, path.string(), kept.string());
        diagnostics = replace_all(diagnostics, path.string(), kept.string());
    }
    const std::string bare = cited.front().filename().string();
    what = replace_bare_name(what, bare, kept.string());
    diagnostics = replace_bare_name(diagnostics, bare, kept.string());
    throw CompileError(what, error.command(), diagnostics, kept, error.exit_status());
}

}  // namespace opweave::builder

// opweave core (internal): where a compile's records point. Diagnostics,
// debug information and sanitizer reports must name files that exist after
// a build, in the entry, not in its staging directory, which is gone; and
// a name that a launcher hashes must not contain the cache root, or no
// other root (no other machine) would hit.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_cache.hpp"

namespace opweave::builder {

// The flags that make a compile attribute its lines to `source`, the path
// where the entry keeps it; none under a launcher (see the .cpp).
std::vector<std::string> source_path_flags(const Compiler& compiler,
                                           const std::filesystem::path& source);

// The name a compile in a staging directory of the entry at `entry_dir`
// records for that directory (CompileJob::debug_dir).
std::filesystem::path debug_dir_of(const Compiler& compiler, const ModuleCache& cache,
                                   const std::filesystem::path& entry_dir);

// The program a compile under the launcher runs in place of the compiler,
// when the compiler needs one to record its debug_dir; else empty.
std::filesystem::path launched_compiler_of(const Compiler& compiler, const ModuleCache& cache);

// Throws `error` again with the source of the failed compile kept where the
// user can open it, and its message and diagnostics pointed at that copy;
// `cited` are the paths the diagnostics may name the source by.
[[noreturn]] void rethrow_with_kept_source(ModuleCache& cache, const std::string& key,
                                           std::string_view source, const CompileError& error,
                                           const std::vector<std::filesystem::path>& cited);

}  // namespace opweave::builder

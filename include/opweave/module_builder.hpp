// opweave core: compile one source text into the module cache.
//
// Ties ModuleCache and Compiler together: the key covers the source and
// everything that changes the binary (compiler identity, flags, directories,
// libraries, optimisation), and a miss compiles `module.cpp` into
// `module.so` inside a staging directory, then publishes it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "opweave/compiler.hpp"
#include "opweave/module_cache.hpp"

namespace opweave {

// Version of what build_module puts in an entry (file names, layout). It
// enters every key, so changing it can never make an old entry match.
inline constexpr int k_module_layout_version = 1;

struct BuiltModule {
    std::filesystem::path dir;      // the cache entry
    std::filesystem::path library;  // <dir>/module.so
    std::filesystem::path source;   // <dir>/module.cpp
    Outcome outcome;
};

// The text the key of `source` compiled by `compiler` with `job` is hashed
// from, minus the source itself (shown by `opweave cache list`). `extra` is
// caller-defined key material (for example the Python ABI). Neither the key
// nor its material covers `job.unkeyed_flags`: a module compiled with or
// without them is the same module.
std::string module_key_material(const Compiler& compiler, const CompileJob& job,
                                std::string_view extra);

// The cache key (64 hex characters) of that module.
std::string module_key(std::string_view source, const Compiler& compiler, const CompileJob& job,
                       std::string_view extra);

// Returns the module for `source`, compiling it on a miss. `job` supplies
// flags, directories, libraries and optimisation; its source and output
// paths are ignored. A compile that fails (non-zero exit) while using
// `job.unkeyed_flags` is run once more without them, and only that second
// compile's failure is reported. On a compile failure the source is kept at
// `<cache root>/v1/failed/<key>.cpp` and the CompileError names that path.
BuiltModule build_module(ModuleCache& cache, std::string_view source, const Compiler& compiler,
                         const CompileJob& job, std::string_view extra);

}  // namespace opweave

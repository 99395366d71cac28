// opweave core (internal): what building a module and building a prelude
// share: normalised jobs, the command as the published entry reads it, and
// the headers a compile read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "opweave/compiler.hpp"
#include "opweave/hash.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"

namespace opweave::builder {

// `job` with relative include and library directories made absolute: the
// compiler resolves them against the working directory, so the key must
// say which directory they mean.
CompileJob absolute_dirs(const CompileJob& job);

// Whether a key covers the job's library directories and libraries (a
// module's does; a prelude's does not: they only reach the link).
enum class KeyedLinks { no, yes };

// Adds to `hasher` the fields of a key that say how a compile runs, in
// this order: the compiler's identity, then the keyed job's flags, include
// directories, (with KeyedLinks::yes) library directories and libraries,
// optimisation and debug settings. Module, unit and prelude keys share it.
void add_compile_fields(KeyHasher& hasher, const Compiler& compiler, const CompileJob& keyed,
                        KeyedLinks links);

// A hasher for the key of an entry of `kind` ("module": modules and units;
// "prelude"), its first field already added: `layout: <kind>
// <k_module_layout_version>`, the version every key recipe answers to.
KeyHasher entry_key_hasher(std::string_view kind);

// The commands a compile ran, one per line, with the staging directory's
// path replaced by the entry's, as it reads once published; words are
// quoted for a POSIX shell, so a line can be run again as it is.
std::string display_command(const CompileResult& result, const std::filesystem::path& staging,
                            const std::filesystem::path& entry);

// The headers the compile of `staged` (with staged.depfile set) read, from
// its dependency file, which is then removed: all but the source, the files
// of the cache (preludes are verified as entries) and those below the
// request's covered directories.
std::vector<HeaderRecord> compiled_headers(const ModuleCache& cache, const ModuleRequest& request,
                                           const CompileJob& staged,
                                           std::int64_t compile_start_ns);

// The file of `cache` that holds `script`, a CompilerIdentity::launcher_wrapper:
// <root>/v2/tools/cxx-<16 hex of its SHA-256>, written (atomically, mode
// 0700, never through a symlink) unless it is already there as a file of
// this user with exactly that mode and content. Throws CacheError if it
// cannot be written.
std::filesystem::path launcher_wrapper_file(const ModuleCache& cache, const std::string& script);

// The words joined by single spaces.
std::string join_words(const std::vector<std::string>& words);

// `text` with every occurrence of `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to);

}  // namespace opweave::builder

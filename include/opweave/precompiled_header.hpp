// opweave core: precompiled preludes, cache entries that make modules compile
// faster.
//
// A prelude is a header holding the lines generated modules' includes start
// with (Python.h, <new>, then their standard and NumPy headers: exactly a
// prefix of each source compiled with it; see prelude_text_of and
// starts_with_prelude below). Compiled once into a GCC precompiled header, it
// turns the ~0.2 s a module spends parsing those headers into a load of a few
// milliseconds. A prelude is a module cache entry of its own:
//
//   <entry>/opweave_prelude.h          the header text
//   <entry>/opweave_prelude.h.gch.zst  the precompiled header, compressed
//
// verified like every entry (sizes and hashes), with the headers it read
// recorded and checked. GCC's precompiled header of Python's and NumPy's
// headers is about 21 MB (most of it <cmath>, which Python.h brings in C++)
// and compresses 7 times with Zstandard, which decompresses it in about
// 10 ms: so an entry keeps it compressed, and each compile that uses it
// decompresses it into its private staging directory. Where libzstd.so.1
// cannot be loaded, the entry keeps `opweave_prelude.h.gch` as it is. It is keyed
// on the header text, the compiler identity, everything in the job that
// changes how the header compiles (flags, include dirs, optimisation, debug
// info) and caller material (the Python and NumPy ABIs). A module uses it
// through CompileJob::unkeyed_flags (`-include <entry>/opweave_prelude.h`),
// which no module key covers: including first the very lines the module
// starts with changes how fast it compiles, not what it compiles to. GCC
// uses `<header>.gch` beside an -include'd header when it was built with
// compatible flags, and otherwise reads the header text, with the same
// result. build_module() decides when to use one (module_builder.hpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opweave/compiler.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"

namespace opweave {

// The header's file name in a prelude entry, and its precompiled form's.
inline constexpr const char* k_prelude_header_name = "opweave_prelude.h";
inline constexpr const char* k_prelude_gch_name = "opweave_prelude.h.gch";
inline constexpr const char* k_prelude_zst_name = "opweave_prelude.h.gch.zst";

// Whether modules compiled by `compiler` can use a prelude: true for GCC (its
// `--version` text names the Free Software Foundation and not clang) run
// without a launcher. False for clang, which needs `-include-pch` and rejects
// a precompiled header whose directory was renamed, and with a launcher
// (ccache does not cache a compile that uses a precompiled header unless it
// is configured to).
bool supports_prelude(const Compiler& compiler);

// The key of a prelude (below) and the readable text of everything it
// covers (shown by `opweave cache list`), in one pass.
KeyedText prelude_key_text(const Compiler& compiler, const CompileJob& job,
                           std::string_view header_text, std::string_view extra);

// The cache key (64 hex characters) of the prelude `header_text` compiled for
// modules compiled by `compiler` with `job` and keyed with `extra`. The job's
// source, output, unkeyed flags, library dirs and libraries do not enter it.
std::string prelude_key(const Compiler& compiler, const CompileJob& job,
                        std::string_view header_text, std::string_view extra);

// The unkeyed flags that make a compile include the prelude in `entry_dir`:
// {"-include", "<entry_dir>/opweave_prelude.h"}.
std::vector<std::string> prelude_include_flags(const std::filesystem::path& entry_dir);

// The verified entry of prelude `key` if it is published, found without
// waiting: a damaged one is quarantined (unless another process holds its
// lock, rebuilding it) and reported missing; what was found goes to
// `events` if given. Throws std::invalid_argument for a malformed key.
std::optional<Entry> find_prelude(ModuleCache& cache, std::string_view key,
                                  std::vector<CacheEvent>* events = nullptr);

// Whether prelude `key`, not found now, was wanted before by a module of
// this cache (ModuleCache::wanted_before), so that building it pays off:
// build_module asks its monitor to build a prelude from the second module
// that could use it. True when the want cannot be noted.
bool prelude_wanted_before(ModuleCache& cache, std::string_view key);

// The prelude of `sources` (see cpp/builder/prelude_text.cpp): the longest
// run of lines that the include block of every one of them starts with,
// from the Python prelude (k_python_prelude) on, holding the standard C and
// C++ headers and NumPy's; empty when none includes the Python prelude.
// Sources that do not include it are left out (they compile without one).
std::string prelude_text_of(const std::vector<std::string_view>& sources);

// Whether `source`'s include block starts with `prelude` (whole lines), so
// that compiling it with the prelude compiles the same program: the builder
// uses a prelude only for such a source.
bool starts_with_prelude(std::string_view source, std::string_view prelude);

// Returns the prelude entry of `request.prelude` for `request.job`, building
// it on a miss with the same protocol as build_module (the key's lock, a
// staging directory, one rename). Throws std::invalid_argument if the
// request has no prelude, CompileError if the header does not compile,
// LockTimeout, Interrupted or CacheError like ModuleCache::get_or_build.
CacheResult build_prelude(ModuleCache& cache, const Compiler& compiler,
                          const ModuleRequest& request, BuildMonitor* monitor = nullptr);

}  // namespace opweave

// opweave core: compile one source text into the module cache.
//
// This is the one owner of the policy for compiled modules: what the key
// covers, which headers are tracked, when a precompiled prelude is used, and
// how the entry is laid out and verified. Callers (the Python linkers, C++
// tools) describe the module as plain data (ModuleRequest) and call
// build_module(); it returns a verified shared library to load.
//
// The key covers the source and everything that changes the binary
// (compiler identity, flags, directories made absolute, libraries,
// optimisation, caller material such as the Python ABI). What the key cannot
// cover, the headers the compile reads, is recorded from the compiler's
// dependency output and checked on every lookup (see module_cache.hpp).
//
// An entry holds `module.cpp`, the library `module-<16 hex>.so` named after
// its own content, and meta.json. The library's name changes whenever its
// content does: a process that loaded an older build of the same key (before
// a header changed) would otherwise get that old library back from dlopen(),
// which identifies libraries by path.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opweave/build_monitor.hpp"
#include "opweave/compiler.hpp"
#include "opweave/hash.hpp"
#include "opweave/module_cache.hpp"
#include "opweave/remote_storage.hpp"

namespace opweave {

// The one version that every key recipe answers to: the first field of
// every module, unit and prelude key (entry_key_hasher), and a part of the
// environment fingerprint, which names the graph index's records and marks
// exported entries. Bump it once for any change of what a key covers or how
// (a recipe, a field's encoding), or of what an entry holds (its files, how
// they are named): every key then changes, so no old entry can match, and no
// graph index record leads to one. The generated module's own layout
// (k_graph_layout_version) is in its text, so in its key already. Old
// entries stay where they are until the LRU bound or `prune` removes them;
// only a change of the cache's directories bumps ModuleCache::k_format_version
// (a new vN directory: the sweep removes the older ones whole).
inline constexpr int k_module_layout_version = 3;

// A precompiled header that a module may be compiled with (see
// precompiled_header.hpp).
struct PreludeRequest {
    // The includes the source starts with anyway, in the same order, so that
    // `-include` of them changes how fast it compiles, not what it compiles to.
    std::string header_text;
    // Key material of what those headers depend on (the Python and NumPy ABIs).
    std::string extra;
};

// A translation unit compiled on its own and linked into a module: a cache
// entry of its own (kind "unit": unit.cpp, unit.o, meta.json) under its own
// key and lock, so that modules that share a unit compile it once.
struct TranslationUnit {
    std::string source;
    std::string label;  // shown by listings and logs
    // Keys of what the unit holds (each must pass ModuleCache::is_key):
    // recorded in the unit's entry when it is built and indexed, so that
    // ModuleCache::find_export finds the unit by any of them. Not part of
    // its key.
    std::vector<std::string> exports{};
};

// Everything build_module needs to know about one module.
struct ModuleRequest {
    // The module's source. With units, it is compiled to an object and
    // linked with theirs.
    std::string source;
    // More translation units, compiled with the same job, extra and prelude
    // (see TranslationUnit). The link fails on a symbol left undefined but
    // Python's, and on a name defined in more than one of them unless every
    // copy comes from the same piece of `shared_code`.
    std::vector<TranslationUnit> units;
    // With units: the pieces of code (support code) that several of them may
    // hold. A name defined in more than one object is merged at the link
    // (every copy but the first made weak) only when exactly one piece names
    // it, that piece defines it, and every object that defines it holds that
    // piece: then every copy is that piece's (cpp/builder/link_merge.hpp). Not
    // part of the key: it changes what links, not what is linked.
    std::vector<std::string> shared_code;
    // Flags, directories, libraries and optimisation. Its source, output,
    // depfile and unkeyed flags are set by build_module.
    CompileJob job;
    // Caller-defined key material (the Python ABI, the ops' code versions).
    std::string extra;
    // What the module is, e.g. the op names; shown by listings and logs.
    std::string label;
    // Recorded in the entries it builds (BuildRecord::environment).
    std::string environment;
    // Headers below these directories are covered by `extra` and are not
    // tracked (Python's and NumPy's).
    std::vector<std::string> covered_header_dirs;
    // The prelude the source may be compiled with, if any.
    std::optional<PreludeRequest> prelude;
    // The node keys whose functions the module exports (each must pass
    // ModuleCache::is_key, else build_module throws std::invalid_argument):
    // recorded in the entry it builds (BuildRecord::exports), so that
    // ModuleCache::find_export finds it. Not part of the key: the source
    // already spells them.
    std::vector<std::string> exports{};
};

// What became of one unit while a module was built.
struct BuiltUnit {
    std::string key;
    std::string label;
    Outcome outcome = Outcome::hit;
    double compile_seconds = 0.0;  // of the unit's own compile
};

struct BuiltModule {
    std::string key;
    std::filesystem::path dir;      // the cache entry
    std::filesystem::path library;  // <dir>/module-<16 hex>.so
    std::filesystem::path source;   // <dir>/module.cpp
    Outcome outcome = Outcome::hit;
    // Seconds the entry's build took: spent now when built, saved on a hit.
    double compile_seconds = 0.0;
    // What was found wrong on disk (and done about it) on the way.
    std::vector<CacheEvent> events;
    // When the module was built here from units: each unit, in request
    // order (duplicates once). Empty on a hit.
    std::vector<BuiltUnit> units;
    // The headers the entry was compiled with, as recorded (headers_changed).
    std::vector<HeaderRecord> headers;
};

// The key of a module of `source` compiled by `compiler` with `job`, and
// its text. `extra` is caller-defined key material (for example the Python
// ABI). Neither covers `job.unkeyed_flags` or `job.depfile`: a module
// compiled with or without them is the same module.
KeyedText module_key_text(std::string_view source, const Compiler& compiler,
                          const CompileJob& job, std::string_view extra);

// The cache key (64 hex characters) of that module.
std::string module_key(std::string_view source, const Compiler& compiler, const CompileJob& job,
                       std::string_view extra);

// The key build_module(cache, compiler, request) files the module under:
// the key of the request's source (and, with units, of its units' keys),
// with its job's covered header directories keyed by `extra` rather than by
// path.
std::string module_key(const Compiler& compiler, const ModuleRequest& request);

// The cache key of `unit` compiled for a module with `job` and `extra`.
std::string unit_key(const TranslationUnit& unit, const Compiler& compiler,
                     const CompileJob& job, std::string_view extra);

// A VersionMemo (compiler.hpp) that keeps compiler versions as records of
// `cache` (kind "compilers"), each named by the compiler file's path,
// device, inode, size and modification and change times, so that a
// compiler upgraded, rebuilt or replaced is asked again; a record that is
// not a version (empty, over 64 KiB, or holding a NUL) is not used. `cache`
// must outlive the memo.
VersionMemo compiler_version_records(ModuleCache& cache);

// The keys build_module(cache, compiler, request) files the request's units
// under, in request order.
std::vector<std::string> unit_keys(const Compiler& compiler, const ModuleRequest& request);

// Returns the module for `request`, verified, compiling it on a miss, with
// the prelude when it is built (and, if a compile with the prelude fails,
// once more without it; when it is not built, `monitor` is told). On a
// compile failure the source is kept at `<cache root>/v2/failed/<key>.cpp`
// and the CompileError names that path.
// Throws LockTimeout, Interrupted (polling `monitor`) and CacheError like
// ModuleCache::get_or_build, and std::invalid_argument for an export that is
// not a key.
//
// With units, a miss compiles the source and every unit not in the cache in
// parallel (threads, each compiler run holding one of the cache's
// machine-wide compile slots: CacheOptions::compile_jobs), then links them.
// A unit found in the cache is not compiled again; one evicted or damaged
// before the link is rebuilt. The module's entry records the headers of its
// units, so that a changed header rebuilds the module and that unit.
//
// With a `remote` storage (remote_storage.hpp), a miss first asks it for the
// entry, under the key's lock: one that verifies is published and returned
// as a hit (with a `fetched` event), and nothing is compiled. A module this
// call built is put there after it is published.
BuiltModule build_module(ModuleCache& cache, const Compiler& compiler,
                         const ModuleRequest& request, BuildMonitor* monitor = nullptr,
                         RemoteStorage* remote = nullptr);

// build_module for a request of just `source`, `job` and `extra`.
BuiltModule build_module(ModuleCache& cache, std::string_view source, const Compiler& compiler,
                         const CompileJob& job, std::string_view extra);

}  // namespace opweave

// opweave core: precompiled preludes (see include/opweave/precompiled_header.hpp).
//
// Why the key leaves out library dirs and libraries: they only reach the
// link, which a header never has, so modules that differ only in what they
// link share one prelude.
//
// Races:
//  - find_prelude takes no lock. An entry is published whole and verified
//    before it is returned; a damaged one is quarantined (by the cache,
//    under the key's lock) and reported missing.
//  - A prelude removed (cache clear, prune, quarantine) after find_prelude
//    returned it makes that one compile fail on the missing -include;
//    build_module then compiles without it.
#include "opweave/precompiled_header.hpp"

#include <cstdint>
#include <stdexcept>

#include "builder/build_support.hpp"
#include "builder/compile_slots.hpp"
#include "builder/prelude_copies.hpp"
#include "cache/header_manifest.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "util/fs.hpp"
#include "util/zstd.hpp"

namespace opweave {

namespace {

constexpr const char* k_depfile_name = "opweave_prelude.d";
// Zstandard's default level: 7 times smaller, about 30 ms for 21 MB here,
// on the prelude's background thread.
constexpr int k_zstd_level = 3;

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

// "Python.h numpy/arrayobject.h": the headers a prelude's text includes.
std::string included_names(std::string_view text) {
    std::vector<std::string> names;
    std::size_t at = 0;
    while ((at = text.find("#include", at)) != std::string_view::npos) {
        const std::size_t open = text.find_first_of("<\"", at);
        const std::size_t close = open == std::string_view::npos
                                      ? open
                                      : text.find_first_of(">\"", open + 1);
        if (close == std::string_view::npos) {
            break;
        }
        names.emplace_back(text.substr(open + 1, close - open - 1));
        at = close;
    }
    return builder::join_words(names);
}

// Replaces the precompiled header `gch` (in a staging directory of the
// cache's tmp/) with its Zstandard frame at `zst` (see
// precompiled_header.hpp); leaves it as it is without libzstd. The process
// keeps the header as its decompressed copy of that frame
// (prelude_copies.hpp) and shares it as the prelude `key`'s
// (unpacked_preludes.hpp): its next compile with the prelude, often the
// next edit of the graph that wanted it, and other processes' compiles do
// not decompress it.
void compress_in_place(const std::filesystem::path& gch, const std::filesystem::path& zst,
                       const std::string& key) {
    const std::optional<std::string> bytes = util::read_file(gch);
    if (!bytes) {
        throw CacheError("cannot read the precompiled header " + gch.string(), gch);
    }
    const std::optional<std::string> frame = util::zstd_compress(*bytes, k_zstd_level);
    if (!frame) {
        return;
    }
    util::write_file_atomic(zst, *frame);
    builder::PreludeCopies::get().keep(gch.parent_path().parent_path(), key,
                                     to_hex(Sha256::of(*frame)), *bytes);
    std::filesystem::remove(gch);
}

}  // namespace

bool supports_prelude(const Compiler& compiler) {
    const CompilerIdentity& identity = compiler.identity();
    return identity.launcher.empty() && contains(identity.version, "Free Software Foundation") &&
           !contains(identity.version, "clang");
}

KeyedText prelude_key_text(const Compiler& compiler, const CompileJob& job,
                           std::string_view header_text, std::string_view extra) {
    const CompileJob keyed = builder::absolute_dirs(job);
    KeyHasher hasher = builder::entry_key_hasher("prelude");
    builder::add_compile_fields(hasher, compiler, keyed, builder::KeyedLinks::no);
    hasher.add("extra", extra);
    hasher.add("header", header_text);
    return hasher.finish();
}

std::string prelude_key(const Compiler& compiler, const CompileJob& job,
                        std::string_view header_text, std::string_view extra) {
    return prelude_key_text(compiler, job, header_text, extra).key;
}

std::vector<std::string> prelude_include_flags(const std::filesystem::path& entry_dir) {
    return {"-include", (entry_dir / k_prelude_header_name).string()};
}

std::optional<Entry> find_prelude(ModuleCache& cache, std::string_view key,
                                  std::vector<CacheEvent>* events) {
    // A prelude is optional: never wait for one (holding a module's lock).
    std::optional<Entry> entry = cache.lookup(key, events, nullptr, Blocking::no);
    if (entry && entry->file_ending(k_prelude_gch_name).empty() &&
        entry->file_ending(k_prelude_zst_name).empty()) {
        return std::nullopt;  // not a prelude
    }
    return entry;
}

bool prelude_wanted_before(ModuleCache& cache, std::string_view key) {
    try {
        return cache.wanted_before(key);
    } catch (const CacheError&) {
        return true;  // no note: built as if wanted before, as the module compiles anyway
    }
}

CacheResult build_prelude(ModuleCache& cache, const Compiler& compiler,
                          const ModuleRequest& request, BuildMonitor* monitor) {
    if (!request.prelude) {
        throw std::invalid_argument("build_prelude: the request names no prelude");
    }
    const CompileJob job = builder::absolute_dirs(request.job);
    const std::string& header_text = request.prelude->header_text;
    const std::string& extra = request.prelude->extra;
    const KeyedText keyed = prelude_key_text(compiler, job, header_text, extra);
    const std::string& key = keyed.key;
    prelude_wanted_before(cache, key);  // a damaged one is then rebuilt at once
    const std::filesystem::path entry = cache.entry_dir(key);
    const BuildFn build = [&](const std::filesystem::path& staging) {
        CompileJob staged = job;
        staged.unkeyed_flags.clear();
        staged.lib_dirs.clear();
        staged.libraries.clear();
        staged.source = staging / k_prelude_header_name;
        staged.output = staging / k_prelude_gch_name;
        staged.depfile = staging / k_depfile_name;
        util::write_file_atomic(staged.source, header_text);
        const std::int64_t start = cache::filesystem_now_ns();
        CompileResult result;
        {
            const builder::CompileSlot slot(cache, monitor);
            result = compiler.compile_header(staged, monitor);
        }
        std::error_code missing;
        if (!std::filesystem::is_regular_file(staged.output, missing)) {
            throw CacheError("the compiler wrote no precompiled header " + staged.output.string(),
                             staged.output);
        }
        compress_in_place(staged.output, staging / k_prelude_zst_name, key);
        BuildRecord record;
        record.kind = "prelude";
        record.label = "precompiled " + included_names(header_text);
        record.environment = request.environment;
        record.headers = builder::compiled_headers(cache, request, staged, start);
        record.key_material = keyed.text;
        record.command = builder::display_command(result, staging, entry);
        record.compile_seconds = result.seconds;
        return record;
    };
    return cache.get_or_build(key, build, monitor);
}

}  // namespace opweave

// opweave core: precompiled preludes (see include/opweave/precompiled_header.hpp).
//
// Why the key leaves out library dirs and libraries: they only reach the
// link, which a header never has, so modules that differ only in what they
// link share one prelude.
//
// Why the .gch size is recorded: GCC reads an empty or foreign .gch as "not
// valid" and parses the header instead, but a truncated one is a fatal error.
// build_module retries such a compile without the prelude, so a damaged entry
// never fails a build; the size check makes it cheap to notice and replace.
//
// Races:
//  - find_prelude takes no lock. An entry is published whole, so its files
//    agree unless it was damaged after publishing, or is being deleted: then
//    the entry is evicted and reported missing (evicting an entry that is
//    already gone does nothing).
//  - A prelude removed (cache clear, prune) after find_prelude returned it
//    makes that one compile fail on the missing -include; build_module then
//    compiles without it.
#include "opweave/precompiled_header.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <exception>

#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace {

constexpr const char* k_gch_suffix = ".gch";
constexpr const char* k_size_file_name = "opweave_prelude.gch_size";

std::filesystem::path gch_path(const std::filesystem::path& dir) {
    return dir / (std::string(k_prelude_header_name) + k_gch_suffix);
}

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

std::string join_words(const std::vector<std::string>& words) {
    std::string text;
    for (const std::string& word : words) {
        text += (text.empty() ? "" : " ") + word;
    }
    return text;
}

// Replaces every occurrence of `from` in `text` with `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); !from.empty() && at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

// The size of the regular file at `path`, or nothing if there is none.
std::optional<std::uint64_t> regular_file_size(const std::filesystem::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(st.st_size);
}

// The size the entry's .gch had when it was built, or nothing if the record
// cannot be read or is not a number.
std::optional<std::uint64_t> recorded_size(const std::filesystem::path& dir) {
    const std::optional<std::string> text = util::read_file(dir / k_size_file_name);
    if (!text || text->empty()) {
        return std::nullopt;
    }
    try {
        std::size_t used = 0;
        const unsigned long long value = std::stoull(*text, &used);
        return used == text->size() ? std::optional<std::uint64_t>(value) : std::nullopt;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

bool supports_prelude(const Compiler& compiler) {
    const CompilerIdentity& identity = compiler.identity();
    return identity.launcher.empty() && contains(identity.version, "Free Software Foundation") &&
           !contains(identity.version, "clang");
}

std::string prelude_key_material(const Compiler& compiler, const CompileJob& job,
                                 std::string_view header_text, std::string_view extra) {
    std::string text = "prelude layout: " + std::to_string(k_prelude_layout_version) + "\n";
    text += compiler.identity().key_material();
    text += "flags: " + join_words(job.flags) + "\n";
    text += "include_dirs: " + join_words(job.include_dirs) + "\n";
    text += "opt_level: " + std::to_string(static_cast<int>(job.opt_level)) + "\n";
    text += "debug_info: " + std::to_string(static_cast<int>(job.debug_info)) + "\n";
    text += "extra: ";
    text += extra;
    text += "\nheader:\n";
    text += header_text;
    return text;
}

std::string prelude_key(const Compiler& compiler, const CompileJob& job,
                        std::string_view header_text, std::string_view extra) {
    KeyHasher hasher;
    hasher.add("layout", "prelude-" + std::to_string(k_prelude_layout_version));
    hasher.add("compiler", compiler.identity().key_material());
    hasher.add(job.flags);
    hasher.add(job.include_dirs);
    hasher.add(static_cast<std::int64_t>(job.opt_level));
    hasher.add(static_cast<std::int64_t>(job.debug_info));
    hasher.add("extra", extra);
    hasher.add("header", header_text);
    return hasher.hex_digest();
}

std::vector<std::string> prelude_include_flags(const std::filesystem::path& entry_dir) {
    return {"-include", (entry_dir / k_prelude_header_name).string()};
}

std::optional<std::filesystem::path> find_prelude(ModuleCache& cache, std::string_view key) {
    const std::optional<std::filesystem::path> dir = cache.lookup(key);
    if (!dir) {
        return std::nullopt;
    }
    const std::optional<std::uint64_t> expected = recorded_size(*dir);
    if (!expected || regular_file_size(gch_path(*dir)) != expected ||
        !regular_file_size(*dir / k_prelude_header_name)) {
        try {
            cache.evict(key);
        } catch (const CacheError&) {
            // A read-only cache: the entry stays, and is simply not used.
        }
        return std::nullopt;
    }
    return dir;
}

CacheResult build_prelude(ModuleCache& cache, const Compiler& compiler, const CompileJob& job,
                          std::string_view header_text, std::string_view extra) {
    const std::string key = prelude_key(compiler, job, header_text, extra);
    const std::string entry = cache.entry_dir(key).string();
    const BuildFn build = [&](const std::filesystem::path& staging) {
        CompileJob staged = job;
        staged.unkeyed_flags.clear();
        staged.lib_dirs.clear();
        staged.libraries.clear();
        staged.source = staging / k_prelude_header_name;
        staged.output = gch_path(staging);
        util::write_file_atomic(staged.source, header_text);
        const CompileResult result = compiler.compile_header(staged);
        const std::optional<std::uint64_t> size = regular_file_size(staged.output);
        if (!size) {
            throw CacheError("the compiler wrote no precompiled header " + staged.output.string(),
                             staged.output);
        }
        util::write_file_atomic(staging / k_size_file_name, std::to_string(*size));
        std::string command;
        for (const auto& words : result.commands) {
            command += (command.empty() ? "" : "\n") + join_words(words);
        }
        command = replace_all(command, staging.string(), entry);
        return BuildRecord{prelude_key_material(compiler, job, header_text, extra), command,
                           result.seconds};
    };
    return cache.get_or_build(key, build);
}

}  // namespace opweave

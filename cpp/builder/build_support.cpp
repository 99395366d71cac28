// opweave core (internal): shared build helpers (see build_support.hpp).
#include "builder/build_support.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "cache/header_manifest.hpp"
#include "cache/layout.hpp"
#include "cache/module_cache_impl.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "util/fs.hpp"

namespace opweave::builder {

namespace {

void make_absolute(std::vector<std::string>& dirs) {
    for (std::string& dir : dirs) {
        if (!dir.empty() && dir.front() != '/') {
            dir = std::filesystem::absolute(dir).lexically_normal().string();
        }
    }
}

// `word` as one word of a POSIX shell command line: as is when it holds only
// characters the shell leaves alone, else in single quotes.
std::string shell_quoted(const std::string& word) {
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-+=/.,:@%") == std::string::npos;
    if (plain) {
        return word;
    }
    std::string quoted = "'";
    for (char c : word) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

constexpr std::size_t k_tool_hash_chars = 16;
constexpr unsigned k_tool_mode = 0700;

// Whether `name` in `dir` is a regular file (not a symlink) of this user
// with exactly k_tool_mode and `content`.
bool holds(const util::Dir& dir, const std::string& name, const std::string& content) {
    const std::optional<struct stat> st = dir.stat(name);
    if (!st || !S_ISREG(st->st_mode) || st->st_uid != ::geteuid() ||
        (st->st_mode & 07777) != k_tool_mode) {
        return false;
    }
    return dir.read_file(name, content.size() + 1) == content;
}

}  // namespace

// Named after its content, so that processes with different compilers
// sharing a cache each have their own, and a script never changes under a
// compile that runs it.
std::filesystem::path launcher_wrapper_file(const ModuleCache& cache, const std::string& script) {
    const std::string name =
        "cxx-" + to_hex(Sha256::of(script)).substr(0, k_tool_hash_chars);
    const cache::Places places = cache::open_places(cache.root(), nullptr, cache::ancestor_owners(cache.options()));
    const util::Dir tools = cache::require_layout_dir(places.version, cache::k_tools_dir, nullptr);
    if (!holds(tools, name, script) && !tools.write_file(name, script, k_tool_mode)) {
        const std::filesystem::path path = tools.path_of(name);
        throw CacheError("cannot write " + path.string() + ": " + std::strerror(errno), path);
    }
    return tools.path_of(name);
}

KeyHasher entry_key_hasher(std::string_view kind) {
    KeyHasher hasher;
    hasher.add("layout", std::string(kind) + " " + std::to_string(k_module_layout_version));
    return hasher;
}

void add_compile_fields(KeyHasher& hasher, const Compiler& compiler, const CompileJob& keyed,
                        KeyedLinks links) {
    hasher.add("compiler", compiler.identity().key_material());
    hasher.add("flags", keyed.flags);
    hasher.add("include_dirs", keyed.include_dirs);
    if (links == KeyedLinks::yes) {
        hasher.add("lib_dirs", keyed.lib_dirs);
        hasher.add("libraries", keyed.libraries);
    }
    hasher.add("opt_level", static_cast<std::int64_t>(keyed.opt_level));
    hasher.add("debug_info", static_cast<std::int64_t>(keyed.debug_info));
}

std::string join_words(const std::vector<std::string>& words) {
    std::string text;
    for (const std::string& word : words) {
        text += (text.empty() ? "" : " ") + word;
    }
    return text;
}

CompileJob absolute_dirs(const CompileJob& job) {
    CompileJob copy = job;
    make_absolute(copy.include_dirs);
    make_absolute(copy.lib_dirs);
    return copy;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); !from.empty() && at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

std::string display_command(const CompileResult& result, const std::filesystem::path& staging,
                            const std::filesystem::path& entry) {
    std::string command;
    if (!result.working_dir.empty()) {
        command = "cd " + shell_quoted(result.working_dir.string());
    }
    for (const auto& words : result.commands) {
        std::string line;
        for (const std::string& word : words) {
            line += (line.empty() ? "" : " ") + shell_quoted(word);
        }
        command += (command.empty() ? "" : "\n") + line;
    }
    return replace_all(command, staging.string(), entry.string());
}

std::vector<HeaderRecord> compiled_headers(const ModuleCache& cache, const ModuleRequest& request,
                                           const CompileJob& staged,
                                           std::int64_t compile_start_ns) {
    const std::optional<std::string> text = util::read_file(staged.depfile);
    util::remove_tree(staged.depfile);
    if (!text) {
        return {};
    }
    cache::HeaderFilter filter;
    filter.working_dir =
        staged.working_dir.empty() ? std::filesystem::current_path() : staged.working_dir;
    filter.source = staged.source;
    filter.skip_dirs.push_back(cache.root());
    for (const std::string& dir : request.covered_header_dirs) {
        filter.skip_dirs.push_back(std::filesystem::absolute(dir));
    }
    return cache::record_headers(cache::parse_depfile(*text), filter, compile_start_ns);
}

}  // namespace opweave::builder

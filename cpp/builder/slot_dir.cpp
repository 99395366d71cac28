// opweave core (internal): the slot directory (see slot_dir.hpp).
#include "builder/slot_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "cache/layout.hpp"
#include "cache/module_cache_impl.hpp"
#include "opweave/errors.hpp"
#include "util/fs.hpp"

namespace opweave::builder {

namespace {

constexpr const char* k_runtime_name = "opweave";

bool trusted(const util::Dir& dir) {
    const std::optional<struct stat> st = dir.stat_self();
    return st && util::check_trust(*st, true) == util::Trust::ok;
}

// `path` opened through trusted ancestors, or nothing.
std::optional<util::Dir> open_path(const std::filesystem::path& path,
                                   const util::Owners& ancestors) {
    std::string problem;
    return util::open_through_trusted(path, ancestors, problem);
}

util::Dir open_configured(const std::filesystem::path& path, const util::Owners& ancestors) {
    util::make_dirs(path);
    std::string problem;
    std::optional<util::Dir> dir = util::open_through_trusted(path, ancestors, problem);
    if (!dir) {
        throw CacheError("cannot use the compile slot directory " + path.string() + ": " +
                             problem + "; use a private directory of yours "
                             "(OPWEAVE_FLAGS=compile__slot_dir=...)",
                         path);
    }
    const std::optional<struct stat> st = dir->stat_self();
    const util::Trust trust = st ? util::check_trust(*st, true) : util::Trust::wrong_type;
    if (trust != util::Trust::ok) {
        throw CacheError("compile slot directory " + path.string() + " " +
                             (st ? util::describe_trust(trust, *st) : "cannot be examined") +
                             ", so other users could block or take its slots; use a private "
                             "directory of yours (OPWEAVE_FLAGS=compile__slot_dir=...)",
                         path);
    }
    return std::move(*dir);
}

// $XDG_RUNTIME_DIR/opweave. The runtime directory is the user's own (made
// by the login manager), so what is wrong inside it may be repaired, as in
// the cache.
std::optional<util::Dir> open_in_runtime_dir(const std::string& runtime,
                                             const util::Owners& ancestors) {
    if (runtime.empty() || runtime.front() != '/') {
        return std::nullopt;  // the XDG spec says to ignore a relative path
    }
    const std::optional<util::Dir> parent = open_path(runtime, ancestors);
    if (!parent || !trusted(*parent)) {
        return std::nullopt;
    }
    try {
        return cache::open_layout_dir(*parent, k_runtime_name, cache::Create::yes, nullptr);
    } catch (const CacheError&) {
        return std::nullopt;
    }
}

// <tmp>/opweave-<uid>. Other users can make names in /tmp: take only a
// directory that this user made, nobody else can write to, and that was
// not reached through a symlink; repair nothing there.
std::optional<util::Dir> open_in_tmp(const std::filesystem::path& tmp,
                                     const util::Owners& ancestors) {
    const std::optional<util::Dir> parent = open_path(tmp, ancestors);
    if (!parent) {
        return std::nullopt;
    }
    const std::string name = "opweave-" + std::to_string(::geteuid());
    if (!parent->make_dir(name, 0700) && errno != EEXIST) {
        return std::nullopt;
    }
    std::optional<util::Dir> dir = parent->open_dir(name);
    if (!dir || !trusted(*dir)) {
        return std::nullopt;
    }
    return dir;
}

}  // namespace

SlotDirChoice slot_dir_choice(const CacheOptions& options, const std::filesystem::path& root) {
    SlotDirChoice choice;
    choice.configured = options.slot_dir;
    if (const char* runtime = std::getenv("XDG_RUNTIME_DIR")) {
        choice.runtime_dir = runtime;
    }
    choice.cache_root = root;
    choice.ancestors = cache::ancestor_owners(options);
    return choice;
}

util::Dir open_slot_dir(const SlotDirChoice& choice) {
    if (!choice.configured.empty()) {
        return open_configured(choice.configured, choice.ancestors);
    }
    if (std::optional<util::Dir> dir = open_in_runtime_dir(choice.runtime_dir, choice.ancestors)) {
        return std::move(*dir);
    }
    if (std::optional<util::Dir> dir = open_in_tmp(choice.tmp, choice.ancestors)) {
        return std::move(*dir);
    }
    const cache::Places places = cache::open_places(choice.cache_root, nullptr, choice.ancestors);
    return cache::require_layout_dir(places.version, cache::k_locks_dir, nullptr);
}

}  // namespace opweave::builder

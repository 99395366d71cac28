// opweave core (internal): the cache's directories (see layout.hpp).
#include "cache/layout.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "opweave/errors.hpp"
#include "util/fs.hpp"

namespace opweave::cache {

namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::filesystem::path& path) {
    throw CacheError(what + " " + path.string() + ": " + std::strerror(errno), path);
}

[[noreturn]] void throw_foreign(const std::filesystem::path& path, const struct stat& st) {
    throw CacheError("cache directory " + path.string() + " " +
                         util::describe_trust(util::Trust::foreign_owner, st) +
                         ", so opweave cannot trust what it holds; remove it (as its owner or "
                         "as root), or use another cache directory (OPWEAVE_FLAGS=compiledir=...)",
                     path);
}

void report(std::vector<CacheEvent>* events, const std::filesystem::path& path,
            std::string problem) {
    if (events != nullptr) {
        events->push_back({CacheEvent::Kind::repaired, path, std::move(problem)});
    }
}

}  // namespace

std::string version_dir_name() { return "v" + std::to_string(ModuleCache::k_format_version); }

util::Owners ancestor_owners(const CacheOptions& options) {
    const util::Owners owners = util::Owners().with(0);
    return options.shared_owner ? owners.with(*options.shared_owner) : owners;
}

util::Dir open_trusted_root(const std::filesystem::path& root, const util::Owners& owners) {
    std::string problem;
    std::optional<util::Dir> dir = util::open_through_trusted(root, owners, problem);
    if (dir) {
        return std::move(*dir);
    }
    if (!util::Dir::open(root)) {
        throw_errno("cannot open cache directory", root);
    }
    throw CacheError("cannot trust the cache directory " + root.string() + ": " + problem +
                         ", so another user could put their own files in its place (as ssh's "
                         "StrictModes refuses); make every directory above the cache writable "
                         "only by you or root (chmod go-w, or chmod +t for a shared one like "
                         "/tmp), name a trusted owner with OPWEAVE_FLAGS=cache__shared_owner=<user>, "
                         "or use another cache directory (OPWEAVE_FLAGS=compiledir=...)",
                     root);
}

util::Dir open_root(const std::filesystem::path& root, const util::Owners& ancestors) {
    util::make_dirs(root);
    util::Dir dir = open_trusted_root(root, ancestors);
    const auto st = dir.stat_self();
    if (!st) {
        throw_errno("cannot access cache directory", root);
    }
    switch (util::check_trust(*st, true)) {
    case util::Trust::ok:
        return dir;
    case util::Trust::foreign_owner:
        throw CacheError("cache directory " + root.string() + " " +
                             util::describe_trust(util::Trust::foreign_owner, *st) +
                             "; use a directory of your own (OPWEAVE_FLAGS=compiledir=...)",
                         root);
    case util::Trust::writable_by_others:
        throw CacheError("cache directory " + root.string() +
                             " is writable by other users (mode " + util::octal_mode(st->st_mode) +
                             "), so they could plant code that opweave would load; fix it with "
                             "`chmod go-w " + root.string() +
                             "`, or use another directory (OPWEAVE_FLAGS=compiledir=...)",
                         root);
    case util::Trust::wrong_type:
        break;
    }
    throw CacheError("cache path " + root.string() + " is not a directory", root);
}

std::optional<util::Dir> open_layout_dir(const util::Dir& parent, std::string_view name,
                                         Create create, std::vector<CacheEvent>* events) {
    const std::filesystem::path path = parent.path_of(name);
    for (int attempt = 0; attempt < 3; ++attempt) {
        std::optional<struct stat> st = parent.stat(name);
        if (!st) {
            if (errno != ENOENT) {
                throw_errno("cannot access", path);
            }
            if (create == Create::no) {
                return std::nullopt;
            }
            if (!parent.make_dir(name, 0700) && errno != EEXIST) {
                throw_errno("cannot create directory", path);
            }
            continue;  // made (or made by another process): check it like any other
        }
        const util::Trust trust = util::check_trust(*st, true);
        if (trust == util::Trust::foreign_owner) {
            throw_foreign(path, *st);
        }
        if (trust == util::Trust::wrong_type) {
            // Unlinking a symlink or a file removes that name only.
            const std::string what = util::describe_trust(trust, *st);
            if (::unlinkat(parent.fd(), std::string(name).c_str(), 0) != 0 && errno != ENOENT) {
                throw_errno("cannot remove", path);
            }
            report(events, path, what + "; removed it and made a private directory");
            continue;
        }
        std::optional<util::Dir> dir = parent.open_dir(name);
        if (!dir) {
            if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) {
                continue;  // replaced meanwhile: look again
            }
            throw_errno("cannot open", path);
        }
        const auto opened = dir->stat_self();
        if (!opened || opened->st_ino != st->st_ino || opened->st_dev != st->st_dev) {
            continue;
        }
        if (trust == util::Trust::writable_by_others) {
            if (!dir->set_mode(0700)) {
                throw_errno("cannot make private", path);
            }
            report(events, path,
                   util::describe_trust(trust, *st) + "; made it private (mode 0700)");
        }
        return dir;
    }
    throw CacheError("cache directory " + path.string() + " keeps changing under opweave", path);
}

util::Dir require_layout_dir(const util::Dir& parent, std::string_view name,
                             std::vector<CacheEvent>* events) {
    return std::move(*open_layout_dir(parent, name, Create::yes, events));
}

}  // namespace opweave::cache

// opweave core (internal): shared decompressed preludes (see
// unpacked_preludes.hpp).
#include "cache/unpacked_preludes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <utility>
#include <vector>

#include "cache/file_digest.hpp"
#include "opweave/hash.hpp"
#include "cache/layout.hpp"
#include "cache/module_cache_impl.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"

namespace opweave::cache {

namespace {

constexpr const char* k_suffix = ".gch";
// A link left under its temporary name by a process killed while sharing.
constexpr double k_temporary_grace_seconds = 60.0;

// The names of the copies of the prelude `key`'s frame `frame_sha256`
// start with this.
std::string unpacked_prefix(std::string_view key, std::string_view frame_sha256) {
    return std::string(key) + "." + std::string(frame_sha256) + ".";
}

// The prelude key of the shared copy `name`, if it is named as one.
std::optional<std::string> key_of(const std::string& name) {
    const std::size_t dot = name.find('.');
    const std::size_t suffix = name.size() - std::string_view(k_suffix).size();
    if (dot == std::string::npos || name.size() <= std::string_view(k_suffix).size() ||
        name.compare(suffix, std::string::npos, k_suffix) != 0 || dot >= suffix) {
        return std::nullopt;
    }
    std::string key = name.substr(0, dot);
    return ModuleCache::is_key(key) ? std::optional<std::string>(std::move(key)) : std::nullopt;
}

std::optional<util::Dir> unpacked_dir(const std::filesystem::path& version, Create create) {
    const std::optional<util::Dir> version_dir = util::Dir::open(version);
    return version_dir ? open_layout_dir(*version_dir, k_unpacked_dir, create, nullptr)
                       : std::nullopt;
}

}  // namespace

std::optional<UnpackedCopy> find_unpacked(const std::filesystem::path& version,
                                          std::string_view key,
                                          std::string_view frame_sha256) noexcept {
    try {
        const std::optional<util::Dir> dir = unpacked_dir(version, Create::no);
        const std::string prefix = unpacked_prefix(key, frame_sha256);
        for (const std::string& name : dir ? dir->list() : std::vector<std::string>()) {
            const std::size_t digest_end = name.size() - std::string_view(k_suffix).size();
            if (name.size() != prefix.size() + 64 + std::string_view(k_suffix).size() ||
                name.compare(0, prefix.size(), prefix) != 0 ||
                name.compare(digest_end, std::string::npos, k_suffix) != 0) {
                continue;
            }
            const std::optional<struct stat> st = dir->stat(name);
            if (st && util::check_trust(*st, false) == util::Trust::ok) {
                return UnpackedCopy{dir->path_of(name), name.substr(prefix.size(), 64)};
            }
        }
    } catch (...) {
        // An unusable directory: decompress instead.
    }
    return std::nullopt;
}

std::optional<UnpackedCopy> share_unpacked(const std::filesystem::path& version,
                                           std::string_view key, std::string_view frame_sha256,
                                           std::string_view content) noexcept {
    try {
        const std::optional<util::Dir> dir = unpacked_dir(version, Create::yes);
        if (!dir) {
            return std::nullopt;
        }
        UnpackedCopy copy;
        copy.sha256 = to_hex(Sha256::of(content));
        const std::string name = unpacked_prefix(key, frame_sha256) + copy.sha256 + k_suffix;
        // Written under a temporary name, then renamed: a reader finds the
        // whole file or none.
        if (!dir->write_file(name, content, 0600, util::Sync::no)) {
            return std::nullopt;
        }
        copy.path = dir->path_of(name);
        return copy;
    } catch (...) {
        return std::nullopt;  // the process keeps a copy of its own
    }
}

bool has_sha256(const std::filesystem::path& path, const std::string& sha256) {
    const util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return false;
    }
    return file_sha256(fd.get(), st, Memo::machine) == sha256;
}

std::size_t sweep_unpacked(const util::Dir& version, const util::Dir& entries) noexcept {
    std::size_t removed = 0;
    try {
        const std::optional<util::Dir> dir = open_layout_dir(version, k_unpacked_dir, Create::no,
                                                             nullptr);
        if (!dir) {
            return 0;
        }
        const double now = util::now_seconds();
        std::map<std::string, std::pair<std::string, double>> newest;  // by key: name, mtime
        for (const std::string& name : dir->list()) {
            const std::optional<struct stat> st = dir->stat(name);
            const std::optional<std::string> key = key_of(name);
            const double mtime = st ? static_cast<double>(ns_of(st->st_mtim)) * 1e-9 : now;
            const bool temporary = !name.empty() && name[0] == '.';
            if (temporary ? now - mtime < k_temporary_grace_seconds : !key) {
                continue;  // another process's link, about to be renamed; or not ours
            }
            const std::optional<util::Dir> shard = key ? entries.open_dir(shard_name(*key))
                                                       : std::nullopt;
            if (!key || !shard || !shard->stat(*key)) {
                removed += dir->remove(name) ? 1 : 0;  // its prelude is gone
                continue;
            }
            auto [kept, added] = newest.try_emplace(*key, name, mtime);
            if (!added) {
                const bool newer = mtime > kept->second.second;
                removed += dir->remove(newer ? kept->second.first : name) ? 1 : 0;
                if (newer) {
                    kept->second = {name, mtime};
                }
            }
        }
    } catch (...) {
        // Best effort: the next sweep tries again.
    }
    return removed;
}

}  // namespace opweave::cache

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

// A file left under its temporary name by a process killed while writing it.
constexpr double k_temporary_grace_seconds = 60.0;
constexpr std::size_t k_digest_size = 64;  // a SHA-256 in hex

// What a copy's name says: `<key>.<frame>.<digest>.gch`.
struct CopyName {
    std::string key;
    std::string frame;   // the SHA-256 of the frame it is the decompression of
    std::string digest;  // its own SHA-256
};

std::string name_of(const CopyName& copy) {
    return copy.key + "." + copy.frame + "." + copy.digest + ".gch";
}

// What `name` says, if it is named as a copy.
std::optional<CopyName> parse(const std::string& name) {
    const std::size_t first = name.find('.');
    constexpr std::size_t k_tail = 1 + k_digest_size + 1 + k_digest_size + 4;  // .f.d.gch
    if (first == std::string::npos || name.size() != first + k_tail ||
        name.compare(name.size() - 4, 4, ".gch") != 0 || name[first + 1 + k_digest_size] != '.') {
        return std::nullopt;
    }
    CopyName copy{name.substr(0, first), name.substr(first + 1, k_digest_size),
                  name.substr(first + 2 + k_digest_size, k_digest_size)};
    return ModuleCache::is_key(copy.key) ? std::optional<CopyName>(std::move(copy))
                                         : std::nullopt;
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
        for (const std::string& name : dir ? dir->list() : std::vector<std::string>()) {
            std::optional<CopyName> copy = parse(name);
            if (!copy || copy->key != key || copy->frame != frame_sha256) {
                continue;
            }
            const std::optional<struct stat> st = dir->stat(name);
            if (st && util::check_trust(*st, false) == util::Trust::ok) {
                return UnpackedCopy{dir->path_of(name), std::move(copy->digest)};
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
        const std::string digest = to_hex(Sha256::of(content));
        const std::string name =
            name_of({std::string(key), std::string(frame_sha256), digest});
        // Written under a temporary name, then renamed: a reader finds the
        // whole file or none.
        if (!dir->write_file(name, content, 0600, util::Sync::no)) {
            return std::nullopt;
        }
        return UnpackedCopy{dir->path_of(name), digest};
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
            const std::optional<CopyName> copy = parse(name);
            const double mtime = st ? static_cast<double>(ns_of(st->st_mtim)) * 1e-9 : now;
            const bool temporary = !name.empty() && name[0] == '.';
            if (temporary ? now - mtime < k_temporary_grace_seconds : !copy) {
                continue;  // another process's write, about to be renamed; or not ours
            }
            const std::optional<util::Dir> shard = copy ? entries.open_dir(shard_name(copy->key))
                                                        : std::nullopt;
            if (!shard || !shard->stat(copy->key)) {
                removed += dir->remove(name) ? 1 : 0;  // its prelude is gone, or left by a kill
                continue;
            }
            auto [kept, added] = newest.try_emplace(copy->key, name, mtime);
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

// opweave core: records, small pieces of derived state kept beside the
// entries (see ModuleCache::read_record in opweave/module_cache.hpp).
//
// Concurrency: no lock. A writer publishes a record by renaming a private
// temporary file over its name (Dir::write_file), so a reader sees a whole
// record, old or new; the last writer wins. A reader that finds a damaged
// record removes it only if the name still holds the file it read (a record
// renamed into place meanwhile is left alone).
#include "cache/record_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "cache/layout.hpp"
#include "cache/module_cache_impl.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "opweave/module_cache.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace cache {

namespace {

constexpr std::string_view k_record_magic = "OPWEAVE-RECORD 1 ";
// The magic, a SHA-256 in hex and a newline.
constexpr std::size_t k_record_header_bytes = k_record_magic.size() + 64 + 1;
// A temporary file this old was left by a killed writer.
constexpr double k_temporary_grace_seconds = 3600.0;
constexpr double k_digest_lifetime_seconds = 30 * 86400.0;

void check_record_name(std::string_view kind, std::string_view name) {
    const bool good_kind = !kind.empty() && kind.size() <= 16 &&
                           std::all_of(kind.begin(), kind.end(),
                                       [](char c) { return c >= 'a' && c <= 'z'; });
    if (!good_kind) {
        throw std::invalid_argument("invalid record kind '" + std::string(kind.substr(0, 40)) +
                                    "': expected 1 to 16 characters of [a-z]");
    }
    if (!ModuleCache::is_key(name)) {
        throw std::invalid_argument("invalid record name '" + std::string(name.substr(0, 140)) +
                                    "': expected 8 to 128 characters of [0-9A-Za-z_-]");
    }
}

std::string sealed(std::string_view data) {
    std::string out;
    out.reserve(k_record_header_bytes + data.size());
    out.append(k_record_magic);
    out.append(to_hex(Sha256::of(data)));
    out.push_back('\n');
    out.append(data);
    return out;
}

// The data of a sealed record, or nothing when its seal does not hold.
std::optional<std::string> unsealed(const std::string& text) {
    if (text.size() < k_record_header_bytes ||
        text.compare(0, k_record_magic.size(), k_record_magic) != 0 ||
        text[k_record_header_bytes - 1] != '\n') {
        return std::nullopt;
    }
    std::string data = text.substr(k_record_header_bytes);
    if (text.compare(k_record_magic.size(), 64, to_hex(Sha256::of(data))) != 0) {
        return std::nullopt;
    }
    return data;
}

// A directory below the cache that `owners` own and nobody else can write,
// not a symlink; nothing otherwise (also when `parent` is nothing).
std::optional<util::Dir> open_owned_dir(const util::Dir* parent, std::string_view name,
                                        const util::Owners& owners) {
    const std::optional<struct stat> st = parent ? parent->stat(name) : std::nullopt;
    if (!st || util::check_trust(*st, true, owners) != util::Trust::ok) {
        return std::nullopt;
    }
    return parent->open_dir(name);
}

enum class RecordState { missing, ok, untrusted, damaged };

struct RecordFile {
    RecordState state = RecordState::missing;
    std::string data;
    dev_t dev = 0;  // of the name as it was found, for removing it
    ino_t ino = 0;
};

RecordFile read_record_file(const util::Dir& shard, std::string_view name,
                            const util::Owners& owners) {
    const std::optional<struct stat> st = shard.stat(name);
    if (!st) {
        return {};
    }
    if (util::check_trust(*st, false, owners) != util::Trust::ok ||
        static_cast<std::uint64_t>(st->st_size) >
            ModuleCache::k_max_record_bytes + k_record_header_bytes) {
        return {RecordState::untrusted, {}, st->st_dev, st->st_ino};
    }
    // O_NONBLOCK: should a FIFO replace the file after the lstat, opening it
    // must not hang.
    const util::Fd fd = shard.open_file(name, O_RDONLY | O_NONBLOCK);
    struct stat opened {};
    if (!fd || ::fstat(fd.get(), &opened) != 0 || opened.st_dev != st->st_dev ||
        opened.st_ino != st->st_ino) {
        return {};  // gone or replaced meanwhile: a miss
    }
    std::optional<std::string> text =
        util::read_all(fd.get(), ModuleCache::k_max_record_bytes + k_record_header_bytes);
    std::optional<std::string> data = text ? unsealed(*text) : std::nullopt;
    if (!data) {
        return {RecordState::damaged, {}, st->st_dev, st->st_ino};
    }
    return {RecordState::ok, std::move(*data), st->st_dev, st->st_ino};
}

const util::Dir* get(const std::optional<util::Dir>& dir) { return dir ? &*dir : nullptr; }

std::optional<util::Dir> open_record_shard(const util::Dir* version, std::string_view kind,
                                           std::string_view name, const util::Owners& owners) {
    const std::optional<util::Dir> records = open_owned_dir(version, k_records_dir, owners);
    const std::optional<util::Dir> of_kind = open_owned_dir(get(records), kind, owners);
    return open_owned_dir(get(of_kind), shard_name(name), owners);
}

// The version directory of the cache at `root`, opened for reading only
// (nothing created or repaired: a build reports what it repairs): through
// ancestors that `ancestors` own, each directory from the root on one of
// `owners`' and writable by nobody else.
std::optional<util::Dir> open_read_only_version(const std::filesystem::path& root,
                                                const util::Owners& ancestors,
                                                const util::Owners& owners) {
    std::string problem;
    const std::optional<util::Dir> dir = util::open_through_trusted(root, ancestors, problem);
    const std::optional<struct stat> st = dir ? dir->stat_self() : std::nullopt;
    if (!st || util::check_trust(*st, true, owners) != util::Trust::ok) {
        return std::nullopt;
    }
    return open_owned_dir(get(dir), version_dir_name(), owners);
}

}  // namespace

namespace {

// Whether sweep() removes the item `name` of the records of `kind`: a
// temporary file a killed writer left, or a hash of the machine's memo
// older than a month (the versions of files long gone or changed pile up
// there, and a hash found again is kept again).
bool expired(std::string_view kind, const std::string& name, const struct stat& st) {
    const double age = util::now_seconds() - util::mtime_seconds(st);
    const bool left = !name.empty() && name.front() == '.' && name.find(".tmp.") != std::string::npos;
    return (left && age > k_temporary_grace_seconds) ||
           (kind == k_digests_kind && age > k_digest_lifetime_seconds);
}

}  // namespace

std::size_t sweep_records(const util::Dir& version) noexcept {
    std::size_t removed = 0;
    try {
        const std::optional<util::Dir> records =
            open_owned_dir(&version, k_records_dir, util::Owners());
        for (const std::string& kind : records ? records->list() : std::vector<std::string>()) {
            const std::optional<util::Dir> of_kind =
                open_owned_dir(get(records), kind, util::Owners());
            for (const std::string& shard_name :
                 of_kind ? of_kind->list() : std::vector<std::string>()) {
                const std::optional<util::Dir> shard =
                    open_owned_dir(get(of_kind), shard_name, util::Owners());
                for (const std::string& name : shard ? shard->list() : std::vector<std::string>()) {
                    const std::optional<struct stat> st = shard->stat(name);
                    if (st && expired(kind, name, *st) && shard->remove(name)) {
                        ++removed;
                    }
                }
            }
        }
    } catch (...) {
        // Best effort: the next sweep tries again.
    }
    return removed;
}

std::optional<std::string> read_own_record(const std::filesystem::path& root,
                                           const util::Owners& ancestors, std::string_view kind,
                                           std::string_view name) {
    const std::optional<util::Dir> version =
        open_read_only_version(root, ancestors, util::Owners());
    const std::optional<util::Dir> shard =
        open_record_shard(get(version), kind, name, util::Owners());
    RecordFile found = shard ? read_record_file(*shard, name, util::Owners()) : RecordFile();
    if (found.state == RecordState::ok) {
        return std::move(found.data);
    }
    if (found.state == RecordState::damaged) {
        const std::optional<struct stat> st = shard->stat(name);
        if (st && st->st_dev == found.dev && st->st_ino == found.ino) {
            shard->remove(name);
        }
    }
    return std::nullopt;
}

bool write_own_record(const std::filesystem::path& root, const util::Owners& ancestors,
                      std::string_view kind, std::string_view name, std::string_view data) {
    try {
        const Places places = open_places(root, nullptr, ancestors);
        const util::Dir records = require_layout_dir(places.version, k_records_dir, nullptr);
        const util::Dir of_kind = require_layout_dir(records, kind, nullptr);
        const util::Dir shard = require_layout_dir(of_kind, shard_name(name), nullptr);
        return shard.write_file(name, sealed(data), 0600, util::Sync::no);
    } catch (const CacheError&) {
        return false;
    }
}

RecordDigests::RecordDigests(std::filesystem::path root, util::Owners ancestors)
    : m_root(std::move(root)), m_ancestors(ancestors) {}

std::optional<std::string> RecordDigests::find(const std::string& version) {
    return read_own_record(m_root, m_ancestors, k_digests_kind, version);
}

void RecordDigests::keep(const std::string& version, const std::string& sha256) {
    write_own_record(m_root, m_ancestors, k_digests_kind, version, sha256);
}

bool drop_records(const util::Dir& version) noexcept {
    try {
        return version.stat(k_records_dir) && discard(version, version, k_records_dir);
    } catch (...) {
        return false;
    }
}

}  // namespace cache

std::optional<std::string> ModuleCache::read_record(std::string_view kind, std::string_view name) {
    cache::check_record_name(kind, name);
    if (m_options.read_only) {
        return read_record_read_only(kind, name);
    }
    if (std::optional<std::string> own = cache::read_own_record(m_root, m_impl->ancestors, kind,
                                                                name)) {
        return own;
    }
    for (const std::unique_ptr<ModuleCache>& layer : m_impl->layers) {
        if (std::optional<std::string> shared = layer->read_record_read_only(kind, name)) {
            return shared;
        }
    }
    return std::nullopt;
}

std::optional<std::string> ModuleCache::read_record_read_only(std::string_view kind,
                                                              std::string_view name) const {
    const util::Owners& owners = m_impl->owners;
    const std::optional<util::Dir> version =
        cache::open_read_only_version(m_root, owners, owners);
    const std::optional<util::Dir> shard =
        cache::open_record_shard(cache::get(version), kind, name, owners);
    cache::RecordFile found = shard ? cache::read_record_file(*shard, name, owners)
                                    : cache::RecordFile();
    if (found.state != cache::RecordState::ok) {
        return std::nullopt;
    }
    return std::move(found.data);
}

bool ModuleCache::write_record(std::string_view kind, std::string_view name,
                               std::string_view data) {
    cache::check_record_name(kind, name);
    if (data.size() > k_max_record_bytes) {
        throw std::invalid_argument("a record holds at most " +
                                    std::to_string(k_max_record_bytes) + " bytes, not " +
                                    std::to_string(data.size()));
    }
    return !m_options.read_only &&
           cache::write_own_record(m_root, m_impl->ancestors, kind, name, data);
}

void ModuleCache::keep_file_digests() {
    if (m_options.read_only) {
        return;
    }
    auto store = std::make_shared<cache::RecordDigests>(m_root, m_impl->ancestors);
    m_impl->digests = store;
    cache::set_machine_digests(std::move(store));
}

bool ModuleCache::remove_record(std::string_view kind, std::string_view name) {
    cache::check_record_name(kind, name);
    if (m_options.read_only) {
        return false;
    }
    try {
        const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
        const std::optional<util::Dir> shard =
            cache::open_record_shard(&places.version, kind, name, util::Owners());
        return shard && shard->stat(name) && shard->remove(name);
    } catch (const CacheError&) {
        return false;
    }
}

std::vector<std::string> ModuleCache::record_names(std::string_view kind) const {
    cache::check_record_name(kind, "00000000");
    const util::Owners& owners = m_impl->owners;
    const std::vector<std::string> none;
    std::vector<std::string> names;
    const std::optional<util::Dir> version =
        cache::open_read_only_version(m_root, m_impl->ancestors, owners);
    const std::optional<util::Dir> all =
        cache::open_owned_dir(cache::get(version), cache::k_records_dir, owners);
    const std::optional<util::Dir> records = cache::open_owned_dir(cache::get(all), kind, owners);
    for (const std::string& shard_name : records ? records->list() : none) {
        const std::optional<util::Dir> shard =
            cache::open_owned_dir(cache::get(records), shard_name, owners);
        for (const std::string& name : shard ? shard->list() : none) {
            if (is_key(name) && cache::shard_name(name) == shard_name) {
                names.push_back(name);
            }
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace opweave

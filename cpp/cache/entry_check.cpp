// opweave core (internal): entry verification (see entry_check.hpp).
#include "cache/entry_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cache/entry_metadata.hpp"
#include "cache/header_manifest.hpp"
#include "opweave/errors.hpp"

namespace opweave::cache {

namespace {

constexpr std::size_t k_max_metadata_bytes = 64u << 20;

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

unsigned file_mode(std::string_view name) { return ends_with(name, ".so") ? 0700 : 0600; }

EntryCheck verdict(EntryState state, std::string problem, Entry entry = {}) {
    return {state, std::move(problem), std::move(entry)};
}

// Why the file `name` of an entry cannot be trusted, or "".
std::string file_problem(const util::Dir& dir, const EntryFile& file, Memo memo,
                         const util::Owners& owners, std::uint64_t& size_on_disk) {
    const util::Fd fd = dir.open_file(file.name, O_RDONLY);
    if (!fd) {
        if (errno == ELOOP) {
            return file.name + " is a symlink";
        }
        return file.name + " cannot be opened: " + std::strerror(errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        return file.name + " cannot be read: " + std::strerror(errno);
    }
    const util::Trust trust = util::check_trust(st, false, owners);
    if (trust != util::Trust::ok) {
        return file.name + " " + util::describe_trust(trust, st);
    }
    size_on_disk += static_cast<std::uint64_t>(st.st_size);
    if (static_cast<std::uint64_t>(st.st_size) != file.size) {
        return file.name + " has " + std::to_string(st.st_size) + " bytes, " +
               std::to_string(file.size) + " recorded";
    }
    const std::optional<std::string> sha256 = file_sha256(fd.get(), st, memo);
    if (!sha256) {
        return file.name + " cannot be read";
    }
    if (*sha256 != file.sha256) {
        return file.name + " does not have the recorded content (SHA-256 " +
               sha256->substr(0, 16) + "..., recorded " + file.sha256.substr(0, 16) + "...)";
    }
    return {};
}

}  // namespace

EntryCheck check_entry(const util::Dir& shard, std::string_view key, Memo memo) {
    return check_entry(shard, key, memo, util::Owners());
}

EntryCheck check_entry(const util::Dir& shard, std::string_view key, Memo memo,
                       const util::Owners& owners) {
    const std::optional<struct stat> st = shard.stat(key);
    if (!st) {
        if (errno == ENOENT) {
            return verdict(EntryState::missing, "no entry");
        }
        return verdict(EntryState::damaged, std::string("cannot be read: ") + std::strerror(errno));
    }
    const util::Trust trust = util::check_trust(*st, true, owners);
    if (trust == util::Trust::foreign_owner) {
        return verdict(EntryState::foreign, "the entry " + util::describe_trust(trust, *st));
    }
    if (trust != util::Trust::ok) {
        return verdict(EntryState::damaged, "the entry " + util::describe_trust(trust, *st));
    }
    const std::optional<util::Dir> dir = shard.open_dir(key);
    if (!dir) {
        return verdict(errno == ENOENT ? EntryState::missing : EntryState::damaged,
                       std::string("the entry cannot be opened: ") + std::strerror(errno));
    }

    const auto meta_st = dir->stat(ModuleCache::k_metadata_file);
    if (!meta_st) {
        return verdict(EntryState::damaged, "its metadata is missing");
    }
    const util::Trust meta_trust = util::check_trust(*meta_st, false, owners);
    if (meta_trust != util::Trust::ok) {
        return verdict(EntryState::damaged,
                       "its metadata " + util::describe_trust(meta_trust, *meta_st));
    }
    const std::optional<std::string> text =
        dir->read_file(ModuleCache::k_metadata_file, k_max_metadata_bytes);
    std::optional<Entry> entry = text ? parse_metadata(*text) : std::nullopt;
    if (!entry) {
        return verdict(EntryState::damaged, "its metadata cannot be read");
    }
    if (entry->key != key) {
        return verdict(EntryState::damaged, "its metadata describes another key (" +
                                                entry->key.substr(0, 16) + "...)");
    }
    entry->dir = dir->path();
    entry->last_used = util::mtime_seconds(*st);
    entry->size_bytes = static_cast<std::uint64_t>(meta_st->st_size);
    for (const EntryFile& file : entry->files) {
        std::string problem = file_problem(*dir, file, memo, owners, entry->size_bytes);
        if (!problem.empty()) {
            return verdict(EntryState::damaged, std::move(problem), std::move(*entry));
        }
    }
    std::string changed = check_headers(entry->headers, memo);
    if (!changed.empty()) {
        return verdict(EntryState::stale, std::move(changed), std::move(*entry));
    }
    return verdict(EntryState::valid, {}, std::move(*entry));
}

std::vector<EntryFile> seal_files(const util::Dir& staging) {
    std::vector<EntryFile> files;
    for (const std::string& name : staging.list()) {
        const util::Fd fd = staging.open_file(name, O_RDONLY);
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
            throw CacheError("the build left " + staging.path_of(name).string() +
                                 ", which is not a regular file; only files can be published",
                             staging.path_of(name));
        }
        if (::fchmod(fd.get(), static_cast<mode_t>(file_mode(name))) != 0 ||
            ::fsync(fd.get()) != 0 || ::fstat(fd.get(), &st) != 0) {
            throw CacheError("cannot seal " + staging.path_of(name).string() + ": " +
                                 std::strerror(errno),
                             staging.path_of(name));
        }
        const std::optional<std::string> sha256 = file_sha256(fd.get(), st, Memo::bypass);
        if (!sha256) {
            throw CacheError("cannot read " + staging.path_of(name).string(),
                             staging.path_of(name));
        }
        files.push_back({name, static_cast<std::uint64_t>(st.st_size), *sha256});
    }
    return files;
}

}  // namespace opweave::cache

// opweave core: ModuleCache (see include/opweave/module_cache.hpp).
//
// Concurrency rules, by operation:
//  - lookup: a stat() of the entry directory. Publishing and deleting are
//    single renames, so a reader sees an entry whole or not at all. A reader
//    that found an entry and then loses it to a concurrent evict sees its
//    files vanish (ENOENT), never a partial file: it treats that as a miss.
//  - get_or_build: the per-key lock serialises builders of one key, and the
//    second lookup under the lock turns every waiter into a reader of the
//    winner's entry. Keys never share a lock.
//  - last-used refresh: rewrites meta.json by rename, at most once a minute
//    per entry (the entry directory's mtime, which that rename updates, tells
//    when it was last done). Concurrent refreshes write near-equal values; the
//    last rename wins. A refresh that races a delete fails quietly.
//  - evict / clear / prune: rename into trash/, then remove. Two processes
//    deleting the same entry: one rename wins, the other sees ENOENT.
#include "opweave/module_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "cache/entry_metadata.hpp"
#include "opweave/errors.hpp"
#include "opweave/file_lock.hpp"
#include "opweave/staging_dir.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace {

constexpr double k_last_used_refresh_seconds = 60.0;
// A staging directory without an owner lock is a crash between mkdir and
// locking; anything that old is certainly not a build starting up.
constexpr double k_staging_grace_seconds = 3600.0;
constexpr const char* k_cachedir_tag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by opweave.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

double mtime_of(const struct stat& st) {
    return static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
}

std::string octal_mode(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

// Refuses a root that another user could write to: they could plant a
// module that this user then loads and runs.
void check_root_permissions(const std::filesystem::path& root) {
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) {
        throw CacheError("cannot access cache directory " + root.string() + ": " +
                             std::strerror(errno),
                         root);
    }
    if (!S_ISDIR(st.st_mode)) {
        throw CacheError("cache path " + root.string() + " is not a directory", root);
    }
    if (st.st_uid != ::geteuid()) {
        throw CacheError("cache directory " + root.string() + " is owned by uid " +
                             std::to_string(st.st_uid) + ", not by this user (uid " +
                             std::to_string(::geteuid()) +
                             "); use a directory of your own (OPWEAVE_FLAGS=compiledir=...)",
                         root);
    }
    if ((st.st_mode & (S_IWOTH | S_IWGRP)) != 0) {
        const char* fix = "chmod go-w ";
        throw CacheError("cache directory " + root.string() + " is writable by other users (mode " +
                             octal_mode(st.st_mode) + "), so they could plant code that " +
                             "opweave would load; fix it with `" + fix + root.string() +
                             "`, or use another directory (OPWEAVE_FLAGS=compiledir=...)",
                         root);
    }
}

}  // namespace

ModuleCache::ModuleCache(CacheOptions options) : m_options(std::move(options)) {
    m_root = m_options.root.empty() ? default_root() : std::filesystem::absolute(m_options.root);
    util::make_dirs(m_root);
    check_root_permissions(m_root);
    for (const auto& dir : {entries_dir(), locks_dir(), tmp_dir(), trash_dir()}) {
        util::make_dirs(dir);
    }
    const auto tag = m_root / "CACHEDIR.TAG";
    if (::access(tag.c_str(), F_OK) != 0) {
        try {
            util::write_file_atomic(tag, k_cachedir_tag);
        } catch (const CacheError&) {
            // Only a courtesy to backup tools; a read-only root still works.
        }
    }
}

std::filesystem::path ModuleCache::default_root() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg != nullptr && xdg[0] == '/') {
        return std::filesystem::path(xdg) / "opweave";
    }
    const char* home = std::getenv("HOME");
    if (home != nullptr && home[0] == '/') {
        return std::filesystem::path(home) / ".cache" / "opweave";
    }
    throw CacheError("cannot choose a cache directory: neither XDG_CACHE_HOME nor HOME is set "
                     "to an absolute path; set one, or configure the cache root",
                     {});
}

void ModuleCache::check_key(std::string_view key) {
    const bool good_length = key.size() >= 8 && key.size() <= 128;
    const bool good_chars = std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_' || c == '-';
    });
    if (!good_length || !good_chars) {
        throw std::invalid_argument("invalid cache key '" + std::string(key.substr(0, 140)) +
                                    "': expected 8 to 128 characters of [0-9A-Za-z_-]");
    }
}

std::filesystem::path ModuleCache::versioned_dir() const {
    return m_root / ("v" + std::to_string(k_format_version));
}
std::filesystem::path ModuleCache::entries_dir() const { return versioned_dir() / "entries"; }
std::filesystem::path ModuleCache::locks_dir() const { return versioned_dir() / "locks"; }
std::filesystem::path ModuleCache::tmp_dir() const { return versioned_dir() / "tmp"; }
std::filesystem::path ModuleCache::trash_dir() const { return versioned_dir() / "trash"; }
std::filesystem::path ModuleCache::failed_dir() const { return versioned_dir() / "failed"; }

std::filesystem::path ModuleCache::entry_dir(std::string_view key) const {
    check_key(key);
    return entries_dir() / std::string(key.substr(0, 2)) / std::string(key);
}

std::optional<std::filesystem::path> ModuleCache::lookup(std::string_view key) const {
    std::filesystem::path dir = entry_dir(key);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        return std::nullopt;
    }
    const double now = util::now_seconds();
    if (now - mtime_of(st) > k_last_used_refresh_seconds) {
        if (auto metadata = cache::read_metadata(dir)) {
            metadata->last_used = now;
            try {
                cache::write_metadata(dir, *metadata);
            } catch (const CacheError&) {
                // Best effort: a read-only cache or a concurrent delete.
            }
        }
    }
    return dir;
}

CacheResult ModuleCache::get_or_build(std::string_view key, const BuildFn& build) {
    if (auto dir = lookup(key)) {
        return {*dir, Outcome::hit};
    }
    const std::filesystem::path destination = entry_dir(key);
    // A miss is rare and costs a compile; clean up after killed builds now,
    // and recreate the layout in case someone deleted the cache meanwhile.
    sweep();
    util::make_dirs(locks_dir());
    FileLock lock(locks_dir() / (std::string(key) + ".lock"));
    lock.acquire(std::chrono::duration<double>(m_options.lock_timeout_seconds));
    struct LockRemover {
        FileLock& lock;
        ~LockRemover() { lock.release_and_remove(); }
    } remover{lock};

    if (auto dir = lookup(key)) {
        return {*dir, Outcome::built_by_other};
    }
    StagingDir staging(tmp_dir(), key);
    const BuildRecord record = build(staging.path());

    cache::EntryMetadata metadata;
    metadata.key = std::string(key);
    metadata.key_material = record.key_material;
    metadata.command = record.command;
    metadata.compile_seconds = record.compile_seconds;
    metadata.created = util::now_seconds();
    metadata.last_used = metadata.created;
    cache::write_metadata(staging.path(), metadata);

    util::make_dirs(destination.parent_path());
    // Contents reach the disk before the rename that publishes them, and the
    // rename before we report success: a crash leaves no truncated entry.
    util::sync_dir(staging.path());
    const Published published = staging.publish(destination);
    util::sync_dir(destination.parent_path());
    // lost_race needs a writer that skipped the lock (a foreign tool); the
    // entry there is still a whole, published one.
    return {destination, published == Published::yes ? Outcome::built : Outcome::built_by_other};
}

std::vector<EntryInfo> ModuleCache::list() const {
    std::vector<EntryInfo> entries;
    for (const std::string& shard : util::list_dir(entries_dir())) {
        const std::filesystem::path shard_dir = entries_dir() / shard;
        for (const std::string& name : util::list_dir(shard_dir)) {
            const std::filesystem::path dir = shard_dir / name;
            struct stat st {};
            if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
                continue;
            }
            EntryInfo info;
            info.key = name;
            info.dir = dir;
            info.size_bytes = util::tree_size(dir);
            info.created = info.last_used = mtime_of(st);
            if (const auto metadata = cache::read_metadata(dir)) {
                info.created = metadata->created;
                info.last_used = std::max(metadata->last_used, metadata->created);
                info.compile_seconds = metadata->compile_seconds;
                info.command = metadata->command;
                info.key_material = metadata->key_material;
            }
            entries.push_back(std::move(info));
        }
    }
    return entries;
}

CacheStats ModuleCache::stats() const {
    CacheStats stats;
    for (const EntryInfo& entry : list()) {
        ++stats.entries;
        stats.total_bytes += entry.size_bytes;
        stats.oldest_use = stats.entries == 1 ? entry.last_used : std::min(stats.oldest_use, entry.last_used);
        stats.newest_use = std::max(stats.newest_use, entry.last_used);
    }
    for (const std::string& name : util::list_dir(tmp_dir())) {
        const bool is_lock = name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
        stats.builds_in_flight += is_lock ? 0 : 1;
    }
    return stats;
}

bool ModuleCache::remove_entry_dir(const std::filesystem::path& dir) {
    util::make_dirs(trash_dir());
    const std::filesystem::path doomed =
        trash_dir() / (dir.filename().string() + "." + std::to_string(::getpid()) + "." +
                       util::random_suffix());
    if (::rename(dir.c_str(), doomed.c_str()) != 0) {
        if (errno == ENOENT) {
            return false;
        }
        throw CacheError("cannot remove cache entry " + dir.string() + ": " + std::strerror(errno),
                         dir);
    }
    util::remove_tree(doomed);
    return true;
}

bool ModuleCache::evict(std::string_view key) { return remove_entry_dir(entry_dir(key)); }

std::size_t ModuleCache::clear() {
    std::size_t removed = 0;
    for (const std::string& shard : util::list_dir(entries_dir())) {
        for (const std::string& name : util::list_dir(entries_dir() / shard)) {
            removed += remove_entry_dir(entries_dir() / shard / name) ? 1 : 0;
        }
    }
    sweep();
    return removed;
}

PruneResult ModuleCache::prune(std::optional<std::uint64_t> max_total_bytes,
                               std::optional<double> older_than_seconds) {
    std::vector<EntryInfo> entries = list();
    std::sort(entries.begin(), entries.end(),
              [](const EntryInfo& a, const EntryInfo& b) { return a.last_used < b.last_used; });
    std::uint64_t total = 0;
    for (const EntryInfo& entry : entries) {
        total += entry.size_bytes;
    }
    PruneResult result;
    const double now = util::now_seconds();
    for (const EntryInfo& entry : entries) {
        const bool too_old = older_than_seconds && now - entry.last_used > *older_than_seconds;
        const bool too_big = max_total_bytes && total > *max_total_bytes;
        if (!too_old && !too_big) {
            continue;
        }
        if (remove_entry_dir(entry.dir)) {
            ++result.removed;
            result.freed_bytes += entry.size_bytes;
        }
        total -= entry.size_bytes;
    }
    sweep();
    return result;
}

std::filesystem::path ModuleCache::keep_failed_source(std::string_view key,
                                                      std::string_view source) {
    check_key(key);
    util::make_dirs(failed_dir());
    std::filesystem::path path = failed_dir() / (std::string(key) + ".cpp");
    util::write_file_atomic(path, source);
    return path;
}

std::size_t ModuleCache::sweep() {
    std::size_t removed = StagingDir::sweep(tmp_dir(), k_staging_grace_seconds);
    for (const std::string& name : util::list_dir(trash_dir())) {
        removed += util::remove_tree(trash_dir() / name) ? 1 : 0;
    }
    for (const std::string& name : util::list_dir(locks_dir())) {
        // A lock file left by a killed builder: free, so take and remove it.
        FileLock orphan(locks_dir() / name);
        try {
            if (orphan.try_acquire()) {
                orphan.release_and_remove();
            }
        } catch (const CacheError&) {
            // Vanished or unreadable: nothing to clean.
        }
    }
    return removed;
}

}  // namespace opweave

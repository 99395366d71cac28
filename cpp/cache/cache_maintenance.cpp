// opweave core: ModuleCache listing, verifying and cleaning up (see
// include/opweave/module_cache.hpp and the concurrency rules at the top of
// module_cache.cpp).
//
// Every walk opens each directory by name relative to its parent without
// following symlinks, and skips what it cannot trust instead of entering it:
// listing another user's directory could make us report, or delete, what is
// not ours. Everything removed is first renamed into trash/ (or, for sweep,
// is already inside the root), so nothing outside the root is ever touched.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "cache/entry_check.hpp"
#include "cache/entry_metadata.hpp"
#include "cache/module_cache_impl.hpp"
#include "cache/node_index.hpp"
#include "cache/record_store.hpp"
#include "cache/unpacked_preludes.hpp"
#include "opweave/errors.hpp"
#include "cache/file_lock.hpp"
#include "opweave/module_cache.hpp"
#include "cache/staging_dir.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace cache {

// A directory below the root that can be walked: ours, not a symlink, not
// writable by others. Nothing otherwise.
std::optional<util::Dir> open_trusted(const util::Dir& parent, std::string_view name) {
    const auto st = parent.stat(name);
    if (!st || util::check_trust(*st, true) != util::Trust::ok) {
        return std::nullopt;
    }
    return parent.open_dir(name);
}

// Whether `name` is the directory of an older layout ("v1" when this is v2).
bool is_older_layout(const std::string& name) {
    if (name.size() < 2 || name[0] != 'v' ||
        !std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return false;
    }
    return name.size() < 6 && std::stoi(name.substr(1)) < ModuleCache::k_format_version;
}

}  // namespace cache

namespace {

using cache::is_older_layout;
using cache::open_trusted;

// A staging directory without an owner lock is a crash between mkdir and
// locking; anything that old is certainly not a build starting up.
constexpr double k_staging_grace_seconds = 3600.0;
// Quarantined entries are kept this long, and at most this many, so that a
// user can look at what was wrong.
constexpr double k_quarantine_keep_seconds = 7 * 86400.0;
constexpr std::size_t k_quarantine_keep_count = 16;
// Sources of failed compiles (kept to read the compiler's errors against).
constexpr double k_failed_keep_seconds = 7 * 86400.0;
constexpr std::size_t k_failed_keep_count = 20;
// Notes of builds wanted once (ModuleCache::wanted_before): a want older
// than this is forgotten, so a prelude used once a week is never built.
constexpr double k_wants_keep_seconds = 7 * 86400.0;
constexpr std::size_t k_wants_keep_count = 1000;

// Calls visit(shard, key) for each entry directory name in the cache.
template <typename Visit>
void for_each_entry_name(const cache::Places& places, Visit visit) {
    for (const std::string& shard_name : places.entries.list()) {
        const auto shard = open_trusted(places.entries, shard_name);
        if (!shard) {
            continue;
        }
        for (const std::string& key : shard->list()) {
            visit(*shard, key);
        }
    }
}

// The metadata of an entry without verifying its files; kind "damaged" when
// it cannot be read.
Entry describe(const util::Dir& shard, const std::string& key) {
    Entry entry;
    const auto dir = open_trusted(shard, key);
    const auto text = dir ? dir->read_file(ModuleCache::k_metadata_file) : std::nullopt;
    if (auto parsed = text ? cache::parse_metadata(*text) : std::nullopt) {
        entry = std::move(*parsed);
    } else {
        entry.kind = "damaged";
    }
    entry.key = key;
    entry.dir = shard.path_of(key);
    const auto st = shard.stat(key);
    entry.last_used = st ? util::mtime_seconds(*st) : 0.0;
    entry.created = entry.created > 0 ? entry.created : entry.last_used;
    entry.size_bytes = util::tree_size(shard, key);
    return entry;
}

void remove_all(const util::Dir& dir, std::size_t& removed) {
    for (const std::string& name : dir.list()) {
        removed += dir.remove(name) ? 1 : 0;
    }
}

// Removes what `dir` holds (quarantined entries, failed sources) older than
// `keep_seconds`, and the oldest beyond the `keep_count` newest.
void trim_kept(const util::Dir& dir, std::size_t keep_count, double keep_seconds,
               std::size_t& removed) {
    std::vector<std::pair<double, std::string>> items;
    for (const std::string& name : dir.list()) {
        const auto st = dir.stat(name);
        items.emplace_back(st ? util::mtime_seconds(*st) : 0.0, name);
    }
    std::sort(items.rbegin(), items.rend());  // newest first
    const double now = util::now_seconds();
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i >= keep_count || now - items[i].first > keep_seconds) {
            removed += dir.remove(items[i].second) ? 1 : 0;
        }
    }
}

bool is_bad(const cache::EntryCheck& check) {
    return check.state == cache::EntryState::damaged || check.state == cache::EntryState::foreign;
}

// Checks one name of a shard for verify() and adds what it finds to
// `report`. Something that looks bad is checked again, under its lock with
// Repair::yes, and only reported if it still is: an entry replaced or
// evicted by another process meanwhile is not a problem.
void verify_one(const cache::Places& places, const util::Dir& shard, const std::string& name,
                Repair repair, double lock_timeout, VerifyReport& report,
                CacheCounters& counts) {
    if (!ModuleCache::is_key(name)) {
        // Not an entry (a stray file): nothing builds it, so no lock.
        VerifyProblem problem{shard.path_of(name), "is not a cache entry"};
        if (repair == Repair::yes) {
            problem.repaired = cache::move_to_quarantine(places.version, shard, name,
                                                         problem.problem, nullptr);
            counts.quarantines += problem.repaired ? 1 : 0;
        }
        report.problems.push_back(std::move(problem));
        return;
    }
    cache::EntryCheck check = cache::check_entry(shard, name, cache::Memo::bypass);
    if (check.state == cache::EntryState::stale) {
        report.stale.push_back({shard.path_of(name), check.problem});
    }
    if (!is_bad(check)) {
        return;
    }
    std::optional<cache::KeyLock> lock;
    if (repair == Repair::yes) {
        lock.emplace(places.version, name, lock_timeout, nullptr);
    }
    check = cache::check_entry(shard, name, cache::Memo::bypass);
    if (!is_bad(check)) {
        return;
    }
    VerifyProblem problem{shard.path_of(name), check.problem};
    if (repair == Repair::yes) {
        const std::uint64_t before = counts.quarantines;
        cache::settle_locked(places.version, shard, name, check, nullptr, counts);
        problem.repaired = counts.quarantines > before;
    }
    report.problems.push_back(std::move(problem));
}

}  // namespace

std::vector<Entry> ModuleCache::list() const {
    refuse_if_read_only("list");
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    std::vector<Entry> entries;
    for_each_entry_name(places, [&](const util::Dir& shard, const std::string& key) {
        entries.push_back(describe(shard, key));
    });
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.key < b.key; });
    return entries;
}

CacheStats ModuleCache::stats() const {
    refuse_if_read_only("list");
    CacheStats stats;
    for (const Entry& entry : list()) {
        ++stats.entries;
        stats.total_bytes += entry.size_bytes;
        stats.oldest_use =
            stats.entries == 1 ? entry.last_used : std::min(stats.oldest_use, entry.last_used);
        stats.newest_use = std::max(stats.newest_use, entry.last_used);
    }
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    if (const auto tmp = open_trusted(places.version, cache::k_tmp_dir)) {
        for (const std::string& name : tmp->list()) {
            const bool is_lock = name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
            stats.builds_in_flight += is_lock ? 0 : 1;
        }
    }
    if (const auto failed = open_trusted(places.version, cache::k_failed_dir)) {
        stats.failed_sources = failed->list().size();
    }
    stats.counters = cache::read_counters(places.version);
    return stats;
}

VerifyReport ModuleCache::verify(Repair repair) {
    refuse_if_read_only("verify");
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    VerifyReport report;
    CacheCounters counts;
    for (const std::string& shard_name : places.entries.list()) {
        const auto st = places.entries.stat(shard_name);
        const util::Trust trust = st ? util::check_trust(*st, true) : util::Trust::wrong_type;
        if (trust != util::Trust::ok) {
            VerifyProblem problem{places.entries.path_of(shard_name),
                                  st ? util::describe_trust(trust, *st) : "cannot be read"};
            if (repair == Repair::yes && trust != util::Trust::foreign_owner) {
                problem.repaired = cache::move_to_quarantine(places.version, places.entries,
                                                             shard_name, problem.problem, nullptr);
            }
            report.problems.push_back(std::move(problem));
            continue;
        }
        const auto shard = places.entries.open_dir(shard_name);
        for (const std::string& name : shard ? shard->list() : std::vector<std::string>{}) {
            ++report.entries_checked;
            verify_one(places, *shard, name, repair, m_options.lock_timeout_seconds, report,
                       counts);
        }
    }
    cache::verify_node_index(places.version, places.entries, repair, report);
    m_impl->counters.add(counts);
    return report;
}

bool ModuleCache::evict(std::string_view key) {
    refuse_if_read_only("evict from");
    check_key(key);
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    const auto shard = open_trusted(places.entries, cache::shard_name(key));
    if (!shard) {
        return false;
    }
    const std::vector<std::string> exports = cache::recorded_exports(*shard, key);
    if (!cache::discard(places.version, *shard, key)) {
        return false;
    }
    cache::unindex_exports(places.version, key, exports);
    return true;
}

namespace {

// Removes a listed entry, whatever its name (a stray file in a shard is
// listed too): by its directory's parent and name; then the index files
// that name it (its exports, as listed).
bool remove_listed(const cache::Places& places, const Entry& entry) {
    const auto shard = open_trusted(places.entries, entry.dir.parent_path().filename().string());
    if (!shard || !cache::discard(places.version, *shard, entry.dir.filename().string())) {
        return false;
    }
    cache::unindex_exports(places.version, entry.key, entry.exports);
    return true;
}

}  // namespace

std::size_t ModuleCache::clear() {
    refuse_if_read_only("clear");
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    std::size_t removed = 0;
    for_each_entry_name(places, [&](const util::Dir& shard, const std::string& key) {
        removed += cache::discard(places.version, shard, key) ? 1 : 0;
    });
    // Every index file names a removed entry, or one published meanwhile
    // (whose index is then only missing: a miss of find_export).
    cache::drop_node_index(places.version);
    cache::drop_records(places.version);
    for (const char* kept : {cache::k_quarantine_dir, cache::k_failed_dir, cache::k_wants_dir}) {
        if (const auto dir = open_trusted(places.version, kept)) {
            std::size_t ignored = 0;
            remove_all(*dir, ignored);
        }
    }
    const util::Dir locks = cache::require_layout_dir(places.version, cache::k_locks_dir, nullptr);
    m_impl->counters.reset(places.version, locks);
    sweep();
    return removed;
}

PruneResult ModuleCache::prune(std::optional<std::uint64_t> max_total_bytes,
                               std::optional<double> older_than_seconds, std::string_view keep) {
    refuse_if_read_only("prune");
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    std::vector<Entry> entries = list();
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
    std::uint64_t total = 0;
    for (const Entry& entry : entries) {
        total += entry.size_bytes;
    }
    PruneResult result;
    const double now = util::now_seconds();
    for (const Entry& entry : entries) {
        const bool too_old = older_than_seconds && now - entry.last_used > *older_than_seconds;
        const bool too_big = max_total_bytes && total > *max_total_bytes;
        if ((!too_old && !too_big) || entry.key == keep) {
            continue;
        }
        if (remove_listed(places, entry)) {
            ++result.removed;
            result.freed_bytes += entry.size_bytes;
            total -= entry.size_bytes;
        }
    }
    if (const auto failed = open_trusted(places.version, cache::k_failed_dir)) {
        std::size_t ignored = 0;
        remove_all(*failed, ignored);  // debugging aids, not entries: not counted
    }
    m_impl->known_bytes.store(static_cast<std::int64_t>(total));
    const util::Dir locks = cache::require_layout_dir(places.version, cache::k_locks_dir, nullptr);
    m_impl->counters.write_listing(places.version, locks, total);
    CacheCounters counts;
    counts.evictions = result.removed;
    m_impl->counters.add(counts);
    sweep();
    return result;
}

std::size_t ModuleCache::sweep() {
    refuse_if_read_only("sweep");
    return cache::sweep(cache::open_places(m_root, nullptr, m_impl->ancestors), nullptr);
}

namespace cache {

std::size_t sweep(const Places& places, std::vector<CacheEvent>* events) {
    std::size_t removed = 0;
    // Each layout directory is checked (and repaired: a symlink in its
    // place is removed, never followed) before anything in it is touched.
    const util::Dir tmp = require_layout_dir(places.version, k_tmp_dir, events);
    removed += StagingDir::sweep(tmp.fd(), k_staging_grace_seconds);
    remove_all(require_layout_dir(places.version, k_trash_dir, events), removed);
    trim_kept(require_layout_dir(places.version, k_quarantine_dir, events),
              k_quarantine_keep_count, k_quarantine_keep_seconds, removed);
    trim_kept(require_layout_dir(places.version, k_failed_dir, events), k_failed_keep_count,
              k_failed_keep_seconds, removed);
    trim_kept(require_layout_dir(places.version, k_wants_dir, events), k_wants_keep_count,
              k_wants_keep_seconds, removed);
    removed += sweep_records(places.version);
    removed += sweep_unpacked(places.version, places.entries);
    const util::Dir locks = require_layout_dir(places.version, k_locks_dir, events);
    for (const std::string& name : locks.list()) {
        // A lock file left by a killed builder: free, so take and remove it.
        try {
            FileLock orphan(locks.fd(), name, locks.path_of(name));
            if (orphan.try_acquire()) {
                orphan.release_and_remove();
            }
        } catch (const CacheError&) {
            // Vanished or unreadable: nothing to clean.
        }
    }
    for (const std::string& name : places.root.list()) {
        // Only what is certainly an old opweave layout (ours, a real
        // directory, with its entries): the root may be a directory the
        // user chose that holds other things.
        const auto old = is_older_layout(name) ? open_trusted(places.root, name) : std::nullopt;
        const auto old_entries = old ? old->stat(k_entries_dir) : std::nullopt;
        if (old_entries && S_ISDIR(old_entries->st_mode)) {
            removed += places.root.remove(name) ? 1 : 0;
        }
    }
    return removed;
}

}  // namespace cache

}  // namespace opweave

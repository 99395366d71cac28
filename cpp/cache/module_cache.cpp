// opweave core: ModuleCache builds (see include/opweave/module_cache.hpp;
// lookups live in entry_lookup.cpp, listing, verifying and cleaning up in
// cache_maintenance.cpp).
//
// Concurrency rules, by operation:
//  - lookup: no lock. Publishing, replacing and deleting are renames, so a
//    reader sees an entry whole or not at all; a reader whose entry vanishes
//    while it verifies it (evicted, replaced) sees ENOENT and treats it as a
//    miss. The last-use time is the entry directory's mtime, touched at most
//    once a minute; nothing the verification covers is ever rewritten.
//  - get_or_build: the per-key lock serialises everything that changes a
//    key's entry (publishing, replacing a stale entry, quarantining a
//    damaged one), and the second check under the lock turns every waiter
//    into a reader of the winner's entry. So a damaged entry is quarantined
//    only if it is still the damaged one: a reader that found damage never
//    moves aside a fresh entry that a builder published meanwhile.
//  - replacing a stale entry: under the lock, the old directory is renamed
//    into trash and the new one renamed into place. Processes that loaded
//    the old module keep their mapping; its library has another name than
//    the new one (see module_builder.cpp), so dlopen() cannot confuse them.
//  - evict / clear / prune: rename into trash/, then remove, without the
//    key's lock: a concurrent reader misses, a concurrent builder publishes
//    after. Two processes deleting the same entry: one rename wins, the
//    other sees ENOENT.
#include "opweave/module_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "cache/entry_check.hpp"
#include "cache/entry_metadata.hpp"
#include "cache/module_cache_impl.hpp"
#include "cache/node_index.hpp"
#include "opweave/errors.hpp"
#include "cache/file_lock.hpp"
#include "cache/staging_dir.hpp"
#include "cache/upgrade_sweep.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace {

using cache::EntryCheck;
using cache::EntryState;
using cache::KeyLock;
using cache::move_to_quarantine;
using cache::settle_locked;

constexpr const char* k_cachedir_tag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by opweave.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

std::filesystem::path resolve_root(const CacheOptions& options) {
    std::filesystem::path root =
        options.root.empty() ? ModuleCache::default_root() : std::filesystem::absolute(options.root);
    if (!options.read_only) {
        util::make_dirs(root);
    }
    std::error_code error;
    std::filesystem::path real = std::filesystem::canonical(root, error);
    return error ? root : real;
}

}  // namespace

namespace cache {

KeyLock::KeyLock(const util::Dir& version, std::string_view key, double timeout,
                 BuildMonitor* monitor, Blocking blocking, std::vector<CacheEvent>* events)
    : m_locks(require_layout_dir(version, k_locks_dir, events)),
      m_lock(m_locks.fd(), std::string(key) + ".lock",
             m_locks.path_of(std::string(key) + ".lock")) {
    if (blocking == Blocking::yes) {
        m_lock.acquire(std::chrono::duration<double>(timeout), monitor);
    } else {
        m_lock.try_acquire();
    }
}

KeyLock::~KeyLock() { m_lock.release_and_remove(); }

Places open_places(const std::filesystem::path& root, std::vector<CacheEvent>* events,
                   const util::Owners& ancestors) {
    util::Dir root_dir = open_root(root, ancestors);
    util::Dir version = require_layout_dir(root_dir, version_dir_name(), events);
    util::Dir entries = require_layout_dir(version, k_entries_dir, events);
    return {std::move(root_dir), std::move(version), std::move(entries)};
}

std::string shard_name(std::string_view key) { return std::string(key.substr(0, 2)); }

void touch_if_due(const util::Dir& shard, const Entry& entry) {
    constexpr double k_last_used_refresh_seconds = 60.0;
    if (util::now_seconds() - entry.last_used > k_last_used_refresh_seconds) {
        shard.touch(entry.key);  // best effort: a read-only cache still serves
    }
}

std::string unique_name(std::string_view key) {
    return std::string(key) + "." + std::to_string(::getpid()) + "." + util::random_suffix();
}

bool discard(const util::Dir& version, const util::Dir& from, std::string_view name) {
    const util::Dir trash = require_layout_dir(version, k_trash_dir, nullptr);
    const std::string doomed = unique_name(name);
    if (!from.rename(name, trash, doomed)) {
        return false;
    }
    trash.remove(doomed);
    return true;
}

}  // namespace cache

std::filesystem::path Entry::file_ending(std::string_view suffix) const {
    for (const EntryFile& file : files) {
        if (file.name.size() >= suffix.size() &&
            file.name.compare(file.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            return dir / file.name;
        }
    }
    return {};
}

namespace {

// Checks that the read-only root belongs to one of `owners` and that
// nobody but its owner can write to it, opening it through trusted
// directories. Throws CacheError.
void check_read_only_root(const std::filesystem::path& root, const util::Owners& owners) {
    const util::Dir dir = cache::open_trusted_root(root, owners);
    const std::optional<struct stat> st = dir.stat_self();
    if (!st) {
        throw CacheError("cannot use the read-only cache " + root.string() + ": " +
                             std::strerror(errno),
                         root);
    }
    const util::Trust trust = util::check_trust(*st, true, owners);
    if (trust == util::Trust::foreign_owner) {
        throw CacheError("cannot use the read-only cache " + root.string() + ": it " +
                             util::describe_trust(trust, *st) +
                             " nor root; if you trust that user, name them "
                             "(OPWEAVE_FLAGS=cache__shared_owner=<user or uid>)",
                         root);
    }
    if (trust != util::Trust::ok) {
        throw CacheError("cannot use the read-only cache " + root.string() + ": it " +
                             util::describe_trust(trust, *st) +
                             "; others could plant code in it (make it writable by its owner "
                             "only, e.g. chmod go-w)",
                         root);
    }
}

}  // namespace

ModuleCache::ModuleCache(CacheOptions options)
    : m_root(resolve_root(options)),
      m_options(std::move(options)),
      m_impl(std::make_unique<Impl>()) {
    m_impl->ancestors = cache::ancestor_owners(m_options);
    if (m_options.read_only) {
        m_impl->owners = m_impl->ancestors;
        check_read_only_root(m_root, m_impl->owners);
        return;
    }
    const util::Dir root = cache::open_root(m_root, m_impl->ancestors);
    if (!root.stat(std::string("CACHEDIR.TAG"))) {
        // Only a courtesy to backup tools; a read-only root still works.
        root.write_file("CACHEDIR.TAG", k_cachedir_tag, 0600, util::Sync::no);
    }
    if (m_options.recipe > 0) {
        cache::upgrade_sweep(root, m_options.recipe, cache::k_upgrade_budget_seconds);
    }
    for (const std::filesystem::path& shared : m_options.shared_roots) {
        CacheOptions layer;
        layer.root = shared;
        layer.read_only = true;
        layer.shared_owner = m_options.shared_owner;
        m_impl->layers.push_back(std::make_unique<ModuleCache>(std::move(layer)));
    }
}

void ModuleCache::refuse_if_read_only(const char* what) const {
    if (m_options.read_only) {
        throw CacheError("the cache " + m_root.string() + " is read-only: cannot " + what + " it",
                         m_root);
    }
}

ModuleCache::~ModuleCache() {
    if (m_impl->digests) {
        cache::clear_machine_digests(m_impl->digests.get());
    }
    try {
        flush_counters();
    } catch (...) {
        // A destructor must not throw; the counts are only statistics.
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

bool ModuleCache::is_key(std::string_view key) noexcept {
    const bool good_length = key.size() >= 8 && key.size() <= 128;
    return good_length && std::all_of(key.begin(), key.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                      (c >= 'A' && c <= 'Z') || c == '_' || c == '-';
           });
}

void ModuleCache::check_key(std::string_view key) {
    if (!is_key(key)) {
        throw std::invalid_argument("invalid cache key '" + std::string(key.substr(0, 140)) +
                                    "': expected 8 to 128 characters of [0-9A-Za-z_-]");
    }
}

std::filesystem::path ModuleCache::entry_dir(std::string_view key) const {
    check_key(key);
    return m_root / cache::version_dir_name() / cache::k_entries_dir / cache::shard_name(key) /
           std::string(key);
}

namespace cache {

bool move_to_quarantine(const util::Dir& version, const util::Dir& shard, std::string_view key,
                        const std::string& problem, std::vector<CacheEvent>* events) {
    // The name is moved, touched so that its age counts from now (the
    // quarantine keeps items a while, by age), never truncated.
    const util::Dir quarantine =
        require_layout_dir(version, k_quarantine_dir, events);
    const std::string moved = unique_name(key);
    if (shard.rename(key, quarantine, moved)) {
        quarantine.touch(moved);
        if (events != nullptr) {
            events->push_back({CacheEvent::Kind::quarantined, shard.path_of(key), problem});
        }
        return true;
    }
    if (errno == ENOENT) {
        return false;
    }
    throw CacheError("cache entry " + shard.path_of(key).string() + " is unusable (" + problem +
                         ") and cannot be moved aside: " + std::strerror(errno) +
                         "; remove it (as its owner or as root), or use another cache "
                         "directory (OPWEAVE_FLAGS=compiledir=...)",
                     shard.path_of(key));
}

void settle_locked(const util::Dir& version, const util::Dir& shard, std::string_view key,
                   const EntryCheck& check, std::vector<CacheEvent>* events,
                   CacheCounters& counts) {
    if (check.state == EntryState::damaged || check.state == EntryState::foreign) {
        if (move_to_quarantine(version, shard, key, check.problem, events)) {
            ++counts.quarantines;
        }
    }
}

}  // namespace cache

namespace {

// Under the key's lock: builds into a staging directory, seals and records
// its files, and publishes it as `key` in `shard` (replacing a stale entry).
// Sets result.entry and result.outcome, and counts the build.
void publish_build(const cache::Places& places, const util::Dir& shard, std::string_view key,
                   EntryState found, const BuildFn& build, CacheResult& result,
                   CacheCounters& counts) {
    const util::Dir tmp =
        cache::require_layout_dir(places.version, cache::k_tmp_dir, &result.events);
    StagingDir staging(tmp.fd(), tmp.path(), key);
    const BuildRecord record = build(staging.path());
    // An export names an index file: a bad one is refused before publishing.
    cache::check_node_keys(record.exports, "the exports of the build");
    const std::optional<util::Dir> staged = tmp.open_dir(staging.name());
    if (!staged) {
        throw CacheError("the staging directory " + staging.path().string() + " vanished",
                         staging.path());
    }
    Entry entry;
    static_cast<BuildRecord&>(entry) = record;
    entry.key = std::string(key);
    entry.created = util::now_seconds();
    entry.files = cache::seal_files(*staged);
    // The metadata goes last: an entry without it is never trusted.
    if (!staged->write_file(ModuleCache::k_metadata_file, cache::metadata_json(entry))) {
        throw CacheError("cannot write the metadata of " + staging.path().string() + ": " +
                             std::strerror(errno),
                         staging.path());
    }
    staged->set_mode(0700);
    staged->sync();

    if (found == EntryState::stale) {
        cache::discard(places.version, shard, key);
    }
    const Published published = staging.publish(shard.fd(), key);
    shard.sync();
    if (published == Published::yes) {
        shard.touch(key);
        counts.builds = 1;
        counts.compile_seconds = record.compile_seconds;
        entry.dir = shard.path_of(key);
        entry.last_used = util::now_seconds();
        entry.size_bytes = util::tree_size(shard, key);
        result.entry = std::move(entry);
        result.outcome = Outcome::built;
        return;
    }
    // lost_race needs a writer that skipped the lock (a foreign tool): use
    // its entry if it verifies.
    EntryCheck check = cache::check_entry(shard, key, cache::Memo::use);
    if (check.state != EntryState::valid) {
        throw CacheError("another writer published " + shard.path_of(key).string() +
                             " without the key's lock, and it does not verify: " + check.problem,
                         shard.path_of(key));
    }
    result.entry = std::move(check.entry);
    result.outcome = Outcome::built_by_other;
}
}  // namespace

bool ModuleCache::quarantine(std::string_view key, std::string_view problem,
                             std::string_view holding, BuildMonitor* monitor) {
    check_key(key);
    if (m_options.read_only) {
        return false;  // left as it is; lookups report it
    }
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    const auto shard = cache::open_layout_dir(places.entries, cache::shard_name(key),
                                              cache::Create::no, nullptr);
    if (!shard) {
        return false;
    }
    const KeyLock lock(places.version, key, m_options.lock_timeout_seconds, monitor);
    if (!holding.empty()) {
        const auto dir = shard->open_dir(key);
        if (!dir || !dir->stat(holding)) {
            return false;  // replaced or removed since the caller looked
        }
    }
    const bool moved = move_to_quarantine(places.version, *shard, key, std::string(problem), nullptr);
    if (moved) {
        CacheCounters counts;
        counts.quarantines = 1;
        m_impl->counters.add(counts);
    }
    return moved;
}

CacheResult ModuleCache::get_or_build(std::string_view key, const BuildFn& build,
                                      BuildMonitor* monitor) {
    check_key(key);
    refuse_if_read_only("build in");
    CacheResult result;
    CacheCounters counts;
    for (const std::unique_ptr<ModuleCache>& layer : m_impl->layers) {
        if (std::optional<Entry> shared = layer->lookup_read_only(key, &result.events)) {
            counts.hits = 1;
            counts.saved_seconds = shared->compile_seconds;
            m_impl->counters.add(counts);
            result.entry = std::move(*shared);
            return result;
        }
    }
    const cache::Places places = cache::open_places(m_root, &result.events, m_impl->ancestors);
    const util::Dir shard = cache::require_layout_dir(places.entries, cache::shard_name(key),
                                                      &result.events);
    EntryCheck check = cache::check_entry(shard, key, cache::Memo::use);
    if (check.state == EntryState::valid) {
        cache::touch_if_due(shard, check.entry);
        // An index file removed since (by find_export, or by the eviction of
        // another entry that exported the node) is written again.
        cache::index_exports(places.version, key, check.entry.exports, cache::Overwrite::no);
        counts.hits = 1;
        counts.saved_seconds = check.entry.compile_seconds;
        m_impl->counters.add(counts);
        if (m_impl->counters.due()) {
            flush_counters();
        }
        result.entry = std::move(check.entry);
        return result;
    }
    counts.misses = 1;
    if (check.state == EntryState::stale) {
        result.events.push_back({CacheEvent::Kind::stale, shard.path_of(key), check.problem});
    }
    // A miss is rare and costs a compile: clean up after killed builds now
    // (and check every layout directory on the way).
    cache::sweep(places, &result.events);

    {
        const KeyLock lock(places.version, key, m_options.lock_timeout_seconds, monitor);
        check = cache::check_entry(shard, key, cache::Memo::use);
        if (check.state == EntryState::valid) {
            m_impl->counters.add(counts);
            result.entry = std::move(check.entry);
            result.outcome = Outcome::built_by_other;
            return result;
        }
        settle_locked(places.version, shard, key, check, &result.events, counts);

        publish_build(places, shard, key, check.state, build, result, counts);
    }
    // After publishing, outside the lock: the index is only an accelerator,
    // and a failure to write it is ignored (see node_index.hpp).
    cache::index_exports(places.version, key, result.entry.exports,
                         result.outcome == Outcome::built ? cache::Overwrite::yes
                                                          : cache::Overwrite::no);
    after_build(key, result, counts);
    return result;
}

CacheResult ModuleCache::replace(std::string_view key, const BuildFn& build,
                                 BuildMonitor* monitor) {
    check_key(key);
    refuse_if_read_only("replace an entry in");
    CacheResult result;
    CacheCounters counts;
    const cache::Places places = cache::open_places(m_root, &result.events, m_impl->ancestors);
    const util::Dir shard = cache::require_layout_dir(places.entries, cache::shard_name(key),
                                                      &result.events);
    {
        const KeyLock lock(places.version, key, m_options.lock_timeout_seconds, monitor);
        const EntryCheck check = cache::check_entry(shard, key, cache::Memo::use);
        settle_locked(places.version, shard, key, check, &result.events, counts);
        // A valid entry is discarded as a stale one is.
        const EntryState found =
            check.state == EntryState::valid ? EntryState::stale : check.state;
        publish_build(places, shard, key, found, build, result, counts);
    }
    // Nothing was compiled: neither a miss nor a build in the counters.
    counts.builds = 0;
    counts.compile_seconds = 0.0;
    cache::index_exports(places.version, key, result.entry.exports, cache::Overwrite::yes);
    after_build(key, result, counts);
    return result;
}

void ModuleCache::after_build(std::string_view key, const CacheResult& result,
                              const CacheCounters& counts) {
    m_impl->counters.add(counts);
    if (result.outcome == Outcome::built) {
        m_impl->counters.add_bytes(result.entry.size_bytes);
        enforce_size_limit(key, result.entry.size_bytes);
    }
    if (m_impl->counters.due()) {
        flush_counters();
    }
}

void ModuleCache::enforce_size_limit(std::string_view keep, std::uint64_t added) {
    if (!m_options.max_total_bytes) {
        return;
    }
    std::int64_t known = m_impl->known_bytes.load();
    if (known < 0) {
        // This process's first build: the size stats.json records (see
        // cache_counters.hpp) rather than a listing of every entry.
        known = recorded_bytes();
        std::int64_t unknown = -1;
        if (known >= 0 && !m_impl->known_bytes.compare_exchange_strong(unknown, known)) {
            known = unknown;  // another thread of this process got there first
        }
    }
    if (known >= 0 &&
        static_cast<std::uint64_t>(known) + added <= *m_options.max_total_bytes) {
        m_impl->known_bytes.fetch_add(static_cast<std::int64_t>(added));
        return;
    }
    prune(m_options.max_total_bytes, std::nullopt, keep);  // lists, and sets known_bytes
}

std::int64_t ModuleCache::recorded_bytes() const {
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    const std::optional<cache::RecordedSize> size = cache::read_size(places.version);
    const double age = size ? util::now_seconds() - size->listed_at : 0.0;
    if (!size || age < 0.0 || age > cache::k_listing_lifetime_seconds ||
        size->bytes > static_cast<std::uint64_t>(INT64_MAX)) {
        return -1;
    }
    return static_cast<std::int64_t>(size->bytes);
}

void ModuleCache::note_hit(double saved_seconds) {
    CacheCounters counts;
    counts.hits = 1;
    counts.saved_seconds = saved_seconds;
    m_impl->counters.add(counts);
}

void ModuleCache::flush_counters() {
    if (m_options.read_only || !m_impl->counters.pending()) {
        return;
    }
    // Creates nothing: a cache removed meanwhile (a private one, removed at
    // exit before this object goes) stays removed, with its counts.
    const auto root = util::Dir::open(m_root);
    const auto version = root ? root->open_dir(cache::version_dir_name()) : std::nullopt;
    const auto locks = version ? version->open_dir(cache::k_locks_dir) : std::nullopt;
    if (locks) {
        m_impl->counters.write(*version, *locks);
    }
}

bool ModuleCache::wanted_before(std::string_view key) {
    check_key(key);
    if (m_options.read_only) {
        return false;
    }
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    const util::Dir wants = cache::require_layout_dir(places.version, cache::k_wants_dir, nullptr);
    const util::Fd created = wants.open_file(key, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (created) {
        return false;
    }
    // Wanted before (EEXIST), or the note cannot be written: then the build
    // is not held back by a directory it cannot write.
    return true;
}

std::filesystem::path ModuleCache::keep_failed_source(std::string_view key,
                                                      std::string_view source) {
    check_key(key);
    refuse_if_read_only("keep a failed source in");
    const cache::Places places = cache::open_places(m_root, nullptr, m_impl->ancestors);
    const util::Dir failed = cache::require_layout_dir(places.version, cache::k_failed_dir, nullptr);
    const std::string name = std::string(key) + ".cpp";
    if (!failed.write_file(name, source, 0600, util::Sync::no)) {
        throw CacheError("cannot write " + failed.path_of(name).string() + ": " +
                             std::strerror(errno),
                         failed.path_of(name));
    }
    return failed.path_of(name);
}

}  // namespace opweave

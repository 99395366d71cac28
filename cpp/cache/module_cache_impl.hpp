// opweave core (internal): what the two halves of ModuleCache share
// (module_cache.cpp: lookup, build, quarantine; cache_maintenance.cpp:
// listing, verifying, pruning, sweeping).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_counters.hpp"
#include "cache/entry_check.hpp"
#include "cache/file_digest.hpp"
#include "cache/layout.hpp"
#include "cache/file_lock.hpp"
#include "opweave/module_cache.hpp"
#include "util/dir.hpp"

namespace opweave {

class ModuleCache::Impl {
public:
    cache::PendingCounters counters;
    // Who may own the directories above the root: this user, root and the
    // shared owner.
    util::Owners ancestors;
    // Who may own the entries: this user; when read-only, also root and the
    // shared owner.
    util::Owners owners;
    std::vector<std::unique_ptr<ModuleCache>> layers;  // CacheOptions::shared_roots
    // The machine's memo of file hashes, when this cache keeps it
    // (keep_file_digests).
    std::shared_ptr<cache::MachineDigests> digests;
    // The cache's size as this process last listed it (by prune), plus
    // what it published since; -1 until it lists. The size limit lists
    // the entries only when this passes the limit (see enforce_size_limit).
    std::atomic<std::int64_t> known_bytes{-1};
};

namespace cache {

// The directories one operation works in, opened (and repaired) afresh each
// time, so that a cache deleted or damaged meanwhile is recreated.
struct Places {
    util::Dir root;
    util::Dir version;
    util::Dir entries;
};

// Opens the root through directories only `ancestors` can change (see
// open_root), then its version and entries directories.
Places open_places(const std::filesystem::path& root, std::vector<CacheEvent>* events,
                   const util::Owners& ancestors = util::Owners());

// "ab" for key "ab12...".
std::string shard_name(std::string_view key);

// Refreshes the last-use time of a verified entry (its directory's mtime)
// at most once a minute; best effort.
void touch_if_due(const util::Dir& shard, const Entry& entry);

// A directory below the root that can be walked: ours, not a symlink, not
// writable by others. Nothing otherwise.
std::optional<util::Dir> open_trusted(const util::Dir& parent, std::string_view name);

// Whether `name` is the directory of an older layout ("v1" when this is v2).
bool is_older_layout(const std::string& name);

// A name for something moved aside: "<key>.<pid>.<random>".
std::string unique_name(std::string_view key);

// Holds the lock of `key` (locks/<key>.lock) for its scope, then removes the
// lock file so that lock files do not pile up. Waits like FileLock::acquire;
// with Blocking::no it only tries, and held() says whether it got the lock.
class KeyLock {
public:
    // `events` gets the repair of a damaged locks directory, if any.
    KeyLock(const util::Dir& version, std::string_view key, double timeout,
            BuildMonitor* monitor, Blocking blocking = Blocking::yes,
            std::vector<CacheEvent>* events = nullptr);
    ~KeyLock();
    KeyLock(const KeyLock&) = delete;
    KeyLock& operator=(const KeyLock&) = delete;

    bool held() const noexcept { return m_lock.held(); }

private:
    util::Dir m_locks;
    FileLock m_lock;
};

// Moves the unusable entry `key` of `shard` into quarantine (the caller holds
// the key's lock) and reports it in `events`. Returns whether there was one.
// Throws CacheError if it cannot be moved (another user's directory): then
// its place is unusable.
bool move_to_quarantine(const util::Dir& version, const util::Dir& shard, std::string_view key,
                        const std::string& problem, std::vector<CacheEvent>* events);

// Under the key's lock: deals with what a second check found. A damaged or
// foreign entry is quarantined (and counted); the others are left alone.
void settle_locked(const util::Dir& version, const util::Dir& shard, std::string_view key,
                   const EntryCheck& check, std::vector<CacheEvent>* events,
                   CacheCounters& counts);

// ModuleCache::sweep() in `places`, with repairs of the layout reported to
// `events` (if given).
std::size_t sweep(const Places& places, std::vector<CacheEvent>* events);

// Moves `name` out of `from` into trash/ and removes it there. Returns
// whether there was something to remove; false (not an exception) when it
// cannot be moved, such as another user's directory.
bool discard(const util::Dir& version, const util::Dir& from, std::string_view name);

}  // namespace cache

}  // namespace opweave

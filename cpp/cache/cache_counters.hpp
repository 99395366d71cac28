// opweave core (internal): the cache's persistent counters (stats.json).
//
// Each ModuleCache object gathers counts in memory and adds them to the file
// under the lock locks/stats.lock: read, add, write a new file, rename. So
// concurrent processes never lose each other's counts, and a reader (cache
// info) sees the old file or the new one. Adding costs a lock and a small
// write, so it happens at most once a second and when the object goes away.
//
// The file also records the cache's size (ccache keeps its size in its
// counters the same way): the total its last listing found, when, and the
// bytes builds published since. A process's first build reads it instead of
// listing every entry. It can overcount (an entry replaced or quarantined is
// not subtracted), which only brings the next listing forward; it undercounts
// only by the builds of a process killed before it wrote its counts, or
// published during another's listing, so the size limit lists the entries
// again once the record is a day old.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "opweave/module_cache.hpp"
#include "util/dir.hpp"
#include "util/fs.hpp"

namespace opweave::cache {

// The counters in `version_dir`/stats.json (zero if missing or unreadable).
CacheCounters read_counters(const util::Dir& version_dir);

// The cache's size as stats.json records it (see the top).
struct RecordedSize {
    std::uint64_t bytes = 0;
    double listed_at = 0.0;  // when a listing last found the total, in seconds since the epoch
};

// How long a recorded size is trusted without listing the entries again.
inline constexpr double k_listing_lifetime_seconds = 24 * 3600.0;

// The size `version_dir`/stats.json records, if it records one.
std::optional<RecordedSize> read_size(const util::Dir& version_dir);

class PendingCounters {
public:
    // Adds `delta` to what is not yet on disk.
    void add(const CacheCounters& delta);

    // Adds `bytes` published by a build to the size not yet on disk.
    void add_bytes(std::uint64_t bytes);

    // Records `total`, the size a listing just found, at once (locking
    // `locks`/stats.lock), with what else waits. Best effort.
    void write_listing(const util::Dir& version_dir, const util::Dir& locks,
                       std::uint64_t total);

    // Whether a second has passed since the last write and something waits.
    bool due() const;

    // Whether something waits to be written.
    bool pending() const;

    // Adds what waits to the file (locking `locks`/stats.lock). Best effort:
    // on failure the counts stay pending.
    void write(const util::Dir& version_dir, const util::Dir& locks);

    // Drops what waits and writes zeros, and a size of zero (under the lock).
    void reset(const util::Dir& version_dir, const util::Dir& locks);

private:
    // Under m_mutex and the file's lock: adds what waits to the file, with
    // `listed` as the size when given.
    bool write_locked(const util::Dir& version_dir, std::optional<std::uint64_t> listed);

    mutable std::mutex m_mutex;
    CacheCounters m_pending;
    std::uint64_t m_pending_bytes = 0;
    bool m_dirty = false;
    // The first write waits a second too: a short process that hits the
    // cache once adds its counts when it ends, not on its hit path.
    double m_last_write = util::now_seconds();
};

}  // namespace opweave::cache

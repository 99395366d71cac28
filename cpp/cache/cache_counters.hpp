// opweave core (internal): the cache's persistent counters (stats.json).
//
// Each ModuleCache object gathers counts in memory and adds them to the file
// under the lock locks/stats.lock: read, add, write a new file, rename. So
// concurrent processes never lose each other's counts, and a reader (cache
// info) sees the old file or the new one. Adding costs a lock and a small
// write, so it happens at most once a second and when the object goes away.
#pragma once

#include <mutex>

#include "opweave/module_cache.hpp"
#include "util/dir.hpp"
#include "util/fs.hpp"

namespace opweave::cache {

// The counters in `version_dir`/stats.json (zero if missing or unreadable).
CacheCounters read_counters(const util::Dir& version_dir);

class PendingCounters {
public:
    // Adds `delta` to what is not yet on disk.
    void add(const CacheCounters& delta);

    // Whether a second has passed since the last write and something waits.
    bool due() const;

    // Whether something waits to be written.
    bool pending() const;

    // Adds what waits to the file (locking `locks`/stats.lock). Best effort:
    // on failure the counts stay pending.
    void write(const util::Dir& version_dir, const util::Dir& locks);

    // Drops what waits and writes zeros (under the lock).
    void reset(const util::Dir& version_dir, const util::Dir& locks);

private:
    mutable std::mutex m_mutex;
    CacheCounters m_pending;
    bool m_dirty = false;
    // The first write waits a second too: a short process that hits the
    // cache once adds its counts when it ends, not on its hit path.
    double m_last_write = util::now_seconds();
};

}  // namespace opweave::cache

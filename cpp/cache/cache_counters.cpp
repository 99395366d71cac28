// opweave core (internal): persistent counters (see cache_counters.hpp).
#include "cache/cache_counters.hpp"

#include "cache/layout.hpp"
#include "cache/file_lock.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

namespace opweave::cache {

namespace {

using util::Json;

constexpr double k_write_interval_seconds = 1.0;
constexpr double k_lock_timeout_seconds = 5.0;
constexpr const char* k_lock_name = "stats.lock";

void add_to(CacheCounters& total, const CacheCounters& delta) {
    total.hits += delta.hits;
    total.misses += delta.misses;
    total.builds += delta.builds;
    total.quarantines += delta.quarantines;
    total.evictions += delta.evictions;
    total.compile_seconds += delta.compile_seconds;
    total.saved_seconds += delta.saved_seconds;
}

std::uint64_t count(const Json& json, const char* name) {
    const Json* value = json.find(name);
    const auto number = value != nullptr ? value->integer() : std::nullopt;
    return number && *number > 0 ? static_cast<std::uint64_t>(*number) : 0;
}

double seconds(const Json& json, const char* name) {
    const Json* value = json.find(name);
    const auto number = value != nullptr ? value->number() : std::nullopt;
    return number && *number > 0 ? *number : 0.0;
}

std::string to_text(const CacheCounters& counters, const std::optional<RecordedSize>& size) {
    Json::Object fields{
        {"format", 1},
        {"hits", counters.hits},
        {"misses", counters.misses},
        {"builds", counters.builds},
        {"quarantines", counters.quarantines},
        {"evictions", counters.evictions},
        {"compile_seconds", counters.compile_seconds},
        {"saved_seconds", counters.saved_seconds},
    };
    if (size) {
        fields.emplace("bytes", size->bytes);
        fields.emplace("listed_at", size->listed_at);
    }
    return Json(std::move(fields)).dump() + "\n";
}

std::optional<Json> read_stats(const util::Dir& version_dir) {
    const auto text = version_dir.read_file(k_stats_file, 1 << 16);
    auto json = text ? Json::parse(*text) : std::nullopt;
    if (!json || json->object() == nullptr) {
        return std::nullopt;
    }
    return json;
}

std::optional<RecordedSize> size_of(const Json& json) {
    const Json* bytes = json.find("bytes");
    const Json* listed_at = json.find("listed_at");
    const auto total = bytes != nullptr ? bytes->integer() : std::nullopt;
    const auto when = listed_at != nullptr ? listed_at->number() : std::nullopt;
    if (!total || *total < 0 || !when) {
        return std::nullopt;
    }
    return RecordedSize{static_cast<std::uint64_t>(*total), *when};
}

CacheCounters counters_of(const Json& json) {
    CacheCounters counters;
    counters.hits = count(json, "hits");
    counters.misses = count(json, "misses");
    counters.builds = count(json, "builds");
    counters.quarantines = count(json, "quarantines");
    counters.evictions = count(json, "evictions");
    counters.compile_seconds = seconds(json, "compile_seconds");
    counters.saved_seconds = seconds(json, "saved_seconds");
    return counters;
}

}  // namespace

std::optional<RecordedSize> read_size(const util::Dir& version_dir) {
    const std::optional<Json> json = read_stats(version_dir);
    return json ? size_of(*json) : std::nullopt;
}

CacheCounters read_counters(const util::Dir& version_dir) {
    const std::optional<Json> json = read_stats(version_dir);
    return json ? counters_of(*json) : CacheCounters();
}

void PendingCounters::add(const CacheCounters& delta) {
    std::lock_guard<std::mutex> guard(m_mutex);
    add_to(m_pending, delta);
    m_dirty = true;
}

void PendingCounters::add_bytes(std::uint64_t bytes) {
    std::lock_guard<std::mutex> guard(m_mutex);
    m_pending_bytes += bytes;
    m_dirty = true;
}

bool PendingCounters::pending() const {
    std::lock_guard<std::mutex> guard(m_mutex);
    return m_dirty;
}

bool PendingCounters::due() const {
    std::lock_guard<std::mutex> guard(m_mutex);
    return m_dirty && util::now_seconds() - m_last_write >= k_write_interval_seconds;
}

void PendingCounters::write(const util::Dir& version_dir, const util::Dir& locks) {
    std::lock_guard<std::mutex> guard(m_mutex);
    if (!m_dirty) {
        return;
    }
    try {
        FileLock lock(locks.fd(), k_lock_name, locks.path_of(k_lock_name));
        lock.acquire(std::chrono::duration<double>(k_lock_timeout_seconds));
        write_locked(version_dir, std::nullopt);
    } catch (const Error&) {
        // A busy or read-only cache: the counts wait for the next write.
    }
}

void PendingCounters::write_listing(const util::Dir& version_dir, const util::Dir& locks,
                                    std::uint64_t total) {
    std::lock_guard<std::mutex> guard(m_mutex);
    try {
        FileLock lock(locks.fd(), k_lock_name, locks.path_of(k_lock_name));
        lock.acquire(std::chrono::duration<double>(k_lock_timeout_seconds));
        write_locked(version_dir, total);
    } catch (const Error&) {
        // The next build lists the entries again.
    }
}

bool PendingCounters::write_locked(const util::Dir& version_dir,
                                   std::optional<std::uint64_t> listed) {
    const std::optional<Json> json = read_stats(version_dir);
    CacheCounters total = json ? counters_of(*json) : CacheCounters();
    add_to(total, m_pending);
    std::optional<RecordedSize> size = json ? size_of(*json) : std::nullopt;
    if (listed) {
        // The listing found every entry published before it, ours included.
        size = RecordedSize{*listed, util::now_seconds()};
    } else if (size) {
        size->bytes += m_pending_bytes;
    }
    // Counts are not worth a flush to disk: a crash may lose a second's.
    if (!version_dir.write_file(k_stats_file, to_text(total, size), 0600, util::Sync::no)) {
        return false;
    }
    m_pending = {};
    m_pending_bytes = 0;
    m_dirty = false;
    m_last_write = util::now_seconds();
    return true;
}

void PendingCounters::reset(const util::Dir& version_dir, const util::Dir& locks) {
    std::lock_guard<std::mutex> guard(m_mutex);
    m_pending = {};
    m_pending_bytes = 0;
    m_dirty = false;
    try {
        FileLock lock(locks.fd(), k_lock_name, locks.path_of(k_lock_name));
        lock.acquire(std::chrono::duration<double>(k_lock_timeout_seconds));
        version_dir.write_file(k_stats_file, to_text({}, RecordedSize{0, util::now_seconds()}),
                               0600, util::Sync::no);
    } catch (const Error&) {
    }
}

}  // namespace opweave::cache

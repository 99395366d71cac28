// opweave core: ModuleCache lookups, in this cache, its read-only layers
// and read-only caches (see include/opweave/module_cache.hpp, and the
// concurrency rules at the top of module_cache.cpp: a lookup takes no lock,
// but the key's to quarantine a damaged entry).
#include <sys/stat.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/entry_check.hpp"
#include "cache/file_lock.hpp"
#include "cache/layout.hpp"
#include "cache/module_cache_impl.hpp"
#include "opweave/module_cache.hpp"

namespace opweave {

using cache::EntryCheck;
using cache::EntryState;
using cache::KeyLock;
using cache::settle_locked;

namespace {

// `name` in `parent`, when it is a directory that `owner` or this user owns
// and nobody else can write; what is wrong with it goes to `events`.
std::optional<util::Dir> open_read_only(const util::Dir& parent, const std::string& name,
                                        const util::Owners& owners,
                                        std::vector<CacheEvent>* events) {
    const std::optional<struct stat> st = parent.stat(name);
    if (!st) {
        return std::nullopt;
    }
    const util::Trust trust = util::check_trust(*st, true, owners);
    if (trust != util::Trust::ok) {
        if (events != nullptr) {
            events->push_back({CacheEvent::Kind::unusable, parent.path_of(name),
                               util::describe_trust(trust, *st)});
        }
        return std::nullopt;
    }
    return parent.open_dir(name);
}

}  // namespace

std::optional<Entry> ModuleCache::lookup_read_only(std::string_view key,
                                                   std::vector<CacheEvent>* events) const {
    const util::Owners& owners = m_impl->owners;
    std::string problem;
    std::optional<util::Dir> dir = util::open_through_trusted(m_root, owners, problem);
    if (!dir && !problem.empty() && events != nullptr) {
        events->push_back({CacheEvent::Kind::unusable, m_root, problem});
    }
    for (const std::string& name :
         {cache::version_dir_name(), std::string(cache::k_entries_dir), cache::shard_name(key)}) {
        dir = dir ? open_read_only(*dir, name, owners, events) : std::nullopt;
    }
    if (!dir) {
        return std::nullopt;
    }
    EntryCheck check = cache::check_entry(*dir, key, cache::Memo::use, owners);
    if (check.state == EntryState::valid) {
        return std::move(check.entry);
    }
    if (check.state != EntryState::missing && events != nullptr) {
        events->push_back({check.state == EntryState::stale ? CacheEvent::Kind::stale
                                                            : CacheEvent::Kind::unusable,
                           dir->path_of(key), check.problem});
    }
    return std::nullopt;
}

std::optional<Entry> ModuleCache::lookup(std::string_view key, std::vector<CacheEvent>* events,
                                         BuildMonitor* monitor, Blocking wait) {
    check_key(key);
    if (m_options.read_only) {
        return lookup_read_only(key, events);
    }
    if (std::optional<Entry> shared = lookup_in_layers(key, events)) {
        return shared;
    }
    return lookup_here(key, events, monitor, wait);
}

std::optional<Entry> ModuleCache::lookup_layers_last(std::string_view key,
                                                     std::vector<CacheEvent>* events) {
    check_key(key);
    if (m_options.read_only) {
        return lookup_read_only(key, events);
    }
    if (std::optional<Entry> own = lookup_here(key, events, nullptr, Blocking::yes)) {
        return own;
    }
    return lookup_in_layers(key, events);
}

std::optional<Entry> ModuleCache::lookup_in_layers(std::string_view key,
                                                   std::vector<CacheEvent>* events) const {
    for (const std::unique_ptr<ModuleCache>& layer : m_impl->layers) {
        if (std::optional<Entry> shared = layer->lookup_read_only(key, events)) {
            return shared;
        }
    }
    return std::nullopt;
}

std::optional<Entry> ModuleCache::lookup_here(std::string_view key,
                                              std::vector<CacheEvent>* events,
                                              BuildMonitor* monitor, Blocking wait) {
    const cache::Places places = cache::open_places(m_root, events, m_impl->ancestors);
    const auto shard =
        cache::open_layout_dir(places.entries, cache::shard_name(key), cache::Create::no, events);
    if (!shard) {
        return std::nullopt;
    }
    EntryCheck check = cache::check_entry(*shard, key, cache::Memo::use);
    if (check.state == EntryState::valid) {
        cache::touch_if_due(*shard, check.entry);
        return std::move(check.entry);
    }
    if (check.state == EntryState::stale && events != nullptr) {
        events->push_back({CacheEvent::Kind::stale, shard->path_of(key), check.problem});
    }
    if (check.state == EntryState::damaged || check.state == EntryState::foreign) {
        const KeyLock lock(places.version, key, m_options.lock_timeout_seconds, monitor, wait,
                           events);
        if (!lock.held()) {
            return std::nullopt;  // busy (being rebuilt): the caller does without
        }
        CacheCounters counts;
        settle_locked(places.version, *shard, key,
                      cache::check_entry(*shard, key, cache::Memo::use), events, counts);
        m_impl->counters.add(counts);
    }
    return std::nullopt;
}

}  // namespace opweave

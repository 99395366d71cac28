// opweave core (internal): what the two halves of ModuleCache share
// (module_cache.cpp: lookup, build, quarantine; cache_maintenance.cpp:
// listing, verifying, pruning, sweeping).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_counters.hpp"
#include "cache/layout.hpp"
#include "opweave/module_cache.hpp"
#include "util/dir.hpp"

namespace opweave {

class ModuleCache::Impl {
public:
    cache::PendingCounters counters;
};

namespace cache {

// The directories one operation works in, opened (and repaired) afresh each
// time, so that a cache deleted or damaged meanwhile is recreated.
struct Places {
    util::Dir root;
    util::Dir version;
    util::Dir entries;
};

Places open_places(const std::filesystem::path& root, std::vector<CacheEvent>* events);

// "ab" for key "ab12...".
std::string shard_name(std::string_view key);

// A name for something moved aside: "<key>.<pid>.<random>".
std::string unique_name(std::string_view key);

// ModuleCache::sweep() in `places`, with repairs of the layout reported to
// `events` (if given).
std::size_t sweep(const Places& places, std::vector<CacheEvent>* events);

// Moves `name` out of `from` into trash/ and removes it there. Returns
// whether there was something to remove; false (not an exception) when it
// cannot be moved, such as another user's directory.
bool discard(const util::Dir& version, const util::Dir& from, std::string_view name);

}  // namespace cache

}  // namespace opweave

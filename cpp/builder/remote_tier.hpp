// opweave core (internal): what build_module does with a RemoteStorage
// (include/opweave/remote_storage.hpp): fetch on a local miss, under the
// key's lock, and store after a publish.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "opweave/module_cache.hpp"
#include "opweave/remote_storage.hpp"

namespace opweave::builder {

// The record of the entry of `key` that `remote` holds, verified, its files
// written into `staging` (a BuildFn's); nothing when it holds none. A
// failure of the storage (a std::runtime_error from get) and bytes that do
// not verify are nothing too, with a `remote_failed` event for `entry_dir`
// in `events`. Anything else (an interrupt) propagates.
std::optional<BuildRecord> fetch_remote(RemoteStorage& remote, std::string_view key,
                                        const std::filesystem::path& staging,
                                        const std::filesystem::path& entry_dir,
                                        std::vector<CacheEvent>& events);

// Puts the published entry of `key` (ModuleCache::export_entry) in
// `remote`; a failure of the storage is a `remote_failed` event. An entry
// evicted meanwhile is not stored.
void store_remote(RemoteStorage& remote, ModuleCache& cache, std::string_view key,
                  std::vector<CacheEvent>& events);

}  // namespace opweave::builder

// opweave core (internal): cache entries as one byte string (a pack), the
// format of ModuleCache::export_entry and ModuleCache::adopt (see
// include/opweave/module_cache.hpp), and the staging of an entry that came
// from elsewhere.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "opweave/module_cache.hpp"

namespace opweave::cache {

// A whole entry received from elsewhere, as it was published there.
struct ForeignEntry {
    std::string metadata;  // its meta.json
    std::vector<std::pair<std::string, std::string>> files;  // name, content
};

// The pack of the entry `key` with `metadata` and `files`.
std::string pack_entry(std::string_view key, const ForeignEntry& entry);

// The entry in `pack`, which must be the pack of `key`. Throws CacheError
// when the bytes are not a pack, or are another key's.
ForeignEntry unpack_entry(std::string_view key, std::string_view pack);

// The record of `foreign` as the entry of `key`, once it verifies (see
// ModuleCache::adopt; CacheError says what does not, and nothing is
// written then), with its files written into `staging`.
BuildRecord stage_foreign(std::string_view key, const ForeignEntry& foreign,
                          const std::filesystem::path& staging);

}  // namespace opweave::cache

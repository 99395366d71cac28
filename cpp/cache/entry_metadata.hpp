// opweave core (internal): meta.json, the metadata file of a cache entry.
//
// A JSON object, written once, last, when the entry is published, and never
// rewritten: "format" versions it, and an entry whose metadata has another
// format, or cannot be read, is damaged. It holds what Entry describes but
// the facts that come from the disk (directory, size, last use):
//
//   {"format": 2, "key": ..., "kind": ..., "label": ..., "key_material": ...,
//    "command": ..., "compile_seconds": ..., "created": ...,
//    "files": [[name, size, sha256], ...],
//    "headers": "<sha256 or -> <size> <mtime_ns> <ctime_ns> <path>\n...",
//    "exports": [node key, ...]}
//
// "exports" is there only when the entry exports nodes (older entries never
// have it).
//
// The headers are one string of lines, not arrays: read on every cache hit,
// a few hundred of them parse as one string and a scan.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "opweave/module_cache.hpp"

namespace opweave::cache {

inline constexpr int k_metadata_format = 2;

// The text stored on disk for `entry`.
std::string metadata_json(const Entry& entry);

// The entry described by `text`, with `dir`, `size_bytes` and `last_used`
// left unset; nothing if the text is not valid metadata of this format.
std::optional<Entry> parse_metadata(std::string_view text);

}  // namespace opweave::cache

// opweave core (internal): meta.json, the metadata file of a cache entry.
//
// A flat JSON object, written once at publish time and rewritten (atomically)
// when the entry's last-used time is refreshed. "format" versions the file;
// an entry whose metadata has an unknown format is listed with what can be
// read and never trusted for anything but its size.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace opweave::cache {

struct EntryMetadata {
    static constexpr int k_format = 1;

    std::string key;
    std::string key_material;
    std::string command;
    double compile_seconds = 0.0;
    double created = 0.0;
    double last_used = 0.0;
};

// Serialises to the JSON text stored on disk.
std::string to_json(const EntryMetadata& metadata);

// Reads the metadata file in `entry_dir`; nothing if it is missing or invalid.
std::optional<EntryMetadata> read_metadata(const std::filesystem::path& entry_dir);

// Writes the metadata file in `entry_dir` atomically. Throws CacheError.
void write_metadata(const std::filesystem::path& entry_dir, const EntryMetadata& metadata);

}  // namespace opweave::cache

// opweave core: the on-disk, content-addressed module cache.
//
// Layout under the root (format version 1):
//
//   <root>/CACHEDIR.TAG              marks the tree for backup tools
//   <root>/v1/entries/<k2>/<key>/    one published entry: the builder's files
//                                    plus meta.json (see EntryMetadata)
//   <root>/v1/locks/<key>.lock       per-key build lock, present while building
//   <root>/v1/tmp/                   staging directories of builds in flight
//   <root>/v1/trash/                 entries being deleted
//   <root>/v1/failed/<key>.cpp       source of the last failed build of a key
//
// where <k2> is the first two characters of the key. Readers take no lock: an
// entry is published by one rename, so it is absent or whole. A build takes
// only its own key's lock, so different keys build in parallel. Deleting moves
// an entry to trash/ with one rename, then removes it; a process that already
// loaded a shared object from it keeps its mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opweave {

struct CacheOptions {
    std::filesystem::path root;  // empty: ModuleCache::default_root()
    // How long a build waits for another process building the same key. Longer
    // than a compile with a launcher (two steps of at most 600 s each).
    double lock_timeout_seconds = 1800.0;
};

// What a builder reports about the build it did; stored in meta.json.
struct BuildRecord {
    std::string key_material;   // human-readable text of what the key covers
    std::string command;        // the compile command, for display
    double compile_seconds = 0.0;
};

// Builds one entry: writes its files into the given (empty, private) staging
// directory. Throws to abort; nothing is published then.
using BuildFn = std::function<BuildRecord(const std::filesystem::path& staging_dir)>;

enum class Outcome {
    hit,             // found without taking a lock
    built,           // this call built and published it
    built_by_other,  // another process built it while this one waited
};

struct CacheResult {
    std::filesystem::path dir;
    Outcome outcome;
};

// One entry, as listed.
struct EntryInfo {
    std::string key;
    std::filesystem::path dir;
    std::uint64_t size_bytes = 0;
    double created = 0.0;          // seconds since the epoch
    double last_used = 0.0;        // seconds since the epoch
    double compile_seconds = 0.0;
    std::string command;
    std::string key_material;
};

struct CacheStats {
    std::size_t entries = 0;
    std::uint64_t total_bytes = 0;
    std::size_t builds_in_flight = 0;   // staging directories present
    double oldest_use = 0.0;            // earliest last_used; 0 when empty
    double newest_use = 0.0;            // latest last_used; 0 when empty
};

struct PruneResult {
    std::size_t removed = 0;
    std::uint64_t freed_bytes = 0;
};

class ModuleCache {
public:
    static constexpr int k_format_version = 1;
    static constexpr const char* k_metadata_file = "meta.json";

    // Opens (creating if needed, with mode 0700) the cache at options.root.
    // Throws CacheError if the root is not a directory owned by this user, or
    // if other users (group or others) can write to it: they could plant code
    // that this user then loads. The message says how to fix it.
    explicit ModuleCache(CacheOptions options = {});

    // $XDG_CACHE_HOME/opweave when XDG_CACHE_HOME is set (and absolute), else
    // $HOME/.cache/opweave. Throws CacheError if neither can be determined.
    static std::filesystem::path default_root();

    const std::filesystem::path& root() const noexcept { return m_root; }

    // Throws std::invalid_argument unless `key` is 8 to 128 characters of
    // [0-9A-Za-z_-]; keys name directories, so nothing else is accepted.
    static void check_key(std::string_view key);

    // The directory of `key`'s entry, whether or not it exists.
    std::filesystem::path entry_dir(std::string_view key) const;

    // The entry's directory if it is published. Takes no lock. Refreshes the
    // entry's last-used time at most once a minute.
    std::optional<std::filesystem::path> lookup(std::string_view key) const;

    // Returns the entry, building it with `build` if it is missing: takes the
    // key's lock (waiting at most the configured timeout, else LockTimeout),
    // looks again, builds into a staging directory, writes the metadata, and
    // publishes. If `build` throws, nothing is published and the exception
    // propagates. Exactly one process builds a key at a time.
    CacheResult get_or_build(std::string_view key, const BuildFn& build);

    // Every published entry, sorted by key. Unreadable entries are skipped.
    std::vector<EntryInfo> list() const;

    CacheStats stats() const;

    // Removes one entry. Returns whether it existed.
    bool evict(std::string_view key);

    // Removes every entry. Returns how many were removed.
    std::size_t clear();

    // Removes entries last used more than `older_than_seconds` ago, then the
    // least recently used ones until the total size is at most
    // `max_total_bytes`. Either limit may be omitted.
    PruneResult prune(std::optional<std::uint64_t> max_total_bytes,
                      std::optional<double> older_than_seconds);

    // Stores the source of a failed build as `<root>/v1/failed/<key>.cpp` and
    // returns that path, so an error message can name a file that outlives
    // the build's staging directory. Throws CacheError.
    std::filesystem::path keep_failed_source(std::string_view key, std::string_view source);

    // Removes what killed processes left behind: staging directories of dead
    // builds, and trash. Returns how many directories were removed.
    std::size_t sweep();

private:
    std::filesystem::path versioned_dir() const;
    std::filesystem::path entries_dir() const;
    std::filesystem::path locks_dir() const;
    std::filesystem::path tmp_dir() const;
    std::filesystem::path trash_dir() const;
    std::filesystem::path failed_dir() const;
    bool remove_entry_dir(const std::filesystem::path& dir);

    std::filesystem::path m_root;
    CacheOptions m_options;
};

}  // namespace opweave

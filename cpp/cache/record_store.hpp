// opweave core (internal): the cache's records (ModuleCache::read_record and
// its kin, declared in opweave/module_cache.hpp).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "cache/file_digest.hpp"
#include "util/dir.hpp"

namespace opweave::cache {

inline constexpr const char* k_records_dir = "records";
// The records of the machine's memo of file hashes (RecordDigests).
inline constexpr const char* k_digests_kind = "digests";

// The data of the record `name` of `kind` of the (writable) cache at
// `root`, whose ancestors `ancestors` may own; a damaged one is removed.
// Nothing is created or repaired on the way. Never throws CacheError.
std::optional<std::string> read_own_record(const std::filesystem::path& root,
                                           const util::Owners& ancestors, std::string_view kind,
                                           std::string_view name);

// Publishes the record; false when it cannot be written.
bool write_own_record(const std::filesystem::path& root, const util::Owners& ancestors,
                      std::string_view kind, std::string_view name, std::string_view data);

// The machine's memo of file hashes (file_digest.hpp) in a cache's records:
// a record per file version, holding its SHA-256. It holds the cache's root,
// not the cache, so that it may outlive it.
class RecordDigests : public MachineDigests {
public:
    RecordDigests(std::filesystem::path root, util::Owners ancestors);
    std::optional<std::string> find(const std::string& version) override;
    void keep(const std::string& version, const std::string& sha256) override;

private:
    std::filesystem::path m_root;
    util::Owners m_ancestors;
};

// Removes the temporary files that killed writers left among the records
// (older than an hour). Returns how many. Never throws.
std::size_t sweep_records(const util::Dir& version) noexcept;

// Removes every record (for clear()). Returns whether there were any.
bool drop_records(const util::Dir& version) noexcept;

}  // namespace opweave::cache

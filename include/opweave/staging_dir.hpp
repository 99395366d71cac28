// opweave core: a private directory that is built in, then published whole.
//
// A StagingDir is created under a parent directory that lives on the same
// filesystem as its destination (the cache root's tmp/), filled by a builder,
// and then published with one rename(): readers see the destination either
// absent or complete. Its owner holds a FileLock beside it (`<name>.lock`) for
// its whole life, so sweep() can tell a live build from one whose process was
// killed and remove only the latter.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

#include "opweave/file_lock.hpp"

namespace opweave {

enum class Published { yes, lost_race };

class StagingDir {
public:
    // Creates `<parent>/<prefix>.<pid>.<random>` with `mode` (default: private
    // to the user) and locks its owner file. Throws CacheError on failure.
    StagingDir(const std::filesystem::path& parent, std::string_view prefix,
               unsigned mode = 0700);

    // Removes the directory unless it was published. Never throws.
    ~StagingDir();

    StagingDir(StagingDir&&) = delete;
    StagingDir& operator=(StagingDir&&) = delete;
    StagingDir(const StagingDir&) = delete;
    StagingDir& operator=(const StagingDir&) = delete;

    const std::filesystem::path& path() const noexcept { return m_path; }

    // Renames the directory to `destination` (whose parent must exist).
    // Returns lost_race, after removing this copy, if `destination` already
    // exists: another process published first. Throws CacheError on any other
    // failure. After this call the object owns nothing.
    Published publish(const std::filesystem::path& destination);

    // Removes the staging directories under `parent` whose owner is gone
    // (killed mid-build), and leftovers without an owner lock older than
    // `grace_seconds`. Returns how many were removed. Never throws.
    static std::size_t sweep(const std::filesystem::path& parent, double grace_seconds) noexcept;

private:
    void discard() noexcept;

    std::filesystem::path m_path;
    FileLock m_owner;
    bool m_active = true;
};

}  // namespace opweave

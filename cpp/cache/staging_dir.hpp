// opweave core (internal): a private directory that is built in, then published whole.
//
// A StagingDir is created under a parent directory that lives on the same
// filesystem as its destination (the cache root's tmp/), filled by a builder,
// and then published with one rename(): readers see the destination either
// absent or complete. Its owner holds a FileLock beside it (`<name>.lock`) for
// its whole life, so sweep() can tell a live build from one whose process was
// killed and remove only the latter. Every step works relative to the parent
// directory's descriptor and never follows a symlink there.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "cache/file_lock.hpp"

namespace opweave {

enum class Published { yes, lost_race };

class StagingDir {
public:
    // Creates `<parent>/<prefix>.<pid>.<random>` with mode 0700 in the open
    // directory `parent_fd` (duplicated; `parent` is its path) and locks its
    // owner file. Throws CacheError on failure.
    StagingDir(int parent_fd, const std::filesystem::path& parent, std::string_view prefix);

    // The same in the directory `parent`, created (0700) if missing.
    StagingDir(const std::filesystem::path& parent, std::string_view prefix);

    // Removes the directory unless it was published. Never throws.
    ~StagingDir();

    StagingDir(StagingDir&&) = delete;
    StagingDir& operator=(StagingDir&&) = delete;
    StagingDir(const StagingDir&) = delete;
    StagingDir& operator=(const StagingDir&) = delete;

    const std::filesystem::path& path() const noexcept { return m_path; }
    const std::string& name() const noexcept { return m_name; }
    // The parent directory's descriptor (owned by this object).
    int parent_fd() const noexcept { return m_parent_fd; }

    // Renames the directory to `name` in the open directory `dir_fd` (on the
    // same filesystem). Returns lost_race, after removing this copy, if that
    // name exists already: another process published first. Throws
    // CacheError on any other failure. After this call the object owns
    // nothing.
    Published publish(int dir_fd, std::string_view name);

    // The same with a path, whose parent must exist.
    Published publish(const std::filesystem::path& destination);

    // Removes the staging directories in `parent_fd` whose owner is gone
    // (killed mid-build), and leftovers without an owner lock older than
    // `grace_seconds`. Returns how many were removed. Never throws.
    static std::size_t sweep(int parent_fd, double grace_seconds) noexcept;

    // The same for the directory `parent`.
    static std::size_t sweep(const std::filesystem::path& parent, double grace_seconds) noexcept;

private:
    void discard() noexcept;

    int m_parent_fd = -1;
    std::string m_name;
    std::filesystem::path m_path;
    FileLock m_owner;
    bool m_active = true;
};

}  // namespace opweave

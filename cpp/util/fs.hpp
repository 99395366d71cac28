// opweave core (internal): small filesystem helpers that report errors as
// return values (or CacheError where noted) and never follow a race into a
// crash: a file that vanishes concurrently is treated as already gone.
//
// Inside the cache root, use Dir (dir.hpp) instead: these helpers take paths
// and follow symlinks in them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opweave::util {

// Creates `dir` and any missing parents; new directories get exactly `mode`
// (0700: private to the user), whatever the umask. Existing directories are
// left as they are. Throws CacheError.
void make_dirs(const std::filesystem::path& dir, unsigned mode = 0700);

// Removes `name` relative to the directory `dir_fd` (AT_FDCWD: a path): a
// file, a symlink (not its target) or a whole tree, never following a
// symlink below it. Entries that disappear meanwhile are not errors. Returns
// false if something could not be removed. Never throws.
bool remove_tree_at(int dir_fd, const char* name) noexcept;

// remove_tree_at(AT_FDCWD, path).
bool remove_tree(const std::filesystem::path& path) noexcept;

// Writes `content` to `path` atomically (a private temporary file in the same
// directory, then rename()), with exactly `mode`. Throws CacheError.
void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       unsigned mode = 0600);

// The file's content, or nothing if it cannot be read.
std::optional<std::string> read_file(const std::filesystem::path& path);

// Writes all of `content` to `fd`, retrying on EINTR and short writes.
// False (errno set) on failure.
bool write_all(int fd, std::string_view content) noexcept;

// Reads `fd` to its end (at most `max_bytes`); nothing on a read error.
std::optional<std::string> read_all(int fd, std::size_t max_bytes = SIZE_MAX);

// Seconds since the Unix epoch (wall clock), with sub-second precision.
double now_seconds() noexcept;

// A short random string of [0-9a-z] for unique temporary names.
std::string random_suffix();

}  // namespace opweave::util

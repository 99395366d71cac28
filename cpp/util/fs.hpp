// opweave core (internal): small filesystem helpers that report errors as
// return values (or CacheError where noted) and never follow a race into a
// crash: a file that vanishes concurrently is treated as already gone.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opweave::util {

// Creates `dir` and any missing parents with `mode` (0700: private to the
// user). Existing directories are left as they are. Throws CacheError.
void make_dirs(const std::filesystem::path& dir, unsigned mode = 0700);

// Removes a file or a directory tree. Entries that disappear meanwhile (another
// process removing the same tree) are not errors. Returns false if something
// could not be removed. Never throws.
bool remove_tree(const std::filesystem::path& path) noexcept;

// Writes `content` to `path` atomically: a private temporary file in the same
// directory, then rename(). Readers see the old or the new file, never a part.
// Throws CacheError on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// The file's content, or nothing if it cannot be read.
std::optional<std::string> read_file(const std::filesystem::path& path);

// Flushes every regular file directly in `dir`, then `dir` itself, to stable
// storage, so that a rename that publishes `dir` cannot survive a power loss
// that its contents did not. Best effort; never throws.
void sync_dir(const std::filesystem::path& dir) noexcept;

// The names in `dir` (without "." and ".."), sorted; empty if it cannot be
// read. Never throws except std::bad_alloc.
std::vector<std::string> list_dir(const std::filesystem::path& dir);

// Total size in bytes of the regular files below `dir` (0 if it is gone).
std::uint64_t tree_size(const std::filesystem::path& dir) noexcept;

// Seconds since the Unix epoch (wall clock), with sub-second precision.
double now_seconds() noexcept;

// A short random string of [0-9a-z] for unique temporary names.
std::string random_suffix();

}  // namespace opweave::util

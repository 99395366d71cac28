// opweave core (internal): the directories of the cache, opened and checked.
//
// The root is opened by its path (symlinks in that path are followed: the
// root may be reached through a link). Everything below it is opened one
// name at a time with O_NOFOLLOW (util::Dir) and checked: a directory must
// belong to this user and be writable by nobody else. What can be repaired
// safely is repaired and reported: a symlink or a file where a directory
// belongs is unlinked (never what a link points to) and the directory made
// afresh, and a mode that lets others write is narrowed to 0700. A directory
// that belongs to another user cannot be made safe: CacheError says how to
// fix it.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "opweave/module_cache.hpp"
#include "util/dir.hpp"

namespace opweave::cache {

inline constexpr const char* k_entries_dir = "entries";
inline constexpr const char* k_locks_dir = "locks";
inline constexpr const char* k_tmp_dir = "tmp";
inline constexpr const char* k_trash_dir = "trash";
inline constexpr const char* k_quarantine_dir = "quarantine";
inline constexpr const char* k_failed_dir = "failed";
inline constexpr const char* k_stats_file = "stats.json";

// "v2": the directory of this layout version.
std::string version_dir_name();

// Opens the root, creating it (and its parents) with mode 0700 if missing.
// Throws CacheError unless it is a directory owned by this user that group
// and others cannot write to; the message says how to fix it.
util::Dir open_root(const std::filesystem::path& root);

enum class Create { no, yes };

// Opens the layout directory `name` in `parent` as described above. Returns
// nothing if it is missing and `create` is no. Repairs go to `events` (if
// given). Throws CacheError if it belongs to another user, or cannot be
// opened or created.
std::optional<util::Dir> open_layout_dir(const util::Dir& parent, std::string_view name,
                                         Create create, std::vector<CacheEvent>* events);

// open_layout_dir with Create::yes, which never returns nothing.
util::Dir require_layout_dir(const util::Dir& parent, std::string_view name,
                             std::vector<CacheEvent>* events);

}  // namespace opweave::cache

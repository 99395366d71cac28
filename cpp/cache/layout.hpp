// opweave core (internal): the directories of the cache, opened and checked.
//
// The root is opened by its path, one name at a time from "/": every
// directory on the way must be one that only this user, root or a named
// shared owner can change (as ssh's StrictModes checks), so that nobody else
// can swap the tree between a check and a load. Symlinks on the way are
// followed where they sit in such directories (the root may be reached
// through a link). Everything below it is opened one
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
inline constexpr const char* k_wants_dir = "wants";  // builds wanted once (wanted_before)
inline constexpr const char* k_tools_dir = "tools";  // programs compiles run (see build_support)
inline constexpr const char* k_stats_file = "stats.json";

// "v2": the directory of this layout version.
std::string version_dir_name();

// Who may own the directories above a cache root of `options`: this user,
// root and options.shared_owner.
util::Owners ancestor_owners(const CacheOptions& options);

// Opens `root` through directories that only `owners` or root can change
// (util::open_through_trusted); throws CacheError naming the directory that
// is not and saying how to fix it. The root itself is not checked here.
util::Dir open_trusted_root(const std::filesystem::path& root, const util::Owners& owners);

// Opens the root, creating it (and its parents) with mode 0700 if missing,
// through ancestors trusted as by open_trusted_root. Throws CacheError
// unless it is a directory owned by this user that group and others cannot
// write to; the message says how to fix it.
util::Dir open_root(const std::filesystem::path& root,
                    const util::Owners& ancestors = util::Owners());

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

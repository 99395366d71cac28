// opweave core (internal): a directory held open by its descriptor.
//
// Everything below the cache root is reached through Dir. Each step opens one
// name relative to a directory that is already open, with O_NOFOLLOW, so no
// symlink below the root is ever followed, and a directory that is renamed
// or replaced after it was opened cannot redirect what comes after. Only
// Dir::open() takes a path and follows symlinks in it: the root itself may
// be a link (~/.cache -> /scratch/cache).
//
// Modes are set with fchmod after creating, so they are exact whatever the
// umask. Low-level results are values: a failed call returns false or
// nothing and leaves errno set, and the cache layer decides what it means.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"

namespace opweave::util {

// Whether a write must reach the disk before it is renamed into place.
enum class Sync { no, yes };

// Whether an item found in the cache may be trusted, from its lstat data.
enum class Trust {
    ok,
    wrong_type,          // a symlink, or a file where a directory belongs (or the reverse)
    foreign_owner,       // owned by another user
    writable_by_others,  // group or others may write to it
};

// The users whose files opweave trusts: this user, plus at most two more
// that a caller names (root, and the shared owner the user configured).
class Owners {
public:
    Owners() = default;  // this user only
    // These owners and `uid`.
    Owners with(uid_t uid) const noexcept;
    bool contains(uid_t uid) const noexcept;

private:
    uid_t m_also[2] = {};
    int m_count = 0;
};

// `st` must describe a directory (want_dir) or a regular file, owned by this
// user and writable by nobody else.
Trust check_trust(const struct stat& st, bool want_dir) noexcept;

// check_trust, where the owner may also be one of `owners` (e.g. the owner
// of a shared, read-only cache that this user chose to read).
Trust check_trust(const struct stat& st, bool want_dir, const Owners& owners) noexcept;

// A short description of a failed check, e.g. "is a symlink", "is owned by
// uid 1001", "is writable by group or others (mode 0777)".
std::string describe_trust(Trust trust, const struct stat& st);

class Dir {
public:
    Dir() = default;
    Dir(Fd fd, std::filesystem::path path) : m_fd(std::move(fd)), m_path(std::move(path)) {}

    // Opens the directory `path`, following symlinks in it. Nothing (errno
    // set) if it cannot be opened as a directory.
    static std::optional<Dir> open(const std::filesystem::path& path);

    int fd() const noexcept { return m_fd.get(); }
    bool valid() const noexcept { return m_fd.valid(); }
    // The path this directory was reached by; for messages and for tools
    // (a compiler) that need a path.
    const std::filesystem::path& path() const noexcept { return m_path; }
    std::filesystem::path path_of(std::string_view name) const { return m_path / std::string(name); }

    // lstat of `name` in this directory; nothing (errno set) if absent.
    std::optional<struct stat> stat(std::string_view name) const;
    // fstat of this directory.
    std::optional<struct stat> stat_self() const;

    // Opens the subdirectory `name` without following a symlink: a symlink
    // gives nothing with errno ELOOP or ENOTDIR.
    std::optional<Dir> open_dir(std::string_view name) const;

    // Creates the subdirectory `name` with exactly `mode`. Returns false with
    // errno EEXIST if something of that name exists.
    bool make_dir(std::string_view name, unsigned mode) const;

    // Opens `name` with `flags` plus O_NOFOLLOW | O_CLOEXEC; a new file gets
    // exactly `mode`. An invalid Fd (errno set) on failure.
    Fd open_file(std::string_view name, int flags, unsigned mode = 0600) const;

    // Writes `content` to `name` atomically: a temporary file with exactly
    // `mode` (flushed to disk with Sync::yes), then renamed over `name`.
    // False (errno set) on failure; the temporary file is removed.
    bool write_file(std::string_view name, std::string_view content, unsigned mode = 0600,
                    Sync sync = Sync::yes) const;

    // The content of the regular file `name`, if it can be opened without
    // following a symlink and holds at most `max_bytes`.
    std::optional<std::string> read_file(std::string_view name,
                                         std::size_t max_bytes = 64u << 20) const;

    // renameat(2) of `name` to `to`/`new_name`. False (errno set) on failure.
    bool rename(std::string_view name, const Dir& to, std::string_view new_name) const noexcept;

    // Removes `name`: a file, a symlink (not what it points to), or a whole
    // tree, never following a symlink. Something that vanishes meanwhile is
    // not an error. False if something could not be removed.
    bool remove(std::string_view name) const noexcept;

    // Sets the modification time of `name` (not following a symlink) to now.
    bool touch(std::string_view name) const noexcept;

    // Sets this directory's own mode.
    bool set_mode(unsigned mode) const noexcept;

    // The names in this directory, sorted, without "." and "..".
    std::vector<std::string> list() const;

    // Flushes this directory (its entries) to disk. Best effort.
    void sync() const noexcept;

private:
    Fd m_fd;
    std::filesystem::path m_path;
};

// Opens the directory `path` (absolute) one name at a time from "/", as
// ssh's StrictModes checks a path: every directory passed through on the way
// (each ancestor, and each directory a symlink on the way leads through)
// must be owned by one of `owners` or root, and writable by nobody else
// unless it is sticky (/tmp). Symlinks are followed (at most 40), but only
// where they sit in such a directory, so nobody else can redirect them. The
// final directory itself is not checked: the caller judges it. On failure,
// nothing, with `problem` saying which directory is wrong and why.
std::optional<Dir> open_through_trusted(const std::filesystem::path& path, const Owners& owners,
                                        std::string& problem);

// Total size in bytes of the regular files below the directory `name` of
// `parent` (0 if it is gone), never following a symlink.
std::uint64_t tree_size(const Dir& parent, std::string_view name) noexcept;

// Modification time of `st` in seconds since the epoch.
double mtime_seconds(const struct stat& st) noexcept;

// "0755"-style text of a mode's permission bits.
std::string octal_mode(unsigned mode);

}  // namespace opweave::util

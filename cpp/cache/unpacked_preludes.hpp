// opweave core (internal): decompressed preludes that the processes of a
// cache share.
//
// A prelude's entry keeps its precompiled header compressed (21 MB as 3 MB,
// see precompiled_header.hpp). Decompressing it and writing the 21 MB took
// a fresh process about 30 ms before its first compile with the prelude, so
// the process that first decompresses a frame (or compresses it, when it
// built the prelude) also links its copy into `v2/unpacked/` as
// `<prelude key>.<SHA-256 of the frame>.<SHA-256 of the copy>.gch`, and a
// later process stages that file by a symbolic link: no read, no write. (A
// hard link would change the copy's ctime, which its version, below, is
// keyed on.)
//
// Trust: the directory is a layout directory (this user's, writable by
// nobody else); a shared copy is used only when it is a regular file of
// this user's that nobody else can write, and a compile that read it is
// kept only once the copy is found to have the SHA-256 its name says, on
// the thread that verifies the prelude's entry while the compile runs.
// That hash goes through the machine's memo of file versions
// (file_digest.hpp, as ccache's inode cache): a copy that has not changed
// since a process hashed it (same inode, size, mtime and ctime, which no
// write leaves as they were) is not read again; so the second process to
// use a copy hashes it, and the later ones only stat it.
//
// Lifetime: a sweep removes the copies whose prelude entry is gone (evicted,
// quarantined, cleared) and all but the newest copy of each key. A copy is
// not an entry: the size limit does not count it (one per prelude entry).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/dir.hpp"

namespace opweave::cache {

inline constexpr const char* k_unpacked_dir = "unpacked";

struct UnpackedCopy {
    std::filesystem::path path;
    std::string sha256;  // of its content, as its name says
};

// The shared copy, in the cache whose version directory is `version`, of the
// frame with SHA-256 `frame_sha256` of the prelude `key`, if there is a
// usable one (see the top); nothing otherwise.
std::optional<UnpackedCopy> find_unpacked(const std::filesystem::path& version,
                                          std::string_view key,
                                          std::string_view frame_sha256) noexcept;

// Writes `content`, the decompression of that frame, as its shared copy,
// and returns it; nothing when it cannot be written there.
std::optional<UnpackedCopy> share_unpacked(const std::filesystem::path& version,
                                           std::string_view key, std::string_view frame_sha256,
                                           std::string_view content) noexcept;

// Whether the regular file `path` has the SHA-256 `sha256` (see the top).
bool has_sha256(const std::filesystem::path& path, const std::string& sha256);

// Removes the shared copies whose prelude entry (in `entries`) is gone, and
// all but the newest copy of each key; returns how many.
std::size_t sweep_unpacked(const util::Dir& version, const util::Dir& entries) noexcept;

}  // namespace opweave::cache

// opweave core (internal): content hashes of files, computed at most once
// per process for each version of a file.
//
// A version of a file is its (device, inode, size, mtime, ctime): writing to
// a file, truncating it or replacing it changes at least one of them (ctime
// cannot be set by a user), so a version verified once need not be hashed
// again in this process. Except within the filesystem clock's current tick,
// when a second write may leave the times as they were: a version that new
// is hashed but not remembered. That keeps a large artifact (a 20 MB precompiled
// header) from being hashed on every use, and the hit path at one hash per
// file per process.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

namespace opweave::cache {

// A timestamp in nanoseconds since the epoch.
std::int64_t ns_of(const struct timespec& time) noexcept;

// The current time as the filesystem's timestamps read it (the kernel's
// coarse clock), in nanoseconds since the epoch.
std::int64_t filesystem_now_ns() noexcept;

// Whether the file `st` describes changed (mtime or ctime) at or after
// `since_ns`, to the filesystem clock's tick: the same tick counts as
// "after", since the times cannot tell. Whole-second timestamps mean a
// coarse filesystem (FAT's are two seconds): then the tick is two seconds.
bool changed_since(const struct stat& st, std::int64_t since_ns) noexcept;

enum class Memo { use, bypass };

// The SHA-256 (64 hex characters) of the open regular file `fd`, whose fstat
// is `st`, read from its start. Nothing on a read error, or when the file
// did not hold st.st_size bytes. With Memo::use, a version hashed before in
// this process is not read again.
std::optional<std::string> file_sha256(int fd, const struct stat& st, Memo memo = Memo::use);

// Records that the file version `st` has content hash `sha256`, as a caller
// that just hashed it knows.
void remember_sha256(const struct stat& st, const std::string& sha256);

}  // namespace opweave::cache

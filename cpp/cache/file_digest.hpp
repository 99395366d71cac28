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
//
// Sources (headers, the files a graph's code came from) may also use the
// machine's memo (Memo::machine): a store that outlives the process, like
// ccache's inode cache, so that a file whose times changed but not its
// content (a checkout, a reinstall) is hashed once per machine, not once per
// process. An entry's own files never do: each process hashes them once,
// so that damage that leaves the times as they were is still found.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
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

enum class Memo {
    use,      // the process's memo
    bypass,   // none: hashed again
    machine,  // the process's memo, then the machine's (set_machine_digests)
};

// The machine's memo of file hashes, by file version.
class MachineDigests {
public:
    virtual ~MachineDigests() = default;
    // The SHA-256 (64 hex characters) kept for the version named `version`
    // (a key: see file_sha256), or nothing.
    virtual std::optional<std::string> find(const std::string& version) = 0;
    // Keeps `sha256` for the version named `version`; best effort.
    virtual void keep(const std::string& version, const std::string& sha256) = 0;
};

// Makes `store` the machine's memo of this process (replacing any other).
void set_machine_digests(std::shared_ptr<MachineDigests> store);

// Stops using `store` as the machine's memo, if it is the one in use.
void clear_machine_digests(const MachineDigests* store) noexcept;

// The SHA-256 (64 hex characters) of the open regular file `fd`, whose fstat
// is `st`, read from its start. Nothing on a read error, or when the file
// did not hold st.st_size bytes. With Memo::use, a version hashed before in
// this process is not read again; with Memo::machine, nor one the machine's
// memo knows (never a version of the filesystem clock's current tick, whose
// content may still change without new times; only files of 64 KiB or
// more, as smaller ones are hashed faster than the memo is read).
std::optional<std::string> file_sha256(int fd, const struct stat& st, Memo memo = Memo::use);

// Records that the file version `st` has content hash `sha256`, as a caller
// that just hashed it knows.
void remember_sha256(const struct stat& st, const std::string& sha256);

}  // namespace opweave::cache

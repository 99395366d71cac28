// opweave core (internal): an exclusive, crash-safe, inter-process file lock.
//
// FileLock takes an flock(2) lock on a file opened close-on-exec. The kernel
// drops the lock when the holder's descriptor closes, including when the
// holder is killed, so a lock can never outlive a crashed process, and a
// compiler spawned while the lock is held does not inherit it, nor does a
// forked child keep it. Locks exclude each other across processes and across
// FileLock objects of one process. One FileLock object is not meant to be
// shared between threads.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "opweave/build_monitor.hpp"
#include "opweave/errors.hpp"

namespace opweave {

class FileLock {
public:
    // Names the lock file; does not open or acquire anything yet. The parent
    // directory must exist; the file is created (mode 0600) on first acquire.
    explicit FileLock(std::filesystem::path path);

    // The lock file `name` in the open directory `dir_fd` (which is
    // duplicated, so the caller may close it), opened without following a
    // symlink. `path` is its path, for messages. Throws CacheError if the
    // descriptor cannot be duplicated.
    FileLock(int dir_fd, std::string name, std::filesystem::path path);
    ~FileLock();

    FileLock(FileLock&& other) noexcept;
    FileLock& operator=(FileLock&& other) noexcept;
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

    // Waits up to `timeout` for the lock; a negative timeout waits forever.
    // Throws LockTimeout (naming the lock file and, where known, the holder's
    // pid) when the time runs out, and CacheError when the file cannot be
    // opened. Does nothing if this object already holds the lock. While it
    // waits it polls `monitor` (Interrupted when it asks to stop) and tells
    // it once when the wait passes BuildMonitor::k_report_wait_seconds.
    void acquire(std::chrono::duration<double> timeout, BuildMonitor* monitor = nullptr);

    // Takes the lock only if it is free right now. Returns whether it is held.
    bool try_acquire();

    // Releases the lock if held. Never throws.
    void release() noexcept;

    // Removes the lock file, then releases the lock, so that lock files do not
    // pile up. Safe against concurrent waiters: a waiter that locked the old,
    // now unlinked, file notices and retries on the new one. Never throws.
    void release_and_remove() noexcept;

    // Whether this process holds the lock through this object. A forked
    // child never holds its parent's locks: it closes their inherited
    // descriptors at fork time, so a lock never outlives its holder.
    bool held() const noexcept;
    const std::filesystem::path& path() const noexcept { return m_path; }

    // The pid written into this lock's file by its current (or last)
    // holder, or 0 when it cannot be read.
    long holder_pid() const noexcept;

    // The pid written into the lock file by its current (or last) holder, or
    // 0 when it cannot be read.
    static long read_holder_pid(const std::filesystem::path& path) noexcept;

private:
    enum class Attempt { acquired, busy, file_replaced };
    Attempt try_once();

    int dir_fd() const noexcept;

    std::filesystem::path m_path;
    int m_dir = -1;       // owned; -1: m_name is a path
    std::string m_name;   // relative to m_dir, or a path
    int m_fd = -1;
    long m_owner_pid = 0;  // the process that acquired m_fd
};

}  // namespace opweave

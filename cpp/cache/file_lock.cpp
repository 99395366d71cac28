// opweave core: FileLock (see cpp/cache/file_lock.hpp).
//
// Protocol, and the races it handles:
//
//  1. Open (O_CREAT | O_CLOEXEC) and flock(LOCK_EX | LOCK_NB). flock has no
//     timeout, so a blocking acquire polls with a short, growing sleep. The
//     sleep is capped at k_max_poll so that a waiter notices within a few
//     milliseconds that a killed holder's lock was dropped by the kernel.
//  2. A holder may unlink the lock file before releasing it
//     (release_and_remove). A waiter that opened the old file then gets the
//     lock on an inode that no longer has a name, while a third process may
//     create a new file under the same name and lock that. To prevent two
//     holders, after locking we compare the inode of our descriptor with the
//     inode the path names now; on a mismatch we drop the lock and retry.
//  3. The holder writes its pid into the file so that a waiter that times out
//     can say who holds the lock. The pid can be stale for an instant (between
//     another holder's flock and its write); it is only used in messages.
//  4. fork(). An flock belongs to the open file description, and a forked
//     child inherits a descriptor of it (close-on-exec only helps at exec).
//     The child would then "hold" the parent's lock too, and would keep it
//     held after the parent dies. So every held descriptor is registered
//     with the fork guard (util/fork_guard.hpp), which closes the child's
//     copies; a FileLock also remembers the pid that acquired it and is not
//     held in any other.
#include "cache/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "util/fork_guard.hpp"

namespace opweave {

namespace {

constexpr auto k_first_poll = std::chrono::microseconds(200);
constexpr auto k_max_poll = std::chrono::milliseconds(10);
// How often a waiter polls its BuildMonitor.
constexpr auto k_monitor_interval = std::chrono::milliseconds(50);

long read_pid_at(int dir_fd, const char* name) noexcept;

bool same_inode(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void write_pid(int fd) {
    const std::string text = std::to_string(static_cast<long>(::getpid())) + "\n";
    // Best effort: the pid only improves error messages.
    if (::ftruncate(fd, 0) == 0) {
        ssize_t ignored = ::pwrite(fd, text.data(), text.size(), 0);
        (void)ignored;
    }
}

}  // namespace

FileLock::FileLock(std::filesystem::path path) : m_path(std::move(path)), m_name(m_path.string()) {}

FileLock::FileLock(int dir_fd, std::string name, std::filesystem::path path)
    : m_path(std::move(path)), m_name(std::move(name)) {
    m_dir = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (m_dir < 0) {
        throw CacheError("cannot use the directory of lock " + m_path.string() + ": " +
                             std::strerror(errno),
                         m_path);
    }
}

FileLock::~FileLock() {
    release();
    if (m_dir >= 0) {
        ::close(m_dir);
    }
}

FileLock::FileLock(FileLock&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_dir(std::exchange(other.m_dir, -1)),
      m_name(std::move(other.m_name)),
      m_fd(std::exchange(other.m_fd, -1)),
      m_owner_pid(std::exchange(other.m_owner_pid, 0)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
    if (this != &other) {
        release();
        if (m_dir >= 0) {
            ::close(m_dir);
        }
        m_path = std::move(other.m_path);
        m_dir = std::exchange(other.m_dir, -1);
        m_name = std::move(other.m_name);
        m_fd = std::exchange(other.m_fd, -1);
        m_owner_pid = std::exchange(other.m_owner_pid, 0);
    }
    return *this;
}

int FileLock::dir_fd() const noexcept { return m_dir >= 0 ? m_dir : AT_FDCWD; }

FileLock::Attempt FileLock::try_once() {
    const int fd = ::openat(dir_fd(), m_name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                            0600);
    if (fd < 0) {
        throw CacheError("cannot open lock file " + m_path.string() + ": " +
                             std::strerror(errno),
                         m_path);
    }
    int rc;
    do {
        rc = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        const int saved = errno;
        ::close(fd);
        if (saved == EWOULDBLOCK) {
            return Attempt::busy;
        }
        throw CacheError("cannot lock " + m_path.string() + ": " + std::strerror(saved), m_path);
    }
    // Race 2: is the file we locked still the one the path names?
    struct stat by_fd {};
    struct stat by_path {};
    if (::fstat(fd, &by_fd) != 0 ||
        ::fstatat(dir_fd(), m_name.c_str(), &by_path, AT_SYMLINK_NOFOLLOW) != 0 ||
        !same_inode(by_fd, by_path)) {
        ::close(fd);
        return Attempt::file_replaced;
    }
    // The umask may have narrowed the mode of a file we created (even to
    // 0000, which would lock out our own next open): make it exact.
    if ((by_fd.st_mode & 07777) != 0600 && by_fd.st_uid == ::geteuid()) {
        ::fchmod(fd, 0600);
    }
    write_pid(fd);
    util::close_in_forked_children(fd);
    m_fd = fd;
    m_owner_pid = static_cast<long>(::getpid());
    return Attempt::acquired;
}

bool FileLock::try_acquire() {
    if (held()) {
        return true;
    }
    // A replaced file (race 2) is retried at once; a held lock is not.
    Attempt attempt;
    do {
        attempt = try_once();
    } while (attempt == Attempt::file_replaced);
    return attempt == Attempt::acquired;
}

void FileLock::acquire(std::chrono::duration<double> timeout, BuildMonitor* monitor) {
    if (held()) {
        return;
    }
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto sleep = std::chrono::duration_cast<clock::duration>(k_first_poll);
    auto next_poll = start + k_monitor_interval;
    bool reported = false;
    while (try_once() != Attempt::acquired) {
        const auto now = clock::now();
        const double waited = std::chrono::duration<double>(now - start).count();
        if (timeout.count() >= 0 && now - start >= timeout) {
            throw LockTimeout(m_path, waited, holder_pid());
        }
        if (monitor != nullptr && now >= next_poll) {
            next_poll = now + k_monitor_interval;
            if (monitor->interrupted()) {
                throw Interrupted("interrupted while waiting for lock " + m_path.string());
            }
            if (!reported && waited >= BuildMonitor::k_report_wait_seconds) {
                reported = true;
                monitor->waiting_for_lock(m_path, holder_pid(), waited);
            }
        }
        std::this_thread::sleep_for(sleep);
        sleep = std::min<clock::duration>(sleep * 2, k_max_poll);
    }
}

bool FileLock::held() const noexcept {
    return m_fd >= 0 && m_owner_pid == static_cast<long>(::getpid());
}

void FileLock::release() noexcept {
    if (m_fd < 0) {
        return;
    }
    if (m_owner_pid == static_cast<long>(::getpid())) {
        util::keep_in_forked_children(m_fd);
        ::close(m_fd);  // closing the only descriptor drops the flock
    }
    // Else we are a forked child: the atfork handler already closed our copy,
    // and the number may now name another file. Forget it.
    m_fd = -1;
    m_owner_pid = 0;
}

void FileLock::release_and_remove() noexcept {
    if (held()) {
        // Unlink while still holding the lock: see race 2 in the file comment.
        ::unlinkat(dir_fd(), m_name.c_str(), 0);
    }
    release();
}

long FileLock::holder_pid() const noexcept {
    return read_pid_at(dir_fd(), m_name.c_str());
}

long FileLock::read_holder_pid(const std::filesystem::path& path) noexcept {
    return read_pid_at(AT_FDCWD, path.c_str());
}

namespace {

long read_pid_at(int dir_fd, const char* name) noexcept {
    const int fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return 0;
    }
    char buffer[32] = {};
    const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
    ::close(fd);
    if (n <= 0) {
        return 0;
    }
    char* end = nullptr;
    const long pid = std::strtol(buffer, &end, 10);
    return (end != buffer && pid > 0) ? pid : 0;
}

}  // namespace

}  // namespace opweave

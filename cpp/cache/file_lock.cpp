// opweave core: FileLock (see include/opweave/file_lock.hpp).
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
#include "opweave/file_lock.hpp"

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

namespace opweave {

namespace {

constexpr auto k_first_poll = std::chrono::microseconds(200);
constexpr auto k_max_poll = std::chrono::milliseconds(10);

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

FileLock::FileLock(std::filesystem::path path) : m_path(std::move(path)) {}

FileLock::~FileLock() { release(); }

FileLock::FileLock(FileLock&& other) noexcept
    : m_path(std::move(other.m_path)), m_fd(std::exchange(other.m_fd, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
    if (this != &other) {
        release();
        m_path = std::move(other.m_path);
        m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
}

FileLock::Attempt FileLock::try_once() {
    const int fd = ::open(m_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
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
    if (::fstat(fd, &by_fd) != 0 || ::stat(m_path.c_str(), &by_path) != 0 ||
        !same_inode(by_fd, by_path)) {
        ::close(fd);
        return Attempt::file_replaced;
    }
    write_pid(fd);
    m_fd = fd;
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

void FileLock::acquire(std::chrono::duration<double> timeout) {
    if (held()) {
        return;
    }
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto sleep = std::chrono::duration_cast<clock::duration>(k_first_poll);
    while (try_once() != Attempt::acquired) {
        const auto waited = clock::now() - start;
        if (timeout.count() >= 0 && waited >= timeout) {
            const double seconds = std::chrono::duration<double>(waited).count();
            throw LockTimeout(m_path, seconds, read_holder_pid(m_path));
        }
        std::this_thread::sleep_for(sleep);
        sleep = std::min<clock::duration>(sleep * 2, k_max_poll);
    }
}

void FileLock::release() noexcept {
    if (m_fd >= 0) {
        ::close(m_fd);  // closing the only descriptor drops the flock
        m_fd = -1;
    }
}

void FileLock::release_and_remove() noexcept {
    if (m_fd >= 0) {
        // Unlink while still holding the lock: see race 2 in the file comment.
        ::unlink(m_path.c_str());
        release();
    }
}

long FileLock::read_holder_pid(const std::filesystem::path& path) noexcept {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
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

}  // namespace opweave

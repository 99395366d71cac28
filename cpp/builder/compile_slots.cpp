// opweave core (internal): compile slots (see compile_slots.hpp).
//
// How a slot is taken, and the races this handles:
//
//  1. A process opens each slot file of a directory once (O_RDWR | O_CREAT,
//     with O_CLOEXEC and O_NOFOLLOW, mode 0600) and keeps it open for its
//     life, in a SlotTable that its threads share. An flock lock belongs to
//     an open file description, so through a shared descriptor two threads
//     of one process would not exclude each other: the table marks, under
//     its mutex, the slots that a thread of this process holds, and tries
//     only the others. A slot is freed with LOCK_UN; the descriptor stays
//     open for the next taker. Open descriptors: one per slot per process,
//     however many threads wait.
//  2. Waiting. flock has no timeout, and a blocking flock could not stop to
//     poll the monitor, so a waiter tries every slot (LOCK_EX | LOCK_NB),
//     starting at pid % jobs so that processes rarely try the same busy one
//     first, then sleeps k_poll. It takes a freed slot within k_poll (plus
//     a scheduler tick) for `jobs` system calls per poll, and no files are
//     opened while it waits.
//  3. fork(). A forked child gets copies of every descriptor; one of a held
//     slot would keep the slot held after the parent frees it or dies. Every
//     slot descriptor is registered with the fork guard (util/fork_guard.hpp),
//     which closes the child's copies, and a CompileSlot frees nothing in a
//     process other than the one that took it. The child makes its own
//     tables: the parent's mutexes may be held by threads the child lacks.
//  4. A slot file removed while open (a cleaner of /tmp): a lock on it no
//     longer excludes a process that opens the name afresh. After locking,
//     the file's link count is checked; a removed file is reopened and tried
//     again. (A file removed while held only lets one more compiler run for
//     a while: the slots limit load, they guard no data.)
//  5. The slot directory removed and made again: it has a new inode, so a
//     new table. The old table's descriptors stay open (a few, once).
//  6. The holder writes its pid into the file, only so that a waiter that
//     times out can say who holds it; it can be stale for an instant.
#include "builder/compile_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "builder/slot_dir.hpp"
#include "opweave/errors.hpp"
#include "util/cpu_count.hpp"
#include "util/fork_guard.hpp"

namespace opweave::builder {

namespace {

// How often a waiter tries the slots again (race 2). A freed slot is taken
// well within 100 ms; 40 tries a second cost a few microseconds each.
constexpr auto k_poll = std::chrono::milliseconds(25);
// How often a waiter polls its BuildMonitor: within the 100 ms it promises,
// and not at every try, since a Python monitor takes the GIL to check for
// signals.
constexpr auto k_monitor_interval = std::chrono::milliseconds(50);
// Tries of one slot whose file keeps being removed (race 4).
constexpr int k_reopen_tries = 3;

std::string slot_name(int index) { return "compile-slot-" + std::to_string(index) + ".lock"; }

}  // namespace

// The slot files of one directory, open in this process (race 1).
class SlotTable {
public:
    explicit SlotTable(const util::Dir& dir)
        : m_dir(util::Fd(::fcntl(dir.fd(), F_DUPFD_CLOEXEC, 0)), dir.path()) {
        if (!m_dir.valid()) {
            throw CacheError("cannot use the compile slot directory " + dir.path().string() +
                                 ": " + std::strerror(errno),
                             dir.path());
        }
    }

    // Takes a slot among the first `jobs` that no process holds, trying
    // them from `first` on: its index, or -1 when all are busy. Throws
    // CacheError when a slot file cannot be opened or locked.
    int try_take(int jobs, int first) {
        const std::lock_guard<std::mutex> guard(m_mutex);
        if (m_fds.size() < static_cast<std::size_t>(jobs)) {
            m_fds.resize(static_cast<std::size_t>(jobs), -1);
            m_taken.resize(static_cast<std::size_t>(jobs), false);
        }
        for (int k = 0; k < jobs; ++k) {
            const auto index = static_cast<std::size_t>((first + k) % jobs);
            if (!m_taken[index] && lock(index)) {
                m_taken[index] = true;
                write_pid(m_fds[index]);
                return static_cast<int>(index);
            }
        }
        return -1;
    }

    // Frees the slot `index` that try_take() gave. Never throws.
    void give_back(int index) noexcept {
        const std::lock_guard<std::mutex> guard(m_mutex);
        const auto at = static_cast<std::size_t>(index);
        ::flock(m_fds[at], LOCK_UN);
        m_taken[at] = false;
    }

    std::filesystem::path path_of(int index) const { return m_dir.path_of(slot_name(index)); }

    // The pid the last holder of slot `index` wrote, or 0 if unknown.
    long holder_pid(int index) {
        const std::lock_guard<std::mutex> guard(m_mutex);
        const auto at = static_cast<std::size_t>(index);
        if (at >= m_fds.size() || m_fds[at] < 0) {
            return 0;
        }
        char text[32] = {};
        const ssize_t n = ::pread(m_fds[at], text, sizeof(text) - 1, 0);
        const long pid = n > 0 ? std::strtol(text, nullptr, 10) : 0;
        return pid > 0 ? pid : 0;
    }

private:
    // Locks slot `index` if it is free, opening its file on first use and
    // again when it was removed (race 4).
    bool lock(std::size_t index) {
        int& fd = m_fds[index];
        for (int attempt = 0; attempt < k_reopen_tries; ++attempt) {
            if (fd < 0) {
                fd = open_slot(static_cast<int>(index));
            }
            int rc;
            do {
                rc = ::flock(fd, LOCK_EX | LOCK_NB);
            } while (rc != 0 && errno == EINTR);
            if (rc != 0) {
                if (errno == EWOULDBLOCK) {
                    return false;
                }
                throw CacheError("cannot lock " + path_of(static_cast<int>(index)).string() +
                                     ": " + std::strerror(errno),
                                 path_of(static_cast<int>(index)));
            }
            struct stat st {};
            if (::fstat(fd, &st) == 0 && st.st_nlink > 0) {
                return true;
            }
            ::flock(fd, LOCK_UN);
            util::keep_in_forked_children(fd);
            ::close(fd);
            fd = -1;
        }
        return false;
    }

    int open_slot(int index) {
        util::Fd file = m_dir.open_file(slot_name(index), O_RDWR | O_CREAT, 0600);
        if (!file) {
            throw CacheError("cannot open compile slot file " + path_of(index).string() + ": " +
                                 std::strerror(errno),
                             path_of(index));
        }
        util::close_in_forked_children(file.get());
        return file.release();
    }

    static void write_pid(int fd) noexcept {
        const std::string text = std::to_string(static_cast<long>(::getpid())) + "\n";
        if (::ftruncate(fd, 0) == 0) {
            const ssize_t ignored = ::pwrite(fd, text.data(), text.size(), 0);
            (void)ignored;  // best effort: the pid only improves messages
        }
    }

    std::mutex m_mutex;
    util::Dir m_dir;
    std::vector<int> m_fds;     // -1: not open yet
    std::vector<bool> m_taken;  // by a thread of this process
};

namespace {

// This process's tables, by the device and inode of their directory. Made
// once per process (race 3) and never freed: a CompileSlot may outlive
// anything else.
struct Tables {
    long pid = 0;
    std::mutex mutex;
    std::map<std::pair<dev_t, ino_t>, SlotTable*> by_dir;
};

std::atomic<Tables*> g_tables{nullptr};

Tables& tables() {
    const long pid = static_cast<long>(::getpid());
    Tables* current = g_tables.load();
    while (current == nullptr || current->pid != pid) {
        auto* fresh = new Tables();
        fresh->pid = pid;
        if (g_tables.compare_exchange_strong(current, fresh)) {
            return *fresh;  // a parent's tables, if any, are left as they are
        }
        delete fresh;
    }
    return *current;
}

SlotTable& table_for(const util::Dir& dir) {
    const std::optional<struct stat> st = dir.stat_self();
    if (!st) {
        throw CacheError("cannot access the compile slot directory " + dir.path().string() +
                             ": " + std::strerror(errno),
                         dir.path());
    }
    Tables& all = tables();
    const std::lock_guard<std::mutex> guard(all.mutex);
    SlotTable*& table = all.by_dir[{st->st_dev, st->st_ino}];
    if (table == nullptr) {
        table = new SlotTable(dir);
    }
    return *table;
}

}  // namespace

int compile_jobs(int requested) noexcept {
    return requested > 0 ? requested : util::usable_cpus();
}

CompileSlot::CompileSlot(const util::Dir& slots, int jobs, double timeout,
                         BuildMonitor* monitor)
    : m_table(&table_for(slots)) {
    jobs = compile_jobs(jobs);
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const int first = static_cast<int>(::getpid() % jobs);
    auto next_monitor_poll = start;
    bool reported = false;
    for (;;) {
        m_index = m_table->try_take(jobs, first);
        if (m_index >= 0) {
            m_owner_pid = static_cast<long>(::getpid());
            return;
        }
        const auto now = clock::now();
        const double waited = std::chrono::duration<double>(now - start).count();
        if (timeout >= 0 && waited >= timeout) {
            throw LockTimeout(m_table->path_of(first), waited, m_table->holder_pid(first));
        }
        if (monitor != nullptr && now >= next_monitor_poll) {
            next_monitor_poll = now + k_monitor_interval;
            if (monitor->interrupted()) {
                throw Interrupted("interrupted while waiting for a compile slot in " +
                                  slots.path().string());
            }
            if (!reported && waited >= BuildMonitor::k_report_wait_seconds) {
                reported = true;
                monitor->waiting_for_lock(m_table->path_of(first), m_table->holder_pid(first),
                                          waited);
            }
        }
        std::this_thread::sleep_for(k_poll);
    }
}

CompileSlot::CompileSlot(const ModuleCache& cache, BuildMonitor* monitor)
    : CompileSlot(open_slot_dir(slot_dir_choice(cache.options(), cache.root())),
                  cache.options().compile_jobs, cache.options().lock_timeout_seconds, monitor) {}

CompileSlot::~CompileSlot() { release(); }

std::filesystem::path CompileSlot::path() const { return m_table->path_of(m_index); }

void CompileSlot::release() noexcept {
    if (m_owner_pid == static_cast<long>(::getpid())) {
        m_table->give_back(m_index);
    }
    m_owner_pid = 0;
}

}  // namespace opweave::builder

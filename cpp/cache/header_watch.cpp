// opweave core (internal): the header watch (see header_watch.hpp).
//
// One state for the process, behind a mutex that a WatchedHeaders holds.
// Its two descriptors are close-on-exec, and a forked child closes its
// copies (util/fork_guard.hpp): the child starts a queue of its own, so it
// never reads, and takes away, an event its parent is waiting for.
#include "cache/header_watch.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "util/fd.hpp"
#include "util/fork_guard.hpp"

namespace opweave::cache {

namespace {

// Filesystems whose every change passes through this kernel (statfs's
// f_type); on others a file may change where no notification is sent.
constexpr long k_local_filesystems[] = {
    0xEF53,      // ext2, ext3, ext4
    0x58465342,  // xfs
    0x9123683E,  // btrfs
    0x01021994,  // tmpfs
    0x858458F6,  // ramfs
    0x794C7630,  // overlayfs
    0xF2F52010,  // f2fs
    0x2FC12FC1,  // zfs
    0x73717368,  // squashfs
};

// A header file: its content, times, links, or the file itself moved away.
constexpr std::uint32_t k_file_events =
    IN_MODIFY | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF | IN_DONT_FOLLOW;
// A directory on a header's path: an entry created, removed, renamed or
// given new attributes (only the names on a watched path count), or the
// directory itself moved.
constexpr std::uint32_t k_dir_events = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                       IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR |
                                       IN_DONT_FOLLOW;
constexpr std::size_t k_event_buffer = 16 * 1024;

struct Known {
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    std::string sha256;

    bool matches(const HeaderRecord& header) const {
        return size == header.size && mtime_ns == header.mtime_ns &&
               ctime_ns == header.ctime_ns && sha256 == header.sha256;
    }
};

struct State {
    std::mutex mutex;
    pid_t pid = 0;     // the process whose queue this is
    util::Fd queue;    // inotify, non-blocking
    util::Fd mounts;   // /proc/self/mounts, polled for mount table changes
    std::unordered_map<std::string, Known> known;  // header path -> what it was found to be
    std::unordered_map<std::string, int> seen;     // path -> sightings before it is watched
    std::unordered_map<std::string, int> dirs;     // directory -> its watch, -1: not watchable
    std::unordered_map<int, std::set<std::string>> names;  // directory watch -> names on paths
    std::set<int> files;                                   // header file watches
};

// Never destroyed, so that it outlives every user, even at exit. A fork
// waits for a check in another thread to end (so that the child's copy of
// the mutex is not held by a thread the child does not have).
State& state() {
    static State* watched = [] {
        ::pthread_atfork([] { state().mutex.lock(); }, [] { state().mutex.unlock(); },
                         [] { state().mutex.unlock(); });
        return new State();
    }();
    return *watched;
}

void close_registered(util::Fd& fd) {
    if (fd) {
        util::keep_in_forked_children(fd.get());
        fd.reset();
    }
}

// Forgets everything, and closes the queue (the kernel drops its watches).
void start_over(State& s) {
    s.known.clear();
    s.seen.clear();
    s.dirs.clear();
    s.names.clear();
    s.files.clear();
    close_registered(s.queue);
    close_registered(s.mounts);
}

// Whether the queue is open; in a forked child, after forgetting the
// parent's.
bool queue_open(State& s) {
    if (s.pid != ::getpid()) {
        // A forked child: the fork guard closed the parent's descriptors
        // in it, so the numbers are not ours to close.
        s.queue.release();
        s.mounts.release();
        start_over(s);
        s.pid = ::getpid();
    }
    return static_cast<bool>(s.queue);
}

// Whether the queue is open (opened if need be: only to watch a header,
// see header_watch.hpp on what an open queue costs at exit).
bool open_queue(State& s) {
    if (queue_open(s)) {
        return true;
    }
    util::Fd queue(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    util::Fd mounts(::open("/proc/self/mounts", O_RDONLY | O_CLOEXEC));
    if (!queue || !mounts) {
        return false;  // e.g. inotify's limit of instances per user: stat instead
    }
    util::close_in_forked_children(queue.get());
    s.queue = std::move(queue);
    util::close_in_forked_children(mounts.get());
    s.mounts = std::move(mounts);
    return true;
}

// What an event means: nothing (a name off every watched path), that some
// header changed (forget what is known), or that a watch may no longer
// follow its path (start over).
enum class Meaning { nothing, changed, moved };

Meaning meaning(const State& s, const struct inotify_event& event) {
    if ((event.mask & (IN_Q_OVERFLOW | IN_IGNORED)) != 0) {
        return Meaning::moved;
    }
    if (s.files.count(event.wd) != 0) {
        return (event.mask & (IN_MOVE_SELF | IN_DELETE_SELF)) != 0 ? Meaning::moved
                                                                   : Meaning::changed;
    }
    const auto dir = s.names.find(event.wd);
    if (dir == s.names.end() || event.len == 0) {
        return Meaning::moved;  // an unknown watch, or the directory itself
    }
    return dir->second.count(event.name) != 0 ? Meaning::moved : Meaning::nothing;
}

// Reads the events that arrived since the last check, and the mount table's
// state, and forgets what they may have changed.
void catch_up(State& s) {
    struct pollfd table = {s.mounts.get(), POLLPRI, 0};
    if (::poll(&table, 1, 0) != 0) {  // a mount or an unmount, or an error
        start_over(s);
        return;
    }
    alignas(struct inotify_event) char buffer[k_event_buffer];
    for (;;) {
        const ssize_t n = ::read(s.queue.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN) {
                start_over(s);
            }
            return;
        }
        // The kernel pads each event's name so that the next one is aligned.
        for (ssize_t at = 0; at < n;) {
            const auto* event = reinterpret_cast<const struct inotify_event*>(buffer + at);
            const Meaning found = meaning(s, *event);
            if (found == Meaning::moved) {
                start_over(s);
                return;
            }
            if (found == Meaning::changed) {
                s.known.clear();
            }
            at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
        }
    }
}

bool is_local(const std::string& dir) {
    struct statfs fs {};
    if (::statfs(dir.c_str(), &fs) != 0) {
        return false;
    }
    const long type = static_cast<long>(fs.f_type);
    return std::find(std::begin(k_local_filesystems), std::end(k_local_filesystems), type) !=
           std::end(k_local_filesystems);
}

bool is_canonical(const std::string& dir) {
    const std::unique_ptr<char, decltype(&::free)> real(::realpath(dir.c_str(), nullptr), &::free);
    return real != nullptr && dir == real.get();
}

// Watches `dir` (absolute) and every directory above it; its watch, or -1.
int watch_dir(State& s, const std::string& dir) {
    const auto found = s.dirs.find(dir);
    if (found != s.dirs.end()) {
        return found->second;
    }
    int& wd = s.dirs[dir];
    wd = -1;
    if (!is_canonical(dir) || !is_local(dir)) {
        return wd;
    }
    // "/usr/include": "/" watched for "usr", "/usr" for "include".
    std::size_t end = 0;
    std::string parent = "/";
    while (end != std::string::npos && end + 1 < dir.size()) {
        const std::size_t next = dir.find('/', end + 1);
        const int parent_wd = ::inotify_add_watch(s.queue.get(), parent.c_str(), k_dir_events);
        if (parent_wd < 0) {
            return wd;
        }
        s.names[parent_wd].insert(dir.substr(end + 1, next - end - 1));
        parent = dir.substr(0, next);
        end = next;
    }
    wd = ::inotify_add_watch(s.queue.get(), dir.c_str(), k_dir_events);
    if (wd >= 0) {
        s.names[wd];  // a directory watch, with no names yet
    }
    return wd;
}

}  // namespace

WatchedHeaders::WatchedHeaders() {
    State& s = state();
    s.mutex.lock();
    if (queue_open(s)) {
        catch_up(s);
    }
}

WatchedHeaders::~WatchedHeaders() { state().mutex.unlock(); }

bool WatchedHeaders::known(const HeaderRecord& header) const {
    const State& s = state();
    const auto found = s.known.find(header.path);
    return found != s.known.end() && found->second.matches(header);
}

bool WatchedHeaders::watch(const std::string& path) {
    State& s = state();
    if (int& sightings = s.seen[path]; sightings < k_sightings_before_watch - 1) {
        ++sightings;
        return false;
    }
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash + 1 == path.size() || !open_queue(s)) {
        return false;
    }
    const int dir_wd = watch_dir(s, slash == 0 ? std::string("/") : path.substr(0, slash));
    if (dir_wd < 0) {
        return false;
    }
    const int wd = ::inotify_add_watch(s.queue.get(), path.c_str(), k_file_events);
    if (wd < 0) {
        return false;
    }
    s.names[dir_wd].insert(path.substr(slash + 1));
    s.files.insert(wd);
    return true;
}

void WatchedHeaders::verified(const HeaderRecord& header) {
    state().known[header.path] = {header.size, header.mtime_ns, header.ctime_ns, header.sha256};
}

}  // namespace opweave::cache

// opweave core (internal): the fork guard (see fork_guard.hpp).
#include "util/fork_guard.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace opweave::util {

namespace {

// Allocated once and never freed, so that it outlives every lock, even one
// released during static destruction.
struct Registered {
    std::mutex mutex;
    std::vector<int> fds;
};

Registered& registered() {
    static Registered* fds = new Registered();
    return *fds;
}

// Runs in the child, in the thread that forked; the prepare handler locked
// the mutex in that thread, so the list is consistent.
void close_in_child() {
    Registered& list = registered();
    for (const int fd : list.fds) {
        ::close(fd);
    }
    list.fds.clear();
    list.mutex.unlock();
}

}  // namespace

void close_in_forked_children(int fd) {
    static std::once_flag atfork_once;
    std::call_once(atfork_once, [] {
        ::pthread_atfork([] { registered().mutex.lock(); },
                         [] { registered().mutex.unlock(); }, close_in_child);
    });
    std::lock_guard<std::mutex> guard(registered().mutex);
    registered().fds.push_back(fd);
}

void keep_in_forked_children(int fd) noexcept {
    std::lock_guard<std::mutex> guard(registered().mutex);
    auto& fds = registered().fds;
    fds.erase(std::remove(fds.begin(), fds.end(), fd), fds.end());
}

}  // namespace opweave::util

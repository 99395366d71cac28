// opweave core: run_parallel (see parallel.hpp).
#include "util/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "opweave/errors.hpp"

namespace opweave::util {

namespace {

constexpr auto k_poll = std::chrono::milliseconds(50);

struct LockWait {
    std::filesystem::path path;
    long holder_pid = 0;
    double waited = 0.0;
};

// What the threads share: the stop flag, the results and the lock-wait
// reports not yet forwarded.
class Shared final : public BuildMonitor {
public:
    explicit Shared(std::size_t n_tasks) : errors(n_tasks) {}

    bool interrupted() override { return stop.load(); }

    void waiting_for_lock(const std::filesystem::path& lock_path, long holder_pid,
                          double waited_seconds) override {
        const std::lock_guard<std::mutex> guard(mutex);
        waits.push_back({lock_path, holder_pid, waited_seconds});
    }

    std::atomic<bool> stop{false};
    std::atomic<std::size_t> next{0};
    std::vector<std::exception_ptr> errors;
    std::mutex mutex;
    std::condition_variable finished;
    int running = 0;
    std::vector<LockWait> waits;
};

void work(const std::vector<Task>& tasks, Shared& shared) {
    for (;;) {
        const std::size_t index = shared.next.fetch_add(1);
        if (index >= tasks.size() || shared.stop.load()) {
            break;
        }
        try {
            tasks[index](&shared);
        } catch (...) {
            shared.errors[index] = std::current_exception();
            shared.stop.store(true);
        }
    }
    const std::lock_guard<std::mutex> guard(shared.mutex);
    --shared.running;
    shared.finished.notify_all();
}

// Forwards the lock waits reported so far; returns whether `monitor` asks
// to stop.
bool poll(Shared& shared, BuildMonitor* monitor, std::unique_lock<std::mutex>& lock) {
    std::vector<LockWait> waits;
    waits.swap(shared.waits);
    lock.unlock();
    bool stop = false;
    if (monitor != nullptr) {
        for (const LockWait& wait : waits) {
            monitor->waiting_for_lock(wait.path, wait.holder_pid, wait.waited);
        }
        stop = monitor->interrupted();
    }
    lock.lock();
    return stop;
}

}  // namespace

void run_parallel(const std::vector<Task>& tasks, int threads, BuildMonitor* monitor) {
    if (tasks.empty()) {
        return;
    }
    Shared shared(tasks.size());
    const int n = std::max(1, std::min(threads, static_cast<int>(tasks.size())));
    std::vector<std::thread> pool;
    bool interrupted = false;
    {
        std::unique_lock<std::mutex> lock(shared.mutex);
        shared.running = n;
        for (int k = 0; k < n; ++k) {
            pool.emplace_back(work, std::cref(tasks), std::ref(shared));
        }
        while (shared.running > 0) {
            shared.finished.wait_for(lock, k_poll);
            if (!interrupted && poll(shared, monitor, lock)) {
                interrupted = true;
                shared.stop.store(true);
            }
        }
    }
    for (std::thread& thread : pool) {
        thread.join();
    }
    if (interrupted) {
        throw Interrupted("interrupted while compiling units");
    }
    // The first real failure; a task stopped because another failed throws
    // Interrupted, which only says that.
    std::exception_ptr stopped;
    for (const std::exception_ptr& error : shared.errors) {
        if (!error) {
            continue;
        }
        try {
            std::rethrow_exception(error);
        } catch (const Interrupted&) {
            stopped = stopped ? stopped : error;
        } catch (...) {
            throw;
        }
    }
    if (stopped) {
        std::rethrow_exception(stopped);
    }
}

}  // namespace opweave::util

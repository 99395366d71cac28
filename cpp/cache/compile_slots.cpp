// opweave core: compile slots (see compile_slots.hpp).
#include "cache/compile_slots.hpp"

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "cache/layout.hpp"
#include "cache/module_cache_impl.hpp"
#include "opweave/errors.hpp"
#include "util/cpu_count.hpp"

namespace opweave::cache {

namespace {

constexpr auto k_poll = std::chrono::milliseconds(10);

std::string slot_name(int index) { return "compile-slot-" + std::to_string(index) + ".lock"; }

}  // namespace

int compile_jobs(int requested) noexcept {
    return requested > 0 ? requested : util::usable_cpus();
}

CompileSlot::CompileSlot(const std::filesystem::path& root, int jobs, double timeout,
                         BuildMonitor* monitor) {
    jobs = compile_jobs(jobs);
    const Places places = open_places(root, nullptr);
    const util::Dir locks = require_layout_dir(places.version, k_locks_dir, nullptr);
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    // Processes start at different slots, so that they rarely try the same
    // busy one first.
    const int first = static_cast<int>(::getpid() % jobs);
    bool reported = false;
    for (;;) {
        for (int k = 0; k < jobs; ++k) {
            const int index = (first + k) % jobs;
            FileLock lock(locks.fd(), slot_name(index), locks.path_of(slot_name(index)));
            if (lock.try_acquire()) {
                m_lock.emplace(std::move(lock));
                m_index = index;
                return;
            }
        }
        const double waited = std::chrono::duration<double>(clock::now() - start).count();
        const std::filesystem::path first_slot = locks.path_of(slot_name(first));
        if (timeout >= 0 && waited >= timeout) {
            throw LockTimeout(first_slot, waited, FileLock::read_holder_pid(first_slot));
        }
        if (monitor != nullptr) {
            if (monitor->interrupted()) {
                throw Interrupted("interrupted while waiting for a compile slot in " +
                                  locks.path().string());
            }
            if (!reported && waited >= BuildMonitor::k_report_wait_seconds) {
                reported = true;
                monitor->waiting_for_lock(first_slot, FileLock::read_holder_pid(first_slot),
                                          waited);
            }
        }
        std::this_thread::sleep_for(k_poll);
    }
}

CompileSlot::~CompileSlot() {
    if (m_lock) {
        m_lock->release();
    }
}

}  // namespace opweave::cache

// opweave core (internal): the machine-wide limit on concurrent compiler
// processes.
//
// Every compiler run of a build holds one of `jobs` slots, lock files
// `compile-slot-<i>.lock` in the cache's lock directory. Processes that
// share a cache share its slots, so eight processes that each compile units
// in parallel still run at most `jobs` compilers at once. A slot is an
// flock(2) lock: a killed holder frees it at once.
#pragma once

#include <filesystem>
#include <optional>

#include "opweave/build_monitor.hpp"
#include "opweave/file_lock.hpp"
#include "opweave/module_cache.hpp"

namespace opweave::cache {

// `requested`, or, when it is 0 or less, the number of CPUs this process
// may use (util::usable_cpus(): its affinity mask, limited by a cgroup CPU
// quota). At least 1.
int compile_jobs(int requested) noexcept;

class CompileSlot {
public:
    // Takes a free slot of `jobs` (see compile_jobs()) under the cache at
    // `root`, waiting while all are busy, at most `timeout` seconds (then
    // LockTimeout). Polls `monitor` (Interrupted) and tells it once when
    // the wait passes BuildMonitor::k_report_wait_seconds.
    CompileSlot(const std::filesystem::path& root, int jobs, double timeout,
                BuildMonitor* monitor);
    // A slot of `cache`: its compile_jobs, waiting at most its lock timeout.
    CompileSlot(const ModuleCache& cache, BuildMonitor* monitor)
        : CompileSlot(cache.root(), cache.options().compile_jobs,
                      cache.options().lock_timeout_seconds, monitor) {}
    ~CompileSlot();
    CompileSlot(const CompileSlot&) = delete;
    CompileSlot& operator=(const CompileSlot&) = delete;

    // The index of the slot held.
    int index() const noexcept { return m_index; }

private:
    std::optional<FileLock> m_lock;
    int m_index = -1;
};

}  // namespace opweave::cache

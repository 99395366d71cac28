// opweave core (internal): the machine-wide limit on concurrent compiler
// processes.
//
// Every compiler run of a build holds one of `jobs` slots: lock files
// `compile-slot-<i>.lock` in the slot directory (slot_dir.hpp), which all
// of this user's processes share whatever cache they use. So eight
// processes that each compile units in parallel, with eight different
// caches, still run at most `jobs` compilers at once. A slot is an flock(2)
// lock: the kernel frees it when its holder exits or is killed.
//
// A waiter keeps the slot files open while it waits and tries them every
// k_poll (25 ms): it takes a freed slot within about that long, and costs
// next to no CPU while it waits.
#pragma once

#include <filesystem>

#include "opweave/build_monitor.hpp"
#include "opweave/module_cache.hpp"
#include "util/dir.hpp"

namespace opweave::builder {

// `requested`, or, when it is 0 or less, the number of CPUs this process
// may use (util::usable_cpus(): its affinity mask, limited by a cgroup CPU
// quota). At least 1.
int compile_jobs(int requested) noexcept;

class SlotTable;

class CompileSlot {
public:
    // Takes a free slot of `jobs` (see compile_jobs()) in the directory
    // `slots`, waiting while all are busy, at most `timeout` seconds (then
    // LockTimeout naming a slot file and its last holder; a negative
    // timeout waits forever). Polls `monitor` (Interrupted when it asks to
    // stop) and tells it once when the wait passes
    // BuildMonitor::k_report_wait_seconds. Throws CacheError when a slot
    // file cannot be opened.
    CompileSlot(const util::Dir& slots, int jobs, double timeout, BuildMonitor* monitor);
    // A slot for a build in `cache`: in the slot directory its options
    // choose (open_slot_dir()), of its compile_jobs, waiting at most its
    // lock timeout.
    CompileSlot(const ModuleCache& cache, BuildMonitor* monitor);
    // release().
    ~CompileSlot();
    CompileSlot(const CompileSlot&) = delete;
    CompileSlot& operator=(const CompileSlot&) = delete;

    // The index of the slot held (or last held).
    int index() const noexcept { return m_index; }

    // The slot's lock file.
    std::filesystem::path path() const;

    // Frees the slot now, if this object holds it. In a forked child this
    // frees nothing: the child never held its parent's slot. Never throws.
    void release() noexcept;

private:
    SlotTable* m_table = nullptr;
    int m_index = -1;
    long m_owner_pid = 0;
};

}  // namespace opweave::builder

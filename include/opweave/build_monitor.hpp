// opweave core: watching and interrupting long waits.
//
// A compile can take seconds and a lock wait can take as long as another
// process's compile. The caller passes a BuildMonitor to every call that may
// wait; the core polls it while it waits and tells it about waits worth
// reporting. Without a monitor (nullptr) nothing is polled or reported.
#pragma once

#include <filesystem>

namespace opweave {

// Whether a call may wait for a lock another process holds.
enum class Blocking { no, yes };

struct ModuleRequest;

class BuildMonitor {
public:
    virtual ~BuildMonitor() = default;

    // Polled at least every 100 ms while a compiler runs or a lock is
    // awaited. Returning true stops the wait: the compiler's whole process
    // group is killed, nothing is published, every lock is released, and
    // the call throws Interrupted.
    virtual bool interrupted() { return false; }

    // Called once per lock wait, when it has lasted k_report_wait_seconds:
    // the lock file, the pid its holder recorded (0 if unknown), and the
    // seconds waited so far.
    virtual void waiting_for_lock(const std::filesystem::path& lock_path, long holder_pid,
                                  double waited_seconds) {
        (void)lock_path;
        (void)holder_pid;
        (void)waited_seconds;
    }

    // Called by build_module() when it is about to compile `request`
    // without the prelude the request allows, because that prelude is not
    // built yet: the caller may build it (build_prelude(), best in the
    // background, in parallel with this compile) for the compiles after.
    virtual void prelude_missing(const ModuleRequest& request) { (void)request; }

    static constexpr double k_report_wait_seconds = 1.0;
};

}  // namespace opweave

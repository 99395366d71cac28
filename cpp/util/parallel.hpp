// opweave core (internal): running tasks on a few threads while the calling
// thread keeps watching the caller's BuildMonitor.
#pragma once

#include <functional>
#include <vector>

#include "opweave/build_monitor.hpp"

namespace opweave::util {

// A task gets a monitor of its own: it reports a stop when the caller's
// monitor asked for one or another task failed, and it forwards lock-wait
// reports to the caller's monitor (on the calling thread).
using Task = std::function<void(BuildMonitor* monitor)>;

// Runs `tasks` on at most `threads` threads and returns when all are done.
// The calling thread polls `monitor` (may be null) meanwhile. The first task
// that throws (in task order) stops the ones not started yet and asks the
// running ones to stop; its exception is rethrown. When `monitor` asks to
// stop, every task is asked to stop and Interrupted is thrown.
void run_parallel(const std::vector<Task>& tasks, int threads, BuildMonitor* monitor);

}  // namespace opweave::util

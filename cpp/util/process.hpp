// opweave core (internal): run a child process with posix_spawnp.
//
// The child gets /dev/null as stdin and one pipe for both stdout and stderr.
// It runs in its own process group so that a timeout can kill the whole tree
// (a compiler driver and the cc1plus/as/ld it starts). Every descriptor the
// parent opens here is close-on-exec; no fork() is used.
#pragma once

#include <string>
#include <vector>

#include "opweave/build_monitor.hpp"

namespace opweave::util {

struct ProcessResult {
    int exit_status = -1;   // exit code when the child exited normally, else -1
    int term_signal = 0;    // the signal that killed the child, else 0
    bool timed_out = false; // true when we killed it at the timeout
    std::string output;     // combined stdout and stderr
    double seconds = 0.0;   // wall time from spawn to reap

    bool succeeded() const { return exit_status == 0 && !timed_out; }
};

struct ProcessOptions {
    // Kill the child's process group after this many seconds; <= 0: never.
    double timeout_seconds = 0.0;
    // Polled about every 50 ms; when it asks to stop, the child's process
    // group is killed and reaped, and run_process throws Interrupted.
    BuildMonitor* monitor = nullptr;
    // Kill the child's process group if this process dies while it runs,
    // even by SIGKILL: the child runs under a small /bin/sh guard that
    // watches a pipe only this process holds open, and kills the group when
    // the pipe's last writer is gone.
    bool die_with_parent = false;
    // Non-empty: the child runs in this directory (relative names in argv,
    // other than argv[0], are relative to it).
    std::string working_dir;
    // "NAME=value" entries added to this process's environment for the
    // child, each replacing any variable of the same name.
    std::vector<std::string> environment;
};

// Runs argv[0] (looked up on PATH when it has no slash) with `argv`. Throws
// opweave::Error when the process cannot be started (for example, the
// program does not exist), Interrupted as described above.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options);

// run_process with only a timeout.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds);

}  // namespace opweave::util

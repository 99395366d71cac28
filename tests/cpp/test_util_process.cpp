// Tests of util::run_process: combined output capture, exit status, signals,
// the timeout killing the whole process tree, spawn failures, descriptor
// hygiene, large output, the environment, EINTR robustness, and a child that
// leaves a background process holding the output pipe.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "temp_dir.hpp"
#include "opweave/errors.hpp"
#include "util/fd.hpp"
#include "util/process.hpp"

using opweave::util::ProcessOptions;
using opweave::util::ProcessResult;
using opweave::util::run_process;
using opweave_test::TempDir;

namespace {

std::vector<std::string> sh(const std::string& script) {
    return {"/bin/sh", "-c", script};
}

// The descriptors listed in a `ls` of a /proc/<pid>/fd directory.
std::set<int> parse_fd_list(const std::string& text) {
    std::set<int> fds;
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        fds.insert(std::stoi(word));
    }
    return fds;
}

// Descriptors of this process that a child would inherit (no FD_CLOEXEC).
std::set<int> inheritable_fds() {
    std::set<int> fds;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        const int fd = std::stoi(entry.path().filename().string());
        const int flags = ::fcntl(fd, F_GETFD);
        if (flags >= 0 && (flags & FD_CLOEXEC) == 0) {
            fds.insert(fd);
        }
    }
    return fds;
}

// True once `pid` is gone or a zombie (dead, waiting for a reaper that may
// never come when PID 1 of a container does not reap).
bool process_is_dead(pid_t pid) {
    if (::kill(pid, 0) != 0) {
        return errno == ESRCH;
    }
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) {
        return true;
    }
    // "pid (comm) S ...": the state follows the last ')'.
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// Under valgrind, posix_spawn cannot report exec failures (valgrind turns
// glibc's CLONE_VM|CLONE_VFORK into a plain fork), so a missing program shows
// up as exit status 127 instead of an exception.
bool running_under_valgrind() {
    const char* preload = std::getenv("LD_PRELOAD");
    return preload != nullptr && std::string(preload).find("vgpreload") != std::string::npos;
}

// The first line of `output` as a pid, or 0.
pid_t first_line_pid(const std::string& output) {
    std::istringstream in(output);
    long pid = 0;
    in >> pid;
    return pid > 0 ? static_cast<pid_t>(pid) : 0;
}

// Kills a background process a test left behind and waits (briefly) for it to
// die, so that no test leaves anything running.
void kill_leftover(pid_t pid) {
    CHECK(pid > 0);
    if (pid <= 0) {
        return;
    }
    ::kill(pid, SIGKILL);
    bool dead = false;
    for (int attempt = 0; attempt < 100 && !dead; ++attempt) {
        dead = process_is_dead(pid);
        if (!dead) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    CHECK(dead);
}

// Runs a child that exits at once but leaves `sleep 30` (printed as the first
// line) holding the output pipe, and checks that run_process returns at the
// child's exit without killing the sleep.
void check_returns_when_child_exits_leaving_background_writer(const std::string& launcher,
                                                              double timeout_seconds) {
    const auto start = std::chrono::steady_clock::now();
    const ProcessResult result =
        run_process(sh(launcher + "sleep 30 & echo $!; echo done"), timeout_seconds);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const pid_t background = first_line_pid(result.output);
    CHECK(elapsed < 3.0);
    CHECK(result.seconds < 3.0);
    CHECK(!result.timed_out);
    CHECK_EQ(result.exit_status, 0);
    CHECK_EQ(result.term_signal, 0);
    CHECK(result.succeeded());
    CHECK(result.output.find("done\n") != std::string::npos);
    // Left running: a compiler wrapper's server must survive the compile.
    CHECK(background > 0 && !process_is_dead(background));
    kill_leftover(background);
}

volatile sig_atomic_t g_alarms = 0;

void count_alarm(int) {
    g_alarms = g_alarms + 1;
}

}  // namespace

OPWEAVE_TEST(captures_stdout_and_stderr_together) {
    const ProcessResult result = run_process(sh("echo out; echo err >&2"), 10.0);
    CHECK_EQ(result.output, std::string("out\nerr\n"));
    CHECK_EQ(result.exit_status, 0);
    CHECK_EQ(result.term_signal, 0);
    CHECK(!result.timed_out);
    CHECK(result.succeeded());
    CHECK(result.seconds >= 0.0);
    CHECK(result.seconds < 10.0);
}

OPWEAVE_TEST(bare_program_name_is_looked_up_on_path) {
    const ProcessResult result = run_process({"sh", "-c", "echo hi"}, 10.0);
    CHECK_EQ(result.output, std::string("hi\n"));
    CHECK(result.succeeded());
}

OPWEAVE_TEST(reports_non_zero_exit_status) {
    const ProcessResult result = run_process(sh("echo failing; exit 3"), 10.0);
    CHECK_EQ(result.exit_status, 3);
    CHECK_EQ(result.term_signal, 0);
    CHECK(!result.timed_out);
    CHECK(!result.succeeded());
    CHECK_EQ(result.output, std::string("failing\n"));
}

OPWEAVE_TEST(reports_the_killing_signal) {
    const ProcessResult result = run_process(sh("kill -9 $$"), 10.0);
    CHECK_EQ(result.exit_status, -1);
    CHECK_EQ(result.term_signal, 9);
    CHECK(!result.timed_out);
    CHECK(!result.succeeded());
}

OPWEAVE_TEST(timeout_kills_the_whole_process_tree) {
    TempDir dir;
    const std::string pid_file = (dir.path() / "background.pid").string();
    const auto start = std::chrono::steady_clock::now();
    const ProcessResult result =
        run_process(sh("sleep 30 & echo $! > '" + pid_file + "'; sleep 30"), 0.5);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    CHECK(result.timed_out);
    CHECK(!result.succeeded());
    CHECK_EQ(result.term_signal, 9);
    CHECK_EQ(result.exit_status, -1);
    CHECK(elapsed >= 0.45);
    CHECK(elapsed < 5.0);
    CHECK(result.seconds >= 0.45);

    std::ifstream in(pid_file);
    pid_t grandchild = 0;
    in >> grandchild;
    CHECK(grandchild > 0);
    if (grandchild > 0) {
        bool dead = false;
        for (int attempt = 0; attempt < 100 && !dead; ++attempt) {
            dead = process_is_dead(grandchild);
            if (!dead) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        }
        CHECK(dead);
    }
}

OPWEAVE_TEST(timeout_applies_when_the_child_closes_its_output_and_keeps_running) {
    const auto start = std::chrono::steady_clock::now();
    const ProcessResult result = run_process(sh("exec >/dev/null 2>&1; sleep 30"), 0.5);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(result.timed_out);
    CHECK(elapsed < 5.0);
}

OPWEAVE_TEST(timeout_applies_to_a_child_that_never_stops_writing) {
    const auto start = std::chrono::steady_clock::now();
    const ProcessResult result = run_process(sh("while :; do echo spam; done"), 0.5);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(result.timed_out);
    CHECK(elapsed < 5.0);
    CHECK(result.output.rfind("spam\n", 0) == 0);
}

OPWEAVE_TEST(huge_timeout_means_no_timeout) {
    const ProcessResult result = run_process(sh("echo ok"), 1e300);
    CHECK(!result.timed_out);
    CHECK_EQ(result.output, std::string("ok\n"));
}

OPWEAVE_TEST(zero_timeout_means_no_timeout) {
    const ProcessResult result = run_process(sh("sleep 0.2; echo done"), 0.0);
    CHECK(!result.timed_out);
    CHECK(result.succeeded());
    CHECK_EQ(result.output, std::string("done\n"));
}

OPWEAVE_TEST(missing_program_throws_error_naming_it) {
    if (running_under_valgrind()) {
        const ProcessResult result = run_process({"opweave-no-such-program-xyz"}, 10.0);
        CHECK_EQ(result.exit_status, 127);
        return;
    }
    CHECK_THROWS_AS(run_process({"opweave-no-such-program-xyz"}, 10.0), opweave::Error);
    CHECK_THROWS_AS(run_process({"/nonexistent/opweave-no-such-program"}, 10.0),
                    opweave::Error);
    try {
        run_process({"opweave-no-such-program-xyz", "--version"}, 10.0);
        CHECK(false);
    } catch (const opweave::Error& e) {
        const std::string message = e.what();
        CHECK(message.find("opweave-no-such-program-xyz") != std::string::npos);
        CHECK(message.find("No such file") != std::string::npos);
    }
}

OPWEAVE_TEST(empty_command_throws_error) {
    CHECK_THROWS_AS(run_process({}, 10.0), opweave::Error);
}

OPWEAVE_TEST(child_does_not_inherit_close_on_exec_descriptors) {
    // A close-on-exec descriptor at a number no shell would use on its own.
    opweave::util::Fd opened(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    CHECK(opened.valid());
    opweave::util::Fd high(::fcntl(opened.get(), F_DUPFD_CLOEXEC, 57));
    CHECK(high.valid());
    const int marker = high.get();

    // The shell's own descriptors: only 0, 1, 2, plus whatever this test
    // process itself leaves inheritable (e.g. a make jobserver). In
    // particular, neither our marker nor the pipe's read end nor a stray
    // write end may appear.
    const ProcessResult result = run_process(sh("ls /proc/$$/fd"), 10.0);
    CHECK(result.succeeded());
    const std::set<int> child_fds = parse_fd_list(result.output);
    CHECK(child_fds.count(0) == 1);
    CHECK(child_fds.count(1) == 1);
    CHECK(child_fds.count(2) == 1);
    CHECK(child_fds.count(marker) == 0);

    std::set<int> allowed = inheritable_fds();
    allowed.insert({0, 1, 2});
    for (const int fd : child_fds) {
        if (allowed.count(fd) == 0) {
            ::opweave_test::record_failure(__FILE__, __LINE__,
                                           "child inherited unexpected fd " + std::to_string(fd));
        }
    }
}

OPWEAVE_TEST(stdin_is_dev_null) {
    // `cat` would block forever on an inherited terminal or pipe.
    const ProcessResult result = run_process(sh("cat; readlink /proc/self/fd/0"), 10.0);
    CHECK(!result.timed_out);
    CHECK(result.succeeded());
    CHECK_EQ(result.output, std::string("/dev/null\n"));
}

OPWEAVE_TEST(stdout_and_stderr_share_one_pipe) {
    const ProcessResult result =
        run_process(sh("readlink /proc/self/fd/1; readlink /proc/self/fd/2"), 10.0);
    CHECK(result.succeeded());
    std::istringstream in(result.output);
    std::string out_target;
    std::string err_target;
    std::getline(in, out_target);
    std::getline(in, err_target);
    CHECK(out_target.rfind("pipe:", 0) == 0);
    CHECK_EQ(out_target, err_target);
}

OPWEAVE_TEST(large_output_is_captured_without_deadlock) {
    const ProcessResult result =
        run_process(sh("head -c 1000000 /dev/zero | tr '\\000' x; echo tail >&2"), 30.0);
    CHECK(!result.timed_out);
    CHECK(result.succeeded());
    CHECK_EQ(result.output.size(), static_cast<std::size_t>(1000000 + 5));
    CHECK_EQ(result.output.find_first_not_of('x'), static_cast<std::size_t>(1000000));
    CHECK_EQ(result.output.substr(1000000), std::string("tail\n"));
}

OPWEAVE_TEST(inherits_the_environment) {
    ::setenv("OPWEAVE_TEST_PROCESS_VAR", "hello env", 1);
    const ProcessResult result = run_process(sh("echo \"$OPWEAVE_TEST_PROCESS_VAR\""), 10.0);
    ::unsetenv("OPWEAVE_TEST_PROCESS_VAR");
    CHECK_EQ(result.output, std::string("hello env\n"));
}

OPWEAVE_TEST(environment_entries_replace_or_add_variables) {
    ::setenv("OPWEAVE_TEST_PROCESS_VAR", "inherited", 1);
    ::setenv("OPWEAVE_TEST_PROCESS_VAR_KEPT", "kept", 1);
    ProcessOptions options;
    options.timeout_seconds = 10.0;
    options.environment = {"OPWEAVE_TEST_PROCESS_VAR=replaced", "OPWEAVE_TEST_ADDED=added"};
    const ProcessResult result = run_process(
        sh("echo \"$OPWEAVE_TEST_PROCESS_VAR $OPWEAVE_TEST_PROCESS_VAR_KEPT "
           "$OPWEAVE_TEST_ADDED\"; env | grep -c '^OPWEAVE_TEST_PROCESS_VAR='"),
        options);
    ::unsetenv("OPWEAVE_TEST_PROCESS_VAR");
    ::unsetenv("OPWEAVE_TEST_PROCESS_VAR_KEPT");
    CHECK_EQ(result.output, std::string("replaced kept added\n1\n"));
}

OPWEAVE_TEST(child_leads_its_own_process_group) {
    // Field 5 of /proc/<pid>/stat is the process group.
    const ProcessResult result = run_process(sh("echo $$; cat /proc/$$/stat"), 10.0);
    CHECK(result.succeeded());
    std::istringstream in(result.output);
    long pid = 0;
    in >> pid;
    std::string stat;
    std::getline(in >> std::ws, stat);
    const auto close = stat.rfind(')');
    CHECK(close != std::string::npos);
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    long ppid = 0;
    long pgrp = 0;
    fields >> state >> ppid >> pgrp;
    CHECK(pid > 0);
    CHECK_EQ(pgrp, pid);
    CHECK_EQ(ppid, static_cast<long>(::getpid()));
}

OPWEAVE_TEST(survives_signal_interruptions) {
    // A periodic SIGALRM without SA_RESTART makes poll, read and waitpid
    // fail with EINTR over and over; run_process must retry.
    struct sigaction action {};
    action.sa_handler = count_alarm;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    struct sigaction previous {};
    ::sigaction(SIGALRM, &action, &previous);
    itimerval timer{};
    timer.it_interval.tv_usec = 2000;
    timer.it_value.tv_usec = 2000;
    ::setitimer(ITIMER_REAL, &timer, nullptr);

    g_alarms = 0;
    const ProcessResult timed = run_process(sh("echo a; sleep 0.3; echo b"), 20.0);
    const ProcessResult untimed = run_process(sh("sleep 0.2; echo c"), 0.0);

    itimerval off{};
    ::setitimer(ITIMER_REAL, &off, nullptr);
    ::sigaction(SIGALRM, &previous, nullptr);

    CHECK(g_alarms > 10);
    CHECK(timed.succeeded());
    CHECK_EQ(timed.output, std::string("a\nb\n"));
    CHECK(untimed.succeeded());
    CHECK_EQ(untimed.output, std::string("c\n"));
}

OPWEAVE_TEST(returns_when_the_child_exits_leaving_a_background_process_on_the_pipe) {
    check_returns_when_child_exits_leaving_background_writer("", 10.0);
}

OPWEAVE_TEST(returns_without_timeout_when_the_child_leaves_a_background_process) {
    check_returns_when_child_exits_leaving_background_writer("", 0.0);
}

OPWEAVE_TEST(returns_when_a_background_process_in_another_session_holds_the_pipe) {
    // Out of our process group's reach: kill(-pgid) could not end it.
    if (::access("/usr/bin/setsid", X_OK) != 0 && ::access("/bin/setsid", X_OK) != 0) {
        return;
    }
    check_returns_when_child_exits_leaving_background_writer("setsid ", 0.0);
}

OPWEAVE_TEST(output_written_right_before_exit_is_not_lost) {
    const ProcessResult result =
        run_process(sh("head -c 200000 /dev/zero | tr '\\000' x; exit 0"), 30.0);
    CHECK(!result.timed_out);
    CHECK(result.succeeded());
    CHECK_EQ(result.output.size(), static_cast<std::size_t>(200000));
    CHECK(result.output.find_first_not_of('x') == std::string::npos);
}

OPWEAVE_TEST(output_before_exit_is_kept_while_a_background_process_holds_the_pipe) {
    const ProcessResult result =
        run_process(sh("sleep 30 & echo $!; head -c 200000 /dev/zero | tr '\\000' x"), 0.0);
    CHECK(!result.timed_out);
    CHECK(result.succeeded());
    const std::size_t newline = result.output.find('\n');
    CHECK(newline != std::string::npos);
    if (newline != std::string::npos) {
        const std::string rest = result.output.substr(newline + 1);
        CHECK_EQ(rest.size(), static_cast<std::size_t>(200000));
        CHECK(rest.find_first_not_of('x') == std::string::npos);
    }
    kill_leftover(first_line_pid(result.output));
}

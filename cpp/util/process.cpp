// opweave core (internal): run_process, a child process started with
// posix_spawnp whose combined stdout+stderr is captured under a timeout.
//
// Why it is built this way:
//  - posix_spawnp, never fork(): the host is often a large multi-threaded
//    Python process; fork() there is slow and unsafe.
//  - Every descriptor is close-on-exec from birth (pipe2(O_CLOEXEC)), so a
//    compiler started concurrently from another thread never inherits our
//    pipe and never holds it open past our child's exit.
//  - The child leads its own process group, so a timeout can SIGKILL the whole
//    tree (driver, cc1plus, as, ld), not only the driver.
//  - The run ends when the direct child exits, not when the pipe reaches EOF:
//    a process the child leaves in the background (sccache starting its
//    server, `cmd &` in a script) may hold the write end open indefinitely,
//    possibly from another session that kill(-pgid) cannot reach. After the
//    child is reaped we take what is already in the pipe and leave such a
//    process running.
//  - A compile must not outlive the process that started it, even one
//    killed by SIGKILL, which runs no cleanup. With die_with_parent the
//    command runs under a /bin/sh guard (k_guard_script) whose watcher
//    kills the process group when a pipe that only we hold reaches EOF:
//    the kernel closes our end whenever we die.
#include "util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "opweave/errors.hpp"
#include "opweave/build_monitor.hpp"
#include "util/fd.hpp"

extern char** environ;

namespace opweave::util {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t k_read_chunk = 64 * 1024;
constexpr double k_max_timeout_seconds = 1e9;  // about 31 years
// While the pipe is open we wait for output in slices of this length and
// check between them whether the child has exited.
constexpr int k_poll_slice_ms = 50;
// After the pipe reaches EOF the child normally exits at once; until the
// deadline we poll for that with a short, growing sleep.
constexpr auto k_reap_poll_min = std::chrono::milliseconds(1);
constexpr auto k_reap_poll_max = std::chrono::milliseconds(50);
// Once the child is reaped, how long we may keep taking output that is
// already in the pipe.
constexpr auto k_drain_grace = std::chrono::milliseconds(100);

std::string errno_text(int error) {
    return std::strerror(error);
}

[[noreturn]] void throw_errno(const std::string& what, int error) {
    throw Error(what + ": " + errno_text(error));
}

// Moves `fd` to a number >= 3 (close-on-exec kept) so that the child's file
// actions, which write descriptors 0, 1 and 2, can never clobber it. This
// only matters when the host process runs with a standard descriptor closed.
Fd above_stdio(Fd fd) {
    if (fd.get() > STDERR_FILENO) {
        return fd;
    }
    const int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    if (moved < 0) {
        throw_errno("run_process: fcntl(F_DUPFD_CLOEXEC) failed", errno);
    }
    return Fd(moved);
}

// posix_spawn_file_actions_t with a destructor.
class FileActions {
public:
    FileActions() {
        const int rc = ::posix_spawn_file_actions_init(&m_actions);
        if (rc != 0) {
            throw_errno("run_process: posix_spawn_file_actions_init failed", rc);
        }
    }
    ~FileActions() { ::posix_spawn_file_actions_destroy(&m_actions); }
    FileActions(const FileActions&) = delete;
    FileActions& operator=(const FileActions&) = delete;

    void add_close(int fd) { check(::posix_spawn_file_actions_addclose(&m_actions, fd)); }
    void add_open(int fd, const char* path, int flags) {
        check(::posix_spawn_file_actions_addopen(&m_actions, fd, path, flags, 0));
    }
    void add_dup2(int fd, int new_fd) {
        check(::posix_spawn_file_actions_adddup2(&m_actions, fd, new_fd));
    }
    void add_chdir(const char* path) {
        check(::posix_spawn_file_actions_addchdir_np(&m_actions, path));
    }
    const posix_spawn_file_actions_t* get() const { return &m_actions; }

private:
    static void check(int rc) {
        if (rc != 0) {
            throw_errno("run_process: posix_spawn_file_actions failed", rc);
        }
    }
    posix_spawn_file_actions_t m_actions;
};

// posix_spawnattr_t with a destructor.
class SpawnAttributes {
public:
    SpawnAttributes() {
        const int rc = ::posix_spawnattr_init(&m_attributes);
        if (rc != 0) {
            throw_errno("run_process: posix_spawnattr_init failed", rc);
        }
    }
    ~SpawnAttributes() { ::posix_spawnattr_destroy(&m_attributes); }
    SpawnAttributes(const SpawnAttributes&) = delete;
    SpawnAttributes& operator=(const SpawnAttributes&) = delete;

    posix_spawnattr_t* get() { return &m_attributes; }

private:
    posix_spawnattr_t m_attributes;
};

void configure_attributes(SpawnAttributes& attributes) {
    // Own process group (pgroup 0 = the child's pid), so kill(-pid) reaches
    // the whole tree. An empty signal mask and default SIGPIPE/SIGXFSZ: the
    // host (Python ignores SIGPIPE) must not leak its signal setup into the
    // compiler, and ignored dispositions survive exec.
    sigset_t empty_mask;
    sigemptyset(&empty_mask);
    sigset_t default_signals;
    sigemptyset(&default_signals);
    sigaddset(&default_signals, SIGPIPE);
    sigaddset(&default_signals, SIGXFSZ);

    const short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    int rc = ::posix_spawnattr_setflags(attributes.get(), flags);
    if (rc == 0) {
        rc = ::posix_spawnattr_setpgroup(attributes.get(), 0);
    }
    if (rc == 0) {
        rc = ::posix_spawnattr_setsigmask(attributes.get(), &empty_mask);
    }
    if (rc == 0) {
        rc = ::posix_spawnattr_setsigdefault(attributes.get(), &default_signals);
    }
    if (rc != 0) {
        throw_errno("run_process: posix_spawnattr setup failed", rc);
    }
}

// Milliseconds left until `deadline` for poll(), rounded up so that we never
// wake just before it and spin; at least 0.
int poll_timeout_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (left <= 0.0) {
        return 0;
    }
    constexpr double k_max_ms = 1000.0 * 60.0 * 60.0;  // poll() takes an int
    return static_cast<int>(std::ceil(std::min(left, k_max_ms)));
}

void set_non_blocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        throw_errno("run_process: fcntl(O_NONBLOCK) failed", errno);
    }
}

enum class ReadResult { data, eof, empty };

// One non-blocking read() of `fd` into `output`, retried on EINTR.
ReadResult read_chunk(int fd, std::vector<char>& buffer, std::string& output) {
    for (;;) {
        const ssize_t got = ::read(fd, buffer.data(), buffer.size());
        if (got > 0) {
            output.append(buffer.data(), static_cast<std::size_t>(got));
            return ReadResult::data;
        }
        if (got == 0) {
            return ReadResult::eof;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return ReadResult::empty;
        }
        throw_errno("run_process: read failed", errno);
    }
}

// After the child has been reaped: reads what is already in the pipe, until
// EOF, until it is empty, or for at most k_drain_grace (a background process
// that keeps writing must not hold us).
void drain(int fd, std::vector<char>& buffer, std::string& output) {
    const auto limit = Clock::now() + k_drain_grace;
    while (read_chunk(fd, buffer, output) == ReadResult::data && Clock::now() < limit) {
    }
}

// Owns a spawned child until it is reaped. If run_process leaves early by an
// exception, the destructor kills the child's group and reaps it so that no
// process and no zombie is left behind.
class Child {
public:
    explicit Child(pid_t pid) noexcept : m_pid(pid) {}
    Child(Child&& other) noexcept : m_pid(std::exchange(other.m_pid, -1)) {}
    ~Child() {
        if (m_pid > 0) {
            kill_group();
            int status = 0;
            while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
            }
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    // Safe while the child is unreaped: its pid (the group id) cannot be
    // reused until we wait for it.
    void kill_group() const noexcept {
        ::kill(-m_pid, SIGKILL);
    }

    enum class Wait { block, no_hang };

    // Waits for the child and stores its wait status; with Wait::no_hang
    // returns false if it is still running.
    bool reap(Wait wait, int& status) {
        for (;;) {
            const pid_t rc = ::waitpid(m_pid, &status, wait == Wait::block ? 0 : WNOHANG);
            if (rc == m_pid) {
                m_pid = -1;
                return true;
            }
            if (rc == 0) {
                return false;
            }
            if (errno == EINTR) {
                continue;
            }
            const int error = errno;
            m_pid = -1;  // nothing left to reap (ECHILD: SIGCHLD is ignored)
            throw_errno("run_process: waitpid failed", error);
        }
    }

private:
    pid_t m_pid;
};

// The guard of ProcessOptions::die_with_parent. $0 is a label, "$@" the
// command; fd 3 is the read end of the lifeline pipe. A background subshell
// waits on fd 3: read() returns only at EOF, when the parent (the pipe's
// only writer) is gone, and then it kills the whole process group. When the
// command ends first, the guard kills that watcher (so no group kill
// happens), and passes on the command's fate: its exit status, or the
// signal that killed it (one of those that terminate: HUP to TERM,
// 1 to 15), re-raised on the guard itself. Never a stop signal, which would
// leave the guard stopped and the caller waiting.
constexpr const char* k_guard_script =
    "( read line <&3; kill -9 0 ) & watcher=$!; exec 3<&-; "
    "\"$@\"; status=$?; kill $watcher 2>/dev/null; "
    "if [ $status -gt 128 ] && [ $status -le 143 ]; then kill -$((status - 128)) $$; fi; "
    "exit $status";
constexpr int k_lifeline_fd = 3;
constexpr auto k_monitor_interval = std::chrono::milliseconds(50);

// Under the guard, a program that cannot be run would only show as the
// shell's exit status 127; check it first, so that the caller gets the same
// error as without the guard. Compilers and launchers are resolved to full
// paths before they get here; a bare name is left to the shell's PATH.
void require_runnable(const std::string& program) {
    struct stat st {};
    if (program.find('/') == std::string::npos) {
        return;
    }
    if (::stat(program.c_str(), &st) != 0) {
        throw Error("cannot run '" + program + "': " + errno_text(errno));
    }
    if (!S_ISREG(st.st_mode) || ::access(program.c_str(), X_OK) != 0) {
        throw Error("cannot run '" + program + "': " + errno_text(EACCES));
    }
}

std::vector<std::string> guarded(const std::vector<std::string>& argv) {
    std::vector<std::string> command = {"/bin/sh", "-c", k_guard_script, "opweave-guard"};
    command.insert(command.end(), argv.begin(), argv.end());
    return command;
}

// A running child, its output pipe, and (with a guard) the lifeline's write
// end, which must stay open until the child is reaped.
struct Spawned {
    Fd output;
    Fd lifeline;
    Clock::time_point start;
    Child child;  // last: destroyed (killed and reaped) before the pipes close
};

// This process's environment with `overrides` ("NAME=value") in place of
// the variables they name. Built before the spawn: posix_spawnp takes the
// final array and runs no code of ours in the child.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
    std::vector<std::string> result;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string_view variable(*entry);
        const std::string_view name = variable.substr(0, variable.find('='));
        const bool replaced =
            std::any_of(overrides.begin(), overrides.end(), [&](const std::string& next) {
                return next.size() > name.size() && next.compare(0, name.size(), name) == 0 &&
                       next[name.size()] == '=';
            });
        if (!replaced) {
            result.emplace_back(variable);
        }
    }
    result.insert(result.end(), overrides.begin(), overrides.end());
    return result;
}

// Pointers to `strings`, null-terminated, as argv and envp take them.
std::vector<char*> c_array(const std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    pointers.reserve(strings.size() + 1);
    for (const std::string& text : strings) {
        pointers.push_back(const_cast<char*>(text.c_str()));
    }
    pointers.push_back(nullptr);
    return pointers;
}

std::unique_ptr<Spawned> spawn(const std::vector<std::string>& argv, bool guard,
                               const std::string& working_dir,
                               const std::vector<std::string>& environment) {
    int pipe_fds[2] = {-1, -1};
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        throw_errno("run_process: pipe2 failed", errno);
    }
    Fd read_end = above_stdio(Fd(pipe_fds[0]));
    Fd write_end = above_stdio(Fd(pipe_fds[1]));
    Fd life_read;
    Fd life_write;
    if (guard) {
        if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
            throw_errno("run_process: pipe2 failed", errno);
        }
        // Above fd 3 too, so that the dup2 onto fd 3 cannot clobber them.
        life_read = Fd(::fcntl(pipe_fds[0], F_DUPFD_CLOEXEC, k_lifeline_fd + 1));
        life_write = Fd(::fcntl(pipe_fds[1], F_DUPFD_CLOEXEC, k_lifeline_fd + 1));
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
        if (!life_read || !life_write) {
            throw_errno("run_process: fcntl(F_DUPFD_CLOEXEC) failed", errno);
        }
    }

    // Close the read end first (it is also close-on-exec; closing it
    // explicitly keeps the intent visible), then stdin from /dev/null, then
    // both stdout and stderr onto the one write end. dup2 clears the
    // close-on-exec flag on 1 and 2 (and on the lifeline's fd 3); the
    // originals stay close-on-exec and vanish at exec.
    FileActions actions;
    actions.add_close(read_end.get());
    actions.add_open(STDIN_FILENO, "/dev/null", O_RDONLY);
    actions.add_dup2(write_end.get(), STDOUT_FILENO);
    actions.add_dup2(write_end.get(), STDERR_FILENO);
    if (guard) {
        actions.add_dup2(life_read.get(), k_lifeline_fd);
    }
    if (!working_dir.empty()) {
        actions.add_chdir(working_dir.c_str());
    }
    SpawnAttributes attributes;
    configure_attributes(attributes);

    const std::vector<std::string> command = guard ? guarded(argv) : argv;
    const std::vector<char*> c_argv = c_array(command);
    const std::vector<std::string> env_strings =
        environment.empty() ? std::vector<std::string>() : child_environment(environment);
    const std::vector<char*> c_env = c_array(env_strings);

    const auto start = Clock::now();
    pid_t pid = -1;
    const int spawn_rc = ::posix_spawnp(&pid, c_argv[0], actions.get(), attributes.get(),
                                        c_argv.data(), environment.empty() ? environ : c_env.data());
    if (spawn_rc != 0) {
        // glibc reports exec failures (ENOENT, EACCES, ...) here and has
        // already reaped the failed child itself.
        throw Error("cannot run '" + argv.front() + "': " + errno_text(spawn_rc));
    }
    auto spawned = std::make_unique<Spawned>(
        Spawned{std::move(read_end), std::move(life_write), start, Child(pid)});
    // Without this the pipe never reaches EOF: we would hold a writer.
    write_end.reset();
    // Our end never blocks: read() after poll() may still find nothing
    // (EAGAIN), and the drain after the child's exit must not wait for a
    // writer that outlives it. The write end is a separate open file
    // description, so the child's side stays blocking.
    set_non_blocking(spawned->output.get());
    return spawned;
}

// Waits for the child, taking its output, until it exits, the deadline
// passes (timed_out) or the monitor asks to stop (Interrupted).
ProcessResult collect(Spawned& spawned, const ProcessOptions& options, const std::string& program) {
    // Past k_max_timeout_seconds (or NaN) there is no deadline, which also
    // keeps the time_point arithmetic below from overflowing.
    const bool has_deadline =
        options.timeout_seconds > 0.0 && options.timeout_seconds <= k_max_timeout_seconds;
    const auto deadline =
        has_deadline ? spawned.start + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.timeout_seconds))
                     : Clock::time_point::max();
    auto next_poll = spawned.start + k_monitor_interval;

    // Completion is decided by the direct child's exit, not by EOF on the
    // pipe: a background process the child leaves behind (a compiler
    // wrapper's server, `cmd &` in a script) may keep the write end open
    // for as long as it lives.
    ProcessResult result;
    std::vector<char> buffer(k_read_chunk);
    bool eof = false;
    int status = 0;
    auto pause = k_reap_poll_min;
    for (;;) {
        if (spawned.child.reap(Child::Wait::no_hang, status)) {
            break;
        }
        const auto now = Clock::now();
        // Checked on every pass, not only when poll() times out: a child
        // that writes without pause would otherwise never time out.
        if (has_deadline && now >= deadline) {
            result.timed_out = true;
            break;
        }
        if (options.monitor != nullptr && now >= next_poll) {
            next_poll = now + k_monitor_interval;
            if (options.monitor->interrupted()) {
                spawned.child.kill_group();
                spawned.child.reap(Child::Wait::block, status);
                throw Interrupted("interrupted while running " + program);
            }
        }
        const int slice_ms = std::min(has_deadline ? poll_timeout_ms(deadline) : k_poll_slice_ms,
                                      k_poll_slice_ms);
        if (eof) {
            // Every writer is gone, which for a compiler means it is
            // exiting; but a child may close its output and keep running,
            // so keep checking for its exit with a short, growing pause.
            ::poll(nullptr, 0, std::min(slice_ms, static_cast<int>(pause.count())));
            pause = std::min<std::chrono::milliseconds>(pause * 2, k_reap_poll_max);
            continue;
        }
        pollfd entry{spawned.output.get(), POLLIN, 0};
        const int ready = ::poll(&entry, 1, slice_ms);
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw_errno("run_process: poll failed", errno);
        }
        // POLLIN or POLLHUP/POLLERR: read() tells data from EOF.
        if (ready > 0 &&
            read_chunk(spawned.output.get(), buffer, result.output) == ReadResult::eof) {
            eof = true;
        }
    }

    if (result.timed_out) {
        spawned.child.kill_group();
        spawned.child.reap(Child::Wait::block, status);
    } else if (!eof) {
        // Everything the child wrote is in the pipe by now (a child blocked
        // on a full pipe cannot exit). Take it without waiting for an EOF
        // that a surviving background process may never send, and leave
        // that process alone.
        drain(spawned.output.get(), buffer, result.output);
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - spawned.start).count();
    if (WIFEXITED(status)) {
        result.exit_status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.term_signal = WTERMSIG(status);
    }
    return result;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
    if (argv.empty() || argv.front().empty()) {
        throw Error("run_process: empty command");
    }
    if (options.die_with_parent) {
        require_runnable(argv.front());
    }
    const std::unique_ptr<Spawned> spawned = spawn(argv, options.die_with_parent, options.working_dir,
                                                     options.environment);
    return collect(*spawned, options, argv.front());
}

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds) {
    ProcessOptions options;
    options.timeout_seconds = timeout_seconds;
    return run_process(argv, options);
}

}  // namespace opweave::util

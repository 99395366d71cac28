// opweave core: the typed errors thrown by the core library.
//
// Every error derives from opweave::Error (itself a std::runtime_error), so a
// caller that does not care about the kind can catch one type. Errors carry
// data (paths, commands, diagnostics), not only a message, so the layer that
// owns the policy can present them well. The Python bindings map each class
// to the exception of the same name in the `opweave.errors` module.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace opweave {

// Base class of every error the core throws.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The module cache cannot be used: unusable root directory, bad permissions,
// a failed filesystem operation. `path()` names the file or directory involved.
class CacheError : public Error {
public:
    CacheError(const std::string& message, std::filesystem::path path);
    const std::filesystem::path& path() const noexcept { return m_path; }

private:
    std::filesystem::path m_path;
};

// A FileLock could not be acquired before its timeout. `holder_pid()` is the
// pid recorded by the current holder, or 0 when it cannot be known.
class LockTimeout : public Error {
public:
    LockTimeout(std::filesystem::path lock_path, double waited_seconds, long holder_pid);
    const std::filesystem::path& lock_path() const noexcept { return m_lock_path; }
    double waited_seconds() const noexcept { return m_waited_seconds; }
    long holder_pid() const noexcept { return m_holder_pid; }

private:
    std::filesystem::path m_lock_path;
    double m_waited_seconds;
    long m_holder_pid;
};

// A wait (a compile, a lock) was stopped because the BuildMonitor asked for
// it (see build_monitor.hpp). Nothing was published and no lock is held.
class Interrupted : public Error {
public:
    using Error::Error;
};

// A compiler run failed: non-zero exit, killed by a signal, timed out, or could
// not be started. Carries the full command, the compiler's combined
// stdout+stderr, and the source file that was being compiled.
class CompileError : public Error {
public:
    CompileError(const std::string& summary,
                 std::vector<std::string> command,
                 std::string diagnostics,
                 std::filesystem::path source,
                 int exit_status);

    const std::vector<std::string>& command() const noexcept { return m_command; }
    const std::string& diagnostics() const noexcept { return m_diagnostics; }
    const std::filesystem::path& source() const noexcept { return m_source; }
    // The compiler's exit status; -1 when it did not exit normally (signal,
    // timeout, or it could not be started).
    int exit_status() const noexcept { return m_exit_status; }

private:
    std::vector<std::string> m_command;
    std::string m_diagnostics;
    std::filesystem::path m_source;
    int m_exit_status;
};

}  // namespace opweave

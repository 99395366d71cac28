// opweave core: constructors of the typed errors (see include/opweave/errors.hpp).
#include "opweave/errors.hpp"

#include <sstream>
#include <utility>

namespace opweave {

namespace {

std::string describe_lock_timeout(const std::filesystem::path& lock_path,
                                  double waited_seconds, long holder_pid) {
    std::ostringstream out;
    out << "timed out after " << waited_seconds << " s waiting for lock " << lock_path.string();
    if (holder_pid > 0) {
        out << " (held by pid " << holder_pid << ")";
    } else {
        out << " (holder unknown)";
    }
    return out.str();
}

}  // namespace

CacheError::CacheError(const std::string& message, std::filesystem::path path)
    : Error(message), m_path(std::move(path)) {}

LockTimeout::LockTimeout(std::filesystem::path lock_path, double waited_seconds, long holder_pid)
    : Error(describe_lock_timeout(lock_path, waited_seconds, holder_pid)),
      m_lock_path(std::move(lock_path)),
      m_waited_seconds(waited_seconds),
      m_holder_pid(holder_pid) {}

CompileError::CompileError(const std::string& summary,
                           std::vector<std::string> command,
                           std::string diagnostics,
                           std::filesystem::path source,
                           int exit_status)
    : Error(summary),
      m_command(std::move(command)),
      m_diagnostics(std::move(diagnostics)),
      m_source(std::move(source)),
      m_exit_status(exit_status) {}

}  // namespace opweave

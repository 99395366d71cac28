// opweave._core: the BuildMonitor that every waiting binding passes to the
// core, so that Python signal handlers run while C++ waits.
//
// Python runs signal handlers only in the main thread, between bytecodes;
// a thread waiting in C++ with the GIL released never gets there. So while
// the core waits (a compile, a lock) it polls this monitor, which takes the
// GIL and calls PyErr_CheckSignals(). When a handler raises (Ctrl-C's
// KeyboardInterrupt, a SIGTERM handler's SystemExit), the monitor keeps that
// exception and asks the core to stop; the core kills the compiler, unwinds
// (releasing locks and removing the staging directory), and throws
// Interrupted, which the binding replaces by the kept Python exception.
// In other threads PyErr_CheckSignals() does nothing; they stop when
// cancel_builds() was called (at an interrupted exit).
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <utility>

#include "opweave/build_monitor.hpp"
#include "opweave/errors.hpp"

namespace opweave::bindings {

class PythonMonitor final : public BuildMonitor {
public:
    // `on_prelude_missing`: None, or a callable taking a ModuleRequest.
    explicit PythonMonitor(pybind11::object on_prelude_missing = pybind11::none())
        : m_on_prelude_missing(std::move(on_prelude_missing)) {}

    bool interrupted() override;
    void waiting_for_lock(const std::filesystem::path& lock_path, long holder_pid,
                          double waited_seconds) override;
    void prelude_missing(const ModuleRequest& request) override;

    // Throws the Python exception that made interrupted() return true, if
    // there is one. Call with the GIL held.
    void rethrow_python_error();

    // Runs `call(monitor)` with the GIL released; an Interrupted from it
    // becomes the Python exception that caused it.
    template <typename Call>
    static auto run(Call&& call, pybind11::object on_prelude_missing = pybind11::none()) {
        PythonMonitor monitor(std::move(on_prelude_missing));
        try {
            pybind11::gil_scoped_release release;
            return call(&monitor);
        } catch (const Interrupted&) {
            monitor.rethrow_python_error();
            throw;
        }
    }

private:
    pybind11::object m_on_prelude_missing;
    std::optional<pybind11::error_already_set> m_error;
};

// Makes every monitor (in every thread) ask to stop from now on: used when
// the interpreter exits after an interrupt, so that background builds do
// not keep it waiting.
void cancel_builds() noexcept;

void init_monitor(pybind11::module_& m);

}  // namespace opweave::bindings

// opweave._core: PythonMonitor (see monitor.hpp).
#include "bindings/monitor.hpp"

#include <atomic>
#include <string>

#include "opweave/module_builder.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

std::atomic<bool> g_cancelled{false};

}  // namespace

bool PythonMonitor::interrupted() {
    if (g_cancelled.load()) {
        return true;
    }
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
        m_error.emplace();  // fetches (and clears) the handler's exception
        return true;
    }
    return false;
}

void PythonMonitor::waiting_for_lock(const std::filesystem::path& lock_path, long holder_pid,
                                     double waited_seconds) {
    py::gil_scoped_acquire gil;
    try {
        const std::string key = lock_path.stem().string();
        const py::object log = py::module_::import("logging").attr("getLogger")("opweave");
        if (key.rfind("compile-slot-", 0) == 0) {
            log.attr("info")("waiting for a free compile slot: all are busy (%s held by pid "
                             "%s, %.1f s so far); see compile__jobs",
                             lock_path.string(), holder_pid, waited_seconds);
            return;
        }
        log.attr("info")("waiting for another process to build %s (lock held by pid %s, "
                         "%.1f s so far): %s",
                         key.substr(0, 16), holder_pid, waited_seconds, lock_path.string());
    } catch (py::error_already_set& error) {
        error.discard_as_unraisable("opweave: logging a lock wait");
    }
}

void PythonMonitor::prelude_missing(const ModuleRequest& request) {
    py::gil_scoped_acquire gil;
    if (m_on_prelude_missing.is_none()) {
        return;
    }
    try {
        m_on_prelude_missing(request);
    } catch (py::error_already_set& error) {
        error.discard_as_unraisable("opweave: starting a prelude build");
    }
}

void PythonMonitor::rethrow_python_error() {
    if (m_error) {
        py::error_already_set error = std::move(*m_error);
        m_error.reset();
        throw error;
    }
}

void cancel_builds() noexcept { g_cancelled.store(true); }

void init_monitor(py::module_& m) {
    m.def("cancel_builds", &cancel_builds,
          "Makes every compile and lock wait in progress or to come in this process stop\n"
          "(raising Interrupted): for an interpreter that exits after an interrupt.");
}

}  // namespace opweave::bindings

// opweave._core: FileLock and ModuleCache. Waiting on a lock and building
// release the GIL; a Python build function re-acquires it while it runs.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <mutex>
#include <stdexcept>

#include "bindings/bindings.hpp"
#include "opweave/file_lock.hpp"
#include "opweave/module_cache.hpp"

namespace py = pybind11;

namespace opweave::bindings {

const char* outcome_name(Outcome outcome) {
    switch (outcome) {
    case Outcome::hit: return "hit";
    case Outcome::built: return "built";
    case Outcome::built_by_other: return "built_by_other";
    }
    return "unknown";
}

namespace {

// What a Python build function returns: None, or a dict with any of
// key_material, command, compile_seconds.
BuildRecord to_build_record(const py::handle& result) {
    BuildRecord record;
    if (result.is_none()) {
        return record;
    }
    if (!py::isinstance<py::dict>(result)) {
        throw py::type_error("build function must return None or a dict, not " +
                             std::string(py::str(py::type::of(result))));
    }
    const auto info = py::reinterpret_borrow<py::dict>(result);
    if (info.contains("key_material")) {
        record.key_material = py::cast<std::string>(info["key_material"]);
    }
    if (info.contains("command")) {
        record.command = py::cast<std::string>(info["command"]);
    }
    if (info.contains("compile_seconds")) {
        record.compile_seconds = py::cast<double>(info["compile_seconds"]);
    }
    return record;
}

py::dict entry_to_dict(const EntryInfo& entry) {
    py::dict out;
    out["key"] = entry.key;
    out["dir"] = entry.dir.string();
    out["size_bytes"] = entry.size_bytes;
    out["created"] = entry.created;
    out["last_used"] = entry.last_used;
    out["compile_seconds"] = entry.compile_seconds;
    out["command"] = text(entry.command);
    out["key_material"] = text(entry.key_material);
    return out;
}

// Raised (as RuntimeError) when a FileLock object is acquired again while held.
struct LockReuseError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The Python face of a FileLock. One lock object shared by threads, or
// entered twice, must not let two callers believe they hold the lock: a
// second acquire while held raises instead of returning at once, and a mutex
// keeps threads from racing on the descriptor while the GIL is released.
class PyFileLock {
public:
    explicit PyFileLock(std::filesystem::path path) : m_lock(std::move(path)) {}

    void acquire(double timeout) {
        std::lock_guard<std::mutex> guard(m_mutex);
        refuse_if_held();
        m_lock.acquire(std::chrono::duration<double>(timeout));
    }
    bool try_acquire() {
        std::lock_guard<std::mutex> guard(m_mutex);
        refuse_if_held();
        return m_lock.try_acquire();
    }
    void release() {
        std::lock_guard<std::mutex> guard(m_mutex);
        m_lock.release();
    }
    void release_and_remove() {
        std::lock_guard<std::mutex> guard(m_mutex);
        m_lock.release_and_remove();
    }
    bool held() {
        std::lock_guard<std::mutex> guard(m_mutex);
        return m_lock.held();
    }
    const std::filesystem::path& path() const { return m_lock.path(); }

private:
    void refuse_if_held() const {
        if (m_lock.held()) {
            throw LockReuseError("FileLock " + m_lock.path().string() +
                                   " is already held through this object; it is not "
                                   "re-entrant (use one FileLock object per thread)");
        }
    }

    FileLock m_lock;
    std::mutex m_mutex;
};

void init_file_lock(py::module_& m) {
    py::register_local_exception<LockReuseError>(m, "FileLockReuseError", PyExc_RuntimeError);
    py::class_<PyFileLock>(m, "FileLock",
                           "An exclusive flock(2) lock on a file, released by the kernel if\n"
                           "the holder dies. Use acquire()/release() or a `with` block. Not\n"
                           "re-entrant: acquiring it again while held raises RuntimeError.")
        .def(py::init<std::filesystem::path>(), py::arg("path"))
        .def("acquire", &PyFileLock::acquire, py::arg("timeout") = -1.0,
             py::call_guard<py::gil_scoped_release>(),
             "Waits up to `timeout` seconds (negative: forever); raises LockTimeout.")
        .def("try_acquire", &PyFileLock::try_acquire, py::call_guard<py::gil_scoped_release>(),
             "Takes the lock only if it is free now; returns whether it is held.")
        .def("release", &PyFileLock::release, "Releases the lock if held.")
        .def("release_and_remove", &PyFileLock::release_and_remove,
             "Removes the lock file, then releases the lock.")
        .def_property_readonly("held", &PyFileLock::held)
        .def_property_readonly("path", &PyFileLock::path)
        .def_static("read_holder_pid", &FileLock::read_holder_pid, py::arg("path"),
                    "The pid recorded in a lock file, or 0.")
        .def(
            "__enter__",
            [](PyFileLock& lock) -> PyFileLock& {
                py::gil_scoped_release release;
                lock.acquire(-1.0);
                return lock;
            },
            py::return_value_policy::reference_internal)
        .def("__exit__", [](PyFileLock& lock, const py::args&) { lock.release(); });
}

void init_module_cache(py::module_& m) {
    py::class_<ModuleCache>(m, "ModuleCache",
                            "The on-disk, content-addressed cache of compiled modules.\n"
                            "Lookups take no lock; builds take a per-key lock.")
        .def(py::init([](std::optional<std::filesystem::path> root, double lock_timeout) {
                 CacheOptions options;
                 options.root = root.value_or(std::filesystem::path());
                 options.lock_timeout_seconds = lock_timeout;
                 return ModuleCache(options);
             }),
             py::arg("root") = py::none(), py::arg("lock_timeout") = 1800.0)
        .def_static("default_root", &ModuleCache::default_root)
        .def_static("check_key", &ModuleCache::check_key, py::arg("key"))
        .def_property_readonly("root", &ModuleCache::root)
        .def("entry_dir", &ModuleCache::entry_dir, py::arg("key"))
        .def("lookup", &ModuleCache::lookup, py::arg("key"),
             "The entry's directory, or None. Takes no lock.")
        .def(
            "get_or_build",
            [](ModuleCache& cache, const std::string& key, const py::function& build) {
                const BuildFn build_fn = [&build](const std::filesystem::path& staging) {
                    py::gil_scoped_acquire gil;
                    return to_build_record(build(staging));
                };
                CacheResult result = [&] {
                    py::gil_scoped_release release;
                    return cache.get_or_build(key, build_fn);
                }();
                return py::make_tuple(result.dir, outcome_name(result.outcome));
            },
            py::arg("key"), py::arg("build"),
            "Returns (entry_dir, outcome), where outcome is 'hit', 'built' or\n"
            "'built_by_other'. On a miss, calls build(staging_dir) with the key's\n"
            "lock held; it writes the entry's files and returns None or a dict\n"
            "with key_material, command and compile_seconds.")
        .def(
            "list",
            [](const ModuleCache& cache) {
                std::vector<EntryInfo> entries;
                {
                    py::gil_scoped_release release;
                    entries = cache.list();
                }
                py::list out;
                for (const EntryInfo& entry : entries) {
                    out.append(entry_to_dict(entry));
                }
                return out;
            },
            "Every entry, as dicts, sorted by key.")
        .def(
            "stats",
            [](const ModuleCache& cache) {
                CacheStats stats;
                {
                    py::gil_scoped_release release;
                    stats = cache.stats();
                }
                py::dict out;
                out["root"] = cache.root().string();
                out["entries"] = stats.entries;
                out["total_bytes"] = stats.total_bytes;
                out["builds_in_flight"] = stats.builds_in_flight;
                out["oldest_use"] = stats.oldest_use;
                out["newest_use"] = stats.newest_use;
                return out;
            },
            "Entry count, total size, builds in flight and last-use range.")
        .def("evict", &ModuleCache::evict, py::arg("key"), py::call_guard<py::gil_scoped_release>(),
             "Removes one entry; returns whether it existed.")
        .def("clear", &ModuleCache::clear, py::call_guard<py::gil_scoped_release>(),
             "Removes every entry; returns how many.")
        .def(
            "prune",
            [](ModuleCache& cache, std::optional<std::uint64_t> max_total_bytes,
               std::optional<double> older_than) {
                PruneResult result;
                {
                    py::gil_scoped_release release;
                    result = cache.prune(max_total_bytes, older_than);
                }
                py::dict out;
                out["removed"] = result.removed;
                out["freed_bytes"] = result.freed_bytes;
                return out;
            },
            py::arg("max_total_bytes") = py::none(), py::arg("older_than") = py::none(),
            "Removes entries unused for `older_than` seconds, then least recently\n"
            "used ones until the total is at most `max_total_bytes`.")
        .def("sweep", &ModuleCache::sweep, py::call_guard<py::gil_scoped_release>(),
             "Removes what killed builds left behind; returns how many directories.")
        .def("keep_failed_source", &ModuleCache::keep_failed_source, py::arg("key"),
             py::arg("source"));
}

}  // namespace

void init_cache(py::module_& m) {
    init_file_lock(m);
    init_module_cache(m);
}

}  // namespace opweave::bindings

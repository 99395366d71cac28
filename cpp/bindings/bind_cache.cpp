// opweave._core: FileLock, ModuleCache and CompileSlot. Waiting on a lock
// and building release the GIL; a Python build function re-acquires it while
// it runs.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

#include "bindings/bindings.hpp"
#include "bindings/monitor.hpp"
#include "builder/compile_slots.hpp"
#include "cache/file_lock.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "util/dir.hpp"

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

// What a Python build function returns: None, or a dict with any of kind,
// label, key_material, command, compile_seconds, exports (a list of node
// keys).
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
    const auto text_of = [&](const char* name, std::string& out) {
        if (info.contains(name)) {
            out = py::cast<std::string>(info[name]);
        }
    };
    text_of("kind", record.kind);
    text_of("label", record.label);
    text_of("environment", record.environment);
    text_of("key_material", record.key_material);
    text_of("command", record.command);
    if (info.contains("compile_seconds")) {
        record.compile_seconds = py::cast<double>(info["compile_seconds"]);
    }
    if (info.contains("exports")) {
        record.exports = py::cast<std::vector<std::string>>(info["exports"]);
    }
    return record;
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

    void acquire(double timeout, BuildMonitor* monitor) {
        std::lock_guard<std::mutex> guard(m_mutex);
        refuse_if_held();
        m_lock.acquire(std::chrono::duration<double>(timeout), monitor);
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
        .def(
            "acquire",
            [](PyFileLock& lock, double timeout) {
                PythonMonitor::run([&](BuildMonitor* monitor) { lock.acquire(timeout, monitor); });
            },
            py::arg("timeout") = -1.0,
            "Waits up to `timeout` seconds (negative: forever); raises LockTimeout.\n"
            "Ctrl-C (any signal handler that raises) interrupts the wait.")
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
                PythonMonitor::run([&](BuildMonitor* monitor) { lock.acquire(-1.0, monitor); });
                return lock;
            },
            py::return_value_policy::reference_internal)
        .def("__exit__", [](PyFileLock& lock, const py::args&) { lock.release(); });
}

const char* event_kind_name(CacheEvent::Kind kind) {
    switch (kind) {
    case CacheEvent::Kind::quarantined: return "quarantined";
    case CacheEvent::Kind::repaired: return "repaired";
    case CacheEvent::Kind::stale: return "stale";
    case CacheEvent::Kind::unusable: return "unusable";
    case CacheEvent::Kind::fetched: return "fetched";
    case CacheEvent::Kind::remote_failed: return "remote_failed";
    }
    return "unknown";
}

void init_records(py::module_& m) {
    py::class_<EntryFile>(m, "EntryFile", "A file of a cache entry, as recorded at publish.")
        .def_readonly("name", &EntryFile::name)
        .def_readonly("size", &EntryFile::size)
        .def_readonly("sha256", &EntryFile::sha256);
    py::class_<HeaderRecord>(m, "HeaderRecord",
                             "A header a build read, as recorded after the compile.")
        .def_property_readonly("path", [](const HeaderRecord& r) { return text(r.path); })
        .def_readonly("size", &HeaderRecord::size)
        .def_readonly("mtime_ns", &HeaderRecord::mtime_ns)
        .def_readonly("ctime_ns", &HeaderRecord::ctime_ns)
        .def_readonly("sha256", &HeaderRecord::sha256);
    py::class_<Entry>(m, "Entry", "A published cache entry, as its metadata describes it.")
        .def_readonly("key", &Entry::key)
        .def_readonly("dir", &Entry::dir)
        .def_readonly("kind", &Entry::kind)
        .def_property_readonly("label", [](const Entry& e) { return text(e.label); })
        .def_property_readonly("environment", [](const Entry& e) { return text(e.environment); })
        .def_property_readonly("key_material",
                               [](const Entry& e) { return text(e.key_material); })
        .def_property_readonly("command", [](const Entry& e) { return text(e.command); })
        .def_readonly("compile_seconds", &Entry::compile_seconds)
        .def_readonly("created", &Entry::created)
        .def_readonly("last_used", &Entry::last_used)
        .def_readonly("size_bytes", &Entry::size_bytes)
        .def_readonly("files", &Entry::files)
        .def_readonly("headers", &Entry::headers)
        .def_readonly("exports", &Entry::exports,
                      "The node keys whose functions the entry exports (find_export finds\n"
                      "it by them); empty for entries without any.")
        .def(
            "file_ending",
            [](const Entry& e, std::string_view suffix) { return path_text(e.file_ending(suffix)); },
            py::arg("suffix"),
            "The path (a str) of the first file whose name ends with `suffix`, or ''.");
    py::class_<CacheEvent>(m, "CacheEvent",
                           "Something the cache did besides building, and why.\n"
                           "kind: 'quarantined', 'repaired', 'stale', 'unusable' (an entry of a\n"
                           "read-only cache that does not verify, left as it is), 'fetched' (from\n"
                           "the remote storage) or 'remote_failed' (the remote storage failed, or\n"
                           "its entry does not verify: `problem` says which).")
        .def_property_readonly("kind", [](const CacheEvent& e) { return event_kind_name(e.kind); })
        .def_readonly("path", &CacheEvent::path)
        .def_property_readonly("problem", [](const CacheEvent& e) { return text(e.problem); })
        .def("__repr__", [](const CacheEvent& e) {
            return "<CacheEvent " + std::string(event_kind_name(e.kind)) + " " +
                   e.path.string() + ": " + e.problem + ">";
        });
    py::class_<CacheResult>(m, "CacheResult", "What get_or_build found or built.")
        .def_readonly("entry", &CacheResult::entry)
        .def_property_readonly("outcome",
                               [](const CacheResult& r) { return outcome_name(r.outcome); })
        .def_readonly("events", &CacheResult::events);
    py::class_<CacheCounters>(m, "CacheCounters", "Counters kept on disk across processes.")
        .def_readonly("hits", &CacheCounters::hits)
        .def_readonly("misses", &CacheCounters::misses)
        .def_readonly("builds", &CacheCounters::builds)
        .def_readonly("quarantines", &CacheCounters::quarantines)
        .def_readonly("evictions", &CacheCounters::evictions)
        .def_readonly("compile_seconds", &CacheCounters::compile_seconds)
        .def_readonly("saved_seconds", &CacheCounters::saved_seconds);
    py::class_<CacheStats>(m, "CacheStats", "What the cache holds, and its counters.")
        .def_readonly("entries", &CacheStats::entries)
        .def_readonly("total_bytes", &CacheStats::total_bytes)
        .def_readonly("builds_in_flight", &CacheStats::builds_in_flight)
        .def_readonly("failed_sources", &CacheStats::failed_sources)
        .def_readonly("oldest_use", &CacheStats::oldest_use)
        .def_readonly("newest_use", &CacheStats::newest_use)
        .def_readonly("counters", &CacheStats::counters);
    py::class_<VerifyProblem>(m, "VerifyProblem", "One bad (or stale) entry found by verify().")
        .def_readonly("path", &VerifyProblem::path)
        .def_property_readonly("problem", [](const VerifyProblem& p) { return text(p.problem); })
        .def_readonly("repaired", &VerifyProblem::repaired);
    py::class_<VerifyReport>(m, "VerifyReport", "What verify() checked and found.")
        .def_readonly("entries_checked", &VerifyReport::entries_checked)
        .def_readonly("problems", &VerifyReport::problems)
        .def_readonly("stale", &VerifyReport::stale);
    py::class_<PruneResult>(m, "PruneResult", "What prune() removed.")
        .def_readonly("removed", &PruneResult::removed)
        .def_readonly("freed_bytes", &PruneResult::freed_bytes);
}

void init_module_cache(py::module_& m) {
    py::class_<ModuleCache>(m, "ModuleCache",
                            "The on-disk, content-addressed cache of compiled modules.\n"
                            "Lookups take no lock and verify entries; builds take a per-key lock.")
        .def(py::init([](std::optional<std::filesystem::path> root, double lock_timeout,
                         std::optional<std::uint64_t> max_total_bytes, int compile_jobs,
                         bool read_only, std::vector<std::filesystem::path> shared_roots,
                         std::optional<uid_t> shared_owner,
                         std::optional<std::filesystem::path> slot_dir) {
                 CacheOptions options;
                 options.root = root.value_or(std::filesystem::path());
                 options.lock_timeout_seconds = lock_timeout;
                 options.max_total_bytes = max_total_bytes;
                 options.compile_jobs = compile_jobs;
                 options.read_only = read_only;
                 options.shared_roots = std::move(shared_roots);
                 options.shared_owner = shared_owner;
                 options.slot_dir = slot_dir.value_or(std::filesystem::path());
                 options.recipe = k_module_layout_version;  // the builder's entries
                 py::gil_scoped_release release;
                 return std::make_unique<ModuleCache>(options);
             }),
             py::arg("root") = py::none(), py::arg("lock_timeout") = CacheOptions{}.lock_timeout_seconds,
             py::arg("max_total_bytes") = py::none(), py::arg("compile_jobs") = 0,
             py::arg("read_only") = false,
             py::arg("shared_roots") = std::vector<std::filesystem::path>{},
             py::arg("shared_owner") = py::none(), py::arg("slot_dir") = py::none(),
             "Opens the cache at `root` (created if needed). read_only: use its entries and\n"
             "never write there. shared_roots: read-only caches looked up first.\n"
             "shared_owner: a uid trusted besides this user and root, as the owner of\n"
             "read-only caches and of the directories above a root. slot_dir: where the\n"
             "compile slots live (None: this user's machine-wide default).")
        .def_property_readonly("read_only",
                               [](const ModuleCache& c) { return c.options().read_only; })
        .def_property_readonly("shared_roots",
                               [](const ModuleCache& c) { return c.options().shared_roots; })
        .def_property_readonly("shared_owner",
                               [](const ModuleCache& c) { return c.options().shared_owner; })
        .def_static("default_root", &ModuleCache::default_root)
        .def_static("check_key", &ModuleCache::check_key, py::arg("key"))
        .def_property_readonly("root", &ModuleCache::root)
        .def_property_readonly("max_total_bytes",
                               [](const ModuleCache& c) { return c.options().max_total_bytes; })
        .def_property_readonly(
            "compile_jobs", [](const ModuleCache& c) { return c.options().compile_jobs; },
            "Compiler processes at once across this user's processes (0: the CPUs usable).")
        .def_property_readonly(
            "slot_dir",
            [](const ModuleCache& c) -> std::optional<std::filesystem::path> {
                if (c.options().slot_dir.empty()) {
                    return std::nullopt;
                }
                return c.options().slot_dir;
            },
            "The configured compile slot directory, or None (the machine-wide default).")
        .def("entry_dir", &ModuleCache::entry_dir, py::arg("key"))
        .def(
            "lookup",
            [](ModuleCache& cache, const std::string& key, std::optional<py::list> events) {
                std::vector<CacheEvent> found;
                std::optional<Entry> entry = PythonMonitor::run(
                    [&](BuildMonitor* monitor) { return cache.lookup(key, &found, monitor); });
                if (events) {
                    for (CacheEvent& event : found) {
                        events->append(py::cast(std::move(event)));
                    }
                }
                return entry;
            },
            py::arg("key"), py::arg("events") = py::none(),
            "The verified entry, or None (a damaged one is quarantined). Takes no lock.\n"
            "events: a list that gets what the lookup did (CacheEvent), e.g. a quarantine.")
        .def(
            "find_export",
            [](ModuleCache& cache, const std::string& node_key) {
                return PythonMonitor::run([&](BuildMonitor* monitor) {
                    return cache.find_export(node_key, nullptr, monitor);
                });
            },
            py::arg("node_key"),
            "The verified entry that exports the node `node_key`, found through the\n"
            "node index (then the shared read-only caches), or None. An index file\n"
            "that names no such entry is removed. ValueError for a bad key.")
        .def(
            "get_or_build",
            [](ModuleCache& cache, const std::string& key, const py::function& build) {
                const BuildFn build_fn = [&build](const std::filesystem::path& staging) {
                    py::gil_scoped_acquire gil;
                    return to_build_record(build(staging));
                };
                return PythonMonitor::run([&](BuildMonitor* monitor) {
                    return cache.get_or_build(key, build_fn, monitor);
                });
            },
            py::arg("key"), py::arg("build"),
            "Returns a CacheResult. On a miss, calls build(staging_dir) with the key's\n"
            "lock held; it writes the entry's files and returns None or a dict with\n"
            "kind, label, environment, key_material, command, compile_seconds and\n"
            "exports (node keys, indexed for find_export).")
        .def(
            "replace",
            [](ModuleCache& cache, const std::string& key,
               const std::map<std::string, py::bytes>& files, const py::dict& record) {
                BuildRecord built = to_build_record(record);
                std::vector<std::pair<std::string, std::string>> contents;
                for (const auto& [name, data] : files) {
                    if (name.empty() || name == "." || name == ".." ||
                        name.find('/') != std::string::npos ||
                        name == ModuleCache::k_metadata_file) {
                        throw std::invalid_argument("not an entry file name: '" + name + "'");
                    }
                    contents.emplace_back(name, std::string(data));
                }
                const BuildFn build_fn = [&](const std::filesystem::path& staging) {
                    const std::optional<util::Dir> dir = util::Dir::open(staging);
                    for (const auto& [name, data] : contents) {
                        if (!dir || !dir->write_file(name, data)) {
                            throw CacheError("cannot write " + (staging / name).string() + ": " +
                                                 std::strerror(errno),
                                             staging);
                        }
                    }
                    return built;
                };
                return PythonMonitor::run([&](BuildMonitor* monitor) {
                    return cache.replace(key, build_fn, monitor);
                });
            },
            py::arg("key"), py::arg("files"), py::arg("record"),
            "Publishes an entry of `files` (name -> bytes, plain names) described by\n"
            "`record` (kind, label, environment, key_material, compile_seconds), in\n"
            "place of this cache's entry of `key`, valid or not (the shared read-only\n"
            "caches are not asked), under the key's lock. Returns a CacheResult.")
        .def(
            "read_entry_file",
            [](ModuleCache& cache, const std::string& key, const std::string& name,
               std::optional<py::list> events) -> std::optional<py::bytes> {
                std::vector<CacheEvent> found;
                std::optional<std::string> data;
                {
                    py::gil_scoped_release release;
                    data = cache.read_entry_file(key, name, &found);
                }
                if (events) {
                    for (CacheEvent& event : found) {
                        events->append(py::cast(std::move(event)));
                    }
                }
                if (!data) {
                    return std::nullopt;
                }
                return py::bytes(*data);
            },
            py::arg("key"), py::arg("name"), py::arg("events") = py::none(),
            "The bytes of the file `name` of the verified entry of `key` (this cache's,\n"
            "else a shared read-only cache's), if they have the size and SHA-256 its\n"
            "metadata records; else None. events: a list that gets what the lookup did.")
        .def(
            "export_entry",
            [](ModuleCache& cache, const std::string& key) -> std::optional<py::bytes> {
                std::optional<std::string> pack;
                {
                    py::gil_scoped_release release;
                    pack = cache.export_entry(key);
                }
                if (!pack) {
                    return std::nullopt;
                }
                return py::bytes(*pack);
            },
            py::arg("key"),
            "The verified entry of `key` as bytes (a pack: its metadata and files, for\n"
            "adopt), or None when there is no valid one. The one way entries leave a cache.")
        .def(
            "adopt",
            [](ModuleCache& cache, const std::string& key, const py::bytes& pack) {
                const std::string bytes = pack;
                return PythonMonitor::run(
                    [&](BuildMonitor* monitor) { return cache.adopt(key, bytes, monitor); });
            },
            py::arg("key"), py::arg("pack"),
            "Publishes the pack of an entry of another cache (export_entry) once it\n"
            "verifies as a local entry would: CacheError says what does not. Returns a\n"
            "CacheResult.")
        .def(
            "quarantine",
            [](ModuleCache& cache, const std::string& key, const std::string& problem,
               const std::string& holding) {
                return PythonMonitor::run([&](BuildMonitor* monitor) {
                    return cache.quarantine(key, problem, holding, monitor);
                });
            },
            py::arg("key"), py::arg("problem"), py::arg("holding") = "",
            "Moves the entry aside (it failed to load), only if it still holds the file\n"
            "`holding` (when given); returns whether it was moved.")
        .def("list", &ModuleCache::list, py::call_guard<py::gil_scoped_release>(),
             "Every entry (metadata only, not verified), sorted by key.")
        .def("stats", &ModuleCache::stats, py::call_guard<py::gil_scoped_release>(),
             "Entry count, total size, builds in flight, last-use range and counters.")
        .def(
            "verify",
            [](ModuleCache& cache, bool repair) {
                return PythonMonitor::run([&](BuildMonitor*) {
                    return cache.verify(repair ? Repair::yes : Repair::no);
                });
            },
            py::arg("repair") = false,
            "Checks every entry (files, hashes, metadata, owners, modes); with repair,\n"
            "quarantines the bad ones. Returns a VerifyReport.")
        .def("evict", &ModuleCache::evict, py::arg("key"), py::call_guard<py::gil_scoped_release>(),
             "Removes one entry; returns whether it existed.")
        .def("clear", &ModuleCache::clear, py::call_guard<py::gil_scoped_release>(),
             "Removes every entry and resets the counters; returns how many entries.")
        .def("prune", &ModuleCache::prune, py::arg("max_total_bytes") = py::none(),
             py::arg("older_than") = py::none(), py::arg("keep") = "",
             py::call_guard<py::gil_scoped_release>(),
             "Removes entries unused for `older_than` seconds, then least recently\n"
             "used ones until the total is at most `max_total_bytes`.")
        .def("sweep", &ModuleCache::sweep, py::call_guard<py::gil_scoped_release>(),
             "Removes what killed builds left behind; returns how many directories.")
        .def("note_hit", &ModuleCache::note_hit, py::arg("saved_seconds") = 0.0,
             "Counts a hit served from lookup() (an index of the caller's named it),\n"
             "and the seconds it saved.")
        .def(
            "read_record",
            [](ModuleCache& cache, const std::string& kind,
               const std::string& name) -> std::optional<py::bytes> {
                std::optional<std::string> data;
                {
                    py::gil_scoped_release release;
                    data = cache.read_record(kind, name);
                }
                if (!data) {
                    return std::nullopt;
                }
                return py::bytes(*data);
            },
            py::arg("kind"), py::arg("name"),
            "The data of the record `name` of `kind` (derived state kept beside the\n"
            "entries), or None: none, not trusted, or damaged (then removed). The\n"
            "shared read-only caches are asked after this one. ValueError for a bad\n"
            "kind (1 to 16 of [a-z]) or name (a key).")
        .def(
            "write_record",
            [](ModuleCache& cache, const std::string& kind, const std::string& name,
               const py::bytes& data) {
                const std::string bytes = data;
                py::gil_scoped_release release;
                return cache.write_record(kind, name, bytes);
            },
            py::arg("kind"), py::arg("name"), py::arg("data"),
            "Publishes the record (one rename, mode 0600); False when it cannot be\n"
            "written (a read-only cache, an unusable directory).")
        .def("remove_record", &ModuleCache::remove_record, py::arg("kind"), py::arg("name"),
             py::call_guard<py::gil_scoped_release>(),
             "Removes the record; returns whether there was one.")
        .def("keep_file_digests", &ModuleCache::keep_file_digests,
             "Makes this cache's records the machine's memo of the hashes of source\n"
             "files (headers, the files a graph's code came from), as ccache's inode\n"
             "cache: a file whose times changed but not its content is hashed once\n"
             "per machine. Nothing for a read-only cache.")
        .def("record_names", &ModuleCache::record_names, py::arg("kind"),
             py::call_guard<py::gil_scoped_release>(),
             "The names of this cache's records of `kind`, sorted.")
        .def("flush_counters", &ModuleCache::flush_counters,
             py::call_guard<py::gil_scoped_release>(),
             "Writes the counters this object gathered to disk now.")
        .def("keep_failed_source", &ModuleCache::keep_failed_source, py::arg("key"),
             py::arg("source"));
}

void init_compile_slot(py::module_& m) {
    using builder::CompileSlot;
    py::class_<CompileSlot>(m, "CompileSlot",
                            "One of the compile slots that bound this user's compilers on the\n"
                            "machine, held until release() or the end of a with block. Builds\n"
                            "hold one around each compiler run.")
        .def(py::init([](const ModuleCache& owner) {
                 return PythonMonitor::run([&](BuildMonitor* monitor) {
                     return std::make_unique<CompileSlot>(owner, monitor);
                 });
             }),
             py::arg("cache"),
             "Waits for a free slot of cache.compile_jobs in the cache's slot directory, at\n"
             "most its lock timeout (then LockTimeout); Ctrl-C stops the wait.")
        .def_property_readonly("index", &CompileSlot::index, "The slot's number.")
        .def_property_readonly("path", &CompileSlot::path, "The slot's lock file.")
        .def("release", &CompileSlot::release, "Frees the slot now, if held.")
        .def(
            "__enter__", [](CompileSlot& slot) -> CompileSlot& { return slot; },
            py::return_value_policy::reference)
        .def("__exit__", [](CompileSlot& slot, const py::args&) { slot.release(); });
}

}  // namespace

void init_cache(py::module_& m) {
    init_file_lock(m);
    init_records(m);
    init_module_cache(m);
    init_compile_slot(m);
}

}  // namespace opweave::bindings

// opweave._core: what the Python code that writes a graph's C code depends
// on (python/opweave/link/c/_dep_window.py and _dep_list.py use these).
//
// A DepWindow is open while ops and types write their code. While any is
// open, every window gets:
//  - each code object that starts running, once: on Python >= 3.12 through
//    sys.monitoring (Python registers code_started as the PY_START callback
//    of a tool of its own), before that through a frame evaluation function
//    (PEP 523) that calls on to the one it replaced;
//  - each file opened by Python code (the "open" audit event of open(),
//    os.open and io.open_code), with whether it was opened for writing,
//    and each directory it listed (os.listdir, os.scandir; not the import
//    system's own listings).
// The audit hook is C, added once, and returns at once while no window is
// open: audit hooks cannot be removed, and every audited event of the
// process passes through them.
//
// The values of namespaces that a list records, and their digests, are in
// bind_dep_values.cpp.
//
// A Watch tells, without looking at their contents, whether any of a set of
// namespaces (module dicts) and classes changed since it was taken: on
// Python >= 3.12 through dict and type watchers, before that through the
// version tags dicts and types carry.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bindings/bindings.hpp"
#include "opweave/module_cache.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

// A file as record_files gives it: (path, size, mtime_ns, ctime_ns, sha256).
using FileTuple = std::tuple<std::string, std::uint64_t, std::int64_t, std::int64_t, std::string>;

// --- watches (the state they share) ---------------------------------------

#if PY_VERSION_HEX >= 0x030C0000
std::uint64_t g_epoch = 0;  // bumped by every change of a watched dict or class
std::unordered_map<PyObject*, std::uint64_t> g_changed;  // object -> epoch of its last change
int g_dict_watcher = -1;
int g_type_watcher = -1;

int dict_changed(PyDict_WatchEvent event, PyObject* dict, PyObject* /*key*/,
                 PyObject* /*new_value*/) {
    if (event == PyDict_EVENT_DEALLOCATED) {
        g_changed.erase(dict);
    } else {
        g_changed[dict] = ++g_epoch;
    }
    return 0;
}

int type_changed(PyTypeObject* type) {
    g_changed[reinterpret_cast<PyObject*>(type)] = ++g_epoch;
    return 0;
}

void add_watchers() {
    if (g_dict_watcher < 0) {
        g_dict_watcher = PyDict_AddWatcher(dict_changed);
        if (g_dict_watcher < 0) {
            throw py::error_already_set();
        }
    }
    if (g_type_watcher < 0) {
        g_type_watcher = PyType_AddWatcher(type_changed);
        if (g_type_watcher < 0) {
            throw py::error_already_set();
        }
    }
}

// Whether `object` (watched) changed after `epoch`.
bool changed_after(PyObject* object, std::uint64_t epoch) {
    const auto found = g_changed.find(object);
    return found != g_changed.end() && found->second > epoch;
}
#endif

// What a later dict_state() of `dict` is compared with (watching it first).
std::uint64_t dict_state(PyObject* dict) {
#if PY_VERSION_HEX >= 0x030C0000
    add_watchers();
    if (PyDict_Watch(g_dict_watcher, dict) < 0) {
        throw py::error_already_set();
    }
    return g_epoch;
#else
    return reinterpret_cast<PyDictObject*>(dict)->ma_version_tag;
#endif
}

// Whether `dict` changed since dict_state() gave `state`.
bool dict_changed_since(PyObject* dict, std::uint64_t state) {
#if PY_VERSION_HEX >= 0x030C0000
    return changed_after(dict, state);
#else
    return reinterpret_cast<PyDictObject*>(dict)->ma_version_tag != state;
#endif
}

// --- windows -------------------------------------------------------------

struct Window {
    std::unordered_set<PyObject*> seen;  // the code objects in `codes`
    py::list codes;
    py::list opened;  // (how, path): "r" read, "w" written, "l" listed; in order
    // The namespaces of the modules loaded when it opened, and what tells
    // whether each changed while it was open (a version tag before Python
    // 3.12, the watchers' epoch since).
    std::vector<std::pair<py::object, std::uint64_t>> namespaces;
};

std::vector<Window*> g_open;  // windows now open, in the order they opened (GIL held)
bool g_audit_added = false;
int g_paused = 0;  // while positive, nothing is noted (the windows' own work)

void note_code(PyObject* code) noexcept {
    if (g_paused > 0) {
        return;
    }
    for (Window* window : g_open) {
        if (window->seen.insert(code).second && PyList_Append(window->codes.ptr(), code) < 0) {
            PyErr_Clear();
            window->seen.erase(code);
        }
    }
}

#if PY_VERSION_HEX < 0x030C0000
// Before Python 3.12: a frame evaluation function (PEP 523) for the whole
// interpreter while a window is open. Every Python call passes through it
// (so calls are not inlined), but the interpreter keeps its specialised
// instructions, where a profile function made it run five times slower.
#if PY_VERSION_HEX >= 0x030B0000
// The start of CPython 3.11's _PyInterpreterFrame (Include/internal/
// pycore_frame.h), up to the code object.
struct FrameHead {
    PyObject* f_func;
    PyObject* f_globals;
    PyObject* f_builtins;
    PyObject* f_locals;
    PyCodeObject* f_code;
};
using EvalFrame = _PyInterpreterFrame;
PyCodeObject* frame_code(EvalFrame* frame) { return reinterpret_cast<FrameHead*>(frame)->f_code; }
#else
using EvalFrame = PyFrameObject;
PyCodeObject* frame_code(EvalFrame* frame) { return frame->f_code; }
#endif

_PyFrameEvalFunction g_saved_eval = nullptr;  // what our function replaced

PyObject* evaluate(PyThreadState* thread, EvalFrame* frame, int throw_flag) {
    note_code(reinterpret_cast<PyObject*>(frame_code(frame)));
    return g_saved_eval != nullptr ? g_saved_eval(thread, frame, throw_flag)
                                   : _PyEval_EvalFrameDefault(thread, frame, throw_flag);
}

void start_gathering_code() {
    PyInterpreterState* interpreter = PyThreadState_Get()->interp;
    const _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interpreter);
    g_saved_eval = current == _PyEval_EvalFrameDefault ? nullptr : current;
    _PyInterpreterState_SetEvalFrameFunc(interpreter, evaluate);
}

void stop_gathering_code() {
    PyInterpreterState* interpreter = PyThreadState_Get()->interp;
    _PyInterpreterState_SetEvalFrameFunc(
        interpreter, g_saved_eval != nullptr ? g_saved_eval : _PyEval_EvalFrameDefault);
    g_saved_eval = nullptr;
}
#endif

// The path an "open" audit event names, absolute, or nothing (a descriptor,
// an unreadable name).
std::optional<std::string> opened_path(PyObject* target) {
    if (PyLong_Check(target)) {
        return std::nullopt;
    }
    PyObject* fspath = PyOS_FSPath(target);
    if (fspath == nullptr) {
        PyErr_Clear();
        return std::nullopt;
    }
    std::string path;
    if (PyBytes_Check(fspath)) {
        path.assign(PyBytes_AS_STRING(fspath), static_cast<std::size_t>(PyBytes_GET_SIZE(fspath)));
    } else {
        PyObject* encoded = PyUnicode_EncodeFSDefault(fspath);
        if (encoded != nullptr) {
            path.assign(PyBytes_AS_STRING(encoded),
                        static_cast<std::size_t>(PyBytes_GET_SIZE(encoded)));
            Py_DECREF(encoded);
        } else {
            PyErr_Clear();
        }
    }
    Py_DECREF(fspath);
    if (path.empty() || path.find('\0') != std::string::npos) {
        return std::nullopt;
    }
    if (path.front() != '/') {
        char cwd[PATH_MAX];
        if (::getcwd(cwd, sizeof cwd) == nullptr) {
            return std::nullopt;
        }
        path = std::string(cwd) + "/" + path;
    }
    return path;
}

// Whether the mode string or flags of an "open" event write to the file.
bool opened_for_writing(PyObject* mode, PyObject* flags) {
    if (mode != nullptr && PyUnicode_Check(mode)) {
        const char* text = PyUnicode_AsUTF8(mode);
        if (text == nullptr) {
            PyErr_Clear();
            return true;
        }
        return std::strpbrk(text, "wax+") != nullptr;
    }
    const long value = flags != nullptr && PyLong_Check(flags) ? PyLong_AsLong(flags) : 0;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return true;
    }
    return (value & O_ACCMODE) != O_RDONLY || (value & (O_CREAT | O_TRUNC)) != 0;
}

// Whether the running Python code is the import system's (which lists the
// directories of sys.path to find modules: imports are seen as code).
bool in_import_system() {
    PyFrameObject* frame = PyEval_GetFrame();  // borrowed
    if (frame == nullptr) {
        return false;
    }
    PyCodeObject* code = PyFrame_GetCode(frame);
    const char* file = PyUnicode_Check(code->co_filename) ? PyUnicode_AsUTF8(code->co_filename)
                                                          : nullptr;
    Py_DECREF(code);
    if (file == nullptr) {
        PyErr_Clear();
        return false;
    }
    return std::strncmp(file, "<frozen importlib", 17) == 0;
}

// What an audit event says a window saw: ("r", "w" or "l", the path), or
// nothing.
std::optional<std::pair<const char*, std::string>> seen(const char* event, PyObject* args) {
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1) {
        return std::nullopt;
    }
    PyObject* target = PyTuple_GET_ITEM(args, 0);
    if (std::strcmp(event, "open") == 0) {
        const std::optional<std::string> path = opened_path(target);
        if (!path) {
            return std::nullopt;
        }
        PyObject* mode = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : nullptr;
        PyObject* flags = PyTuple_GET_SIZE(args) > 2 ? PyTuple_GET_ITEM(args, 2) : nullptr;
        return std::make_pair(opened_for_writing(mode, flags) ? "w" : "r", *path);
    }
    if (std::strcmp(event, "os.listdir") == 0 || std::strcmp(event, "os.scandir") == 0) {
        if (in_import_system()) {
            return std::nullopt;
        }
        static PyObject* here = PyUnicode_InternFromString(".");
        const std::optional<std::string> path = opened_path(target == Py_None ? here : target);
        return path ? std::make_optional(std::make_pair("l", *path)) : std::nullopt;
    }
    return std::nullopt;
}

int audit(const char* event, PyObject* args, void* /*data*/) {
    if (g_open.empty() || g_paused > 0) {
        return 0;
    }
    const auto found = seen(event, args);
    if (!found) {
        return 0;
    }
    try {
        py::tuple item = py::make_tuple(
            found->first, py::reinterpret_steal<py::object>(PyUnicode_DecodeFSDefaultAndSize(
                              found->second.data(), static_cast<Py_ssize_t>(found->second.size()))));
        for (Window* window : g_open) {
            window->opened.append(item);
        }
    } catch (const py::error_already_set&) {
        PyErr_Clear();  // an open must never fail because of the record of it
    }
    return 0;
}

class DepWindow {
public:
    DepWindow() = default;
    DepWindow(const DepWindow&) = delete;
    DepWindow& operator=(const DepWindow&) = delete;
    ~DepWindow() {
        if (m_open) {
            close_window();
        }
    }

    void open() {
        if (m_open) {
            throw std::logic_error("this DepWindow is open already");
        }
        if (!g_audit_added) {
            if (PySys_AddAuditHook(audit, nullptr) < 0) {
                throw py::error_already_set();
            }
            g_audit_added = true;
        }
        m_window.namespaces.clear();
        const py::dict modules = py::module_::import("sys").attr("modules");
        for (const auto& item : modules) {
            PyObject* module = item.second.ptr();
            PyObject* dict = PyModule_Check(module) ? PyModule_GetDict(module) : nullptr;
            if (dict != nullptr) {
                m_window.namespaces.emplace_back(py::reinterpret_borrow<py::object>(dict),
                                                 dict_state(dict));
            }
        }
#if PY_VERSION_HEX < 0x030C0000
        if (g_open.empty()) {
            start_gathering_code();
        }
#endif
        g_open.push_back(&m_window);
        m_open = true;
    }

    // The code objects that ran, the files opened and directories listed,
    // and the module namespaces that changed, while it was open: (codes,
    // [(how, path), ...], [dict, ...]).
    py::tuple close() {
        if (!m_open) {
            throw std::logic_error("this DepWindow is not open");
        }
        close_window();
        py::list changed;
        for (const auto& [dict, state] : m_window.namespaces) {
            if (dict_changed_since(dict.ptr(), state)) {
                changed.append(dict);
            }
        }
        m_window.namespaces.clear();
        return py::make_tuple(m_window.codes, m_window.opened, changed);
    }

    bool is_open() const noexcept { return m_open; }

private:
    void close_window() {
        g_open.erase(std::remove(g_open.begin(), g_open.end(), &m_window), g_open.end());
        m_open = false;
#if PY_VERSION_HEX < 0x030C0000
        if (g_open.empty()) {
            stop_gathering_code();
        }
#endif
    }

    Window m_window;
    bool m_open = false;
};

// sys.monitoring's PY_START callback (Python >= 3.12): notes the code once,
// then disables the event for it until the next window restarts events.
py::object code_started(const py::object& code, const py::object& /*offset*/) {
    note_code(code.ptr());
    static py::object disable =
        py::module_::import("sys").attr("monitoring").attr("DISABLE");
    return disable;
}

// --- watches -------------------------------------------------------------

// Whether `type` has a valid version tag: then its next change clears the
// tag (and calls type watchers); a change of a type without one goes unseen.
bool has_version_tag(const PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030D0000
    return type->tp_version_tag != 0;
#else
    return PyType_HasFeature(const_cast<PyTypeObject*>(type), Py_TPFLAGS_VALID_VERSION_TAG);
#endif
}

// Gives `type` a valid version tag if it has none. False when it cannot
// have one.
bool tag_type(PyTypeObject* type) {
    if (has_version_tag(type)) {
        return true;
    }
#if PY_VERSION_HEX >= 0x030D0000
    return PyUnstable_Type_AssignVersionTag(type) != 0;
#else
    static PyObject* name = PyUnicode_InternFromString("__opweave_version_tag__");
    _PyType_Lookup(type, name);  // a lookup assigns the tag
    return has_version_tag(type);
#endif
}

class Watch {
public:
    Watch(const py::list& dicts, const py::list& types) {
        for (const py::handle& dict : dicts) {
            if (!PyDict_Check(dict.ptr())) {
                throw py::type_error("Watch takes dicts (module namespaces) and classes");
            }
            m_dicts.push_back(py::reinterpret_borrow<py::object>(dict));
        }
        for (const py::handle& type : types) {
            if (!PyType_Check(type.ptr())) {
                throw py::type_error("Watch takes dicts (module namespaces) and classes");
            }
            m_types.push_back(py::reinterpret_borrow<py::object>(type));
        }
#if PY_VERSION_HEX >= 0x030C0000
        add_watchers();
        for (const py::object& dict : m_dicts) {
            dict_state(dict.ptr());
        }
        for (const py::object& type : m_types) {
            if (PyType_Watch(g_type_watcher, type.ptr()) < 0) {
                throw py::error_already_set();
            }
        }
#endif
        refresh();
    }

    // Whether a namespace or class changed since the Watch was taken (or
    // last refreshed); a class that cannot be watched counts as changed.
    bool changed() {
        if (m_blind) {
            return true;
        }
#if PY_VERSION_HEX >= 0x030C0000
        if (g_epoch == m_since) {
            return false;
        }
        for (const py::object& object : m_dicts) {
            if (changed_after(object.ptr(), m_since)) {
                return true;
            }
        }
        for (const py::object& object : m_types) {
            if (changed_after(object.ptr(), m_since)) {
                return true;
            }
        }
        m_since = g_epoch;  // nothing of ours: the next check is one comparison
        return false;
#else
        for (std::size_t i = 0; i < m_dicts.size(); ++i) {
            if (dict_changed_since(m_dicts[i].ptr(), m_dict_versions[i])) {
                return true;
            }
        }
        for (std::size_t i = 0; i < m_types.size(); ++i) {
            const auto* type = reinterpret_cast<PyTypeObject*>(m_types[i].ptr());
            if (!has_version_tag(type) || type->tp_version_tag != m_type_versions[i]) {
                return true;
            }
        }
        return false;
#endif
    }

    // Takes the current state as the one changes are counted from.
    void refresh() {
        m_blind = false;
        for (const py::object& type : m_types) {
            m_blind = !tag_type(reinterpret_cast<PyTypeObject*>(type.ptr())) || m_blind;
        }
#if PY_VERSION_HEX >= 0x030C0000
        m_since = g_epoch;
#else
        m_dict_versions.clear();
        for (const py::object& dict : m_dicts) {
            m_dict_versions.push_back(dict_state(dict.ptr()));
        }
        m_type_versions.clear();
        for (const py::object& type : m_types) {
            m_type_versions.push_back(reinterpret_cast<PyTypeObject*>(type.ptr())->tp_version_tag);
        }
#endif
    }

    std::size_t size() const noexcept { return m_dicts.size() + m_types.size(); }

private:
#if PY_VERSION_HEX >= 0x030C0000
    std::uint64_t m_since = 0;
#else
    std::vector<std::uint64_t> m_dict_versions;
    std::vector<unsigned int> m_type_versions;
#endif
    std::vector<py::object> m_dicts;
    std::vector<py::object> m_types;
    bool m_blind = false;
};

}  // namespace

void init_deps(py::module_& m) {
    py::class_<DepWindow>(m, "DepWindow",
                          "While open, gathers the code objects that start running and the\n"
                          "files Python code opens (see _dep_window.py).")
        .def(py::init<>())
        .def("open", &DepWindow::open,
             "Starts gathering (on Python < 3.12 with a frame evaluation function).")
        .def("close", &DepWindow::close,
             "Stops gathering; returns (code objects, [(how, path), ...] (\"r\" read,\n"
             "\"w\" written, \"l\" listed), [namespace of a module loaded at open() that\n"
             "changed meanwhile, ...]).")
        .def_property_readonly("is_open", &DepWindow::is_open);
    m.def(
        "pause_dep_windows", [](bool pause) { g_paused += pause ? 1 : -1; }, py::arg("pause"),
        "Stops noting anything in the open DepWindows (True) until as many calls\n"
        "with False: the work of recording itself is no dependency.");
    m.def("code_started", &code_started, py::arg("code"), py::arg("offset"),
          "sys.monitoring's PY_START callback of the dependency windows: notes the\n"
          "code in every open window, and returns DISABLE.");
    py::class_<Watch>(m, "Watch",
                      "Whether module namespaces (dicts) or classes changed since it was\n"
                      "taken, without reading them: dict and type watchers (Python >= 3.12),\n"
                      "else their version tags.")
        .def(py::init<const py::list&, const py::list&>(), py::arg("dicts"), py::arg("types"))
        .def("changed", &Watch::changed,
             "Whether one of them changed since the watch was taken or refreshed.")
        .def("refresh", &Watch::refresh, "Counts changes from now on.")
        .def("__len__", &Watch::size);
    m.def(
        "record_files",
        [](const std::vector<std::string>& paths, std::int64_t since_ns) {
            std::vector<HeaderRecord> records;
            {
                py::gil_scoped_release release;
                records = record_files(paths, since_ns);
            }
            std::vector<FileTuple> found;
            found.reserve(records.size());
            for (HeaderRecord& record : records) {
                found.emplace_back(std::move(record.path), record.size, record.mtime_ns,
                                   record.ctime_ns, std::move(record.sha256));
            }
            return found;
        },
        py::arg("paths"), py::arg("since_ns"),
        "(path, size, mtime_ns, ctime_ns, sha256) of each of the files `paths`\n"
        "(absolute), read by a step that began at `since_ns`; no hash (\"\") when a\n"
        "file changed since then or is not a regular file (files_changed then finds\n"
        "it changed).");
    m.def("filesystem_now_ns", &filesystem_now_ns,
          "The filesystem clock now, in ns since the epoch (for record_files).");
    m.def(
        "files_changed",
        [](const std::vector<FileTuple>& files) {
            std::vector<HeaderRecord> records;
            records.reserve(files.size());
            for (const auto& [path, size, mtime_ns, ctime_ns, sha256] : files) {
                records.push_back({path, size, mtime_ns, ctime_ns, sha256});
            }
            py::gil_scoped_release release;
            return files_changed(records);
        },
        py::arg("files"),
        "Empty when every file of `files` (record_files' tuples) has its recorded\n"
        "content, else why not. One stat(2) each; a hash only where the stat differs.");
}

}  // namespace opweave::bindings

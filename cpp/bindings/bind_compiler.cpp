// opweave._core: the compiler driver, build_module and precompiled preludes.
// Compiling releases the GIL.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings/bindings.hpp"
#include "bindings/monitor.hpp"
#include "builder/compile_slots.hpp"
#include "opweave/compiler.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/precompiled_header.hpp"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

void init_job(py::module_& m) {
    py::enum_<OptLevel>(m, "OptLevel", "Optimisation level: -O0 to -O3.")
        .value("O0", OptLevel::o0)
        .value("O1", OptLevel::o1)
        .value("O2", OptLevel::o2)
        .value("O3", OptLevel::o3);
    py::enum_<DebugInfo>(m, "DebugInfo", "Whether to emit debug information (-g).")
        .value("NO", DebugInfo::no)
        .value("YES", DebugInfo::yes);

    py::class_<CompileJob>(m, "CompileJob", "One source file to compile into a shared library.")
        .def(py::init<>())
        .def_readwrite("source", &CompileJob::source)
        .def_readwrite("output", &CompileJob::output)
        .def_readwrite("depfile", &CompileJob::depfile,
                       "Where the compile step writes the files it read (-MD -MF), or empty.")
        .def_readwrite("flags", &CompileJob::flags)
        .def_readwrite("unkeyed_flags", &CompileJob::unkeyed_flags,
                       "Flags for the compile step that no cache key covers (a prelude).")
        .def_readwrite("include_dirs", &CompileJob::include_dirs)
        .def_readwrite("lib_dirs", &CompileJob::lib_dirs)
        .def_readwrite("libraries", &CompileJob::libraries)
        .def_readwrite("opt_level", &CompileJob::opt_level)
        .def_readwrite("debug_info", &CompileJob::debug_info);
}

py::dict result_to_dict(const CompileResult& result) {
    py::dict out;
    py::list commands;
    for (const auto& command : result.commands) {
        commands.append(text_list(command));
    }
    out["commands"] = commands;
    out["diagnostics"] = text(result.diagnostics);
    out["seconds"] = result.seconds;
    return out;
}

void init_system_compiler(py::module_& m) {
    m.def(
        "find_compiler", [](const std::string& cxx) { return path_text(find_compiler(cxx)); },
        py::arg("cxx") = "",
          "The absolute path of the C++ compiler: `cxx`, else $CXX, else the\n"
          "first of c++, g++, clang++ on PATH. Raises OpweaveError if none.");

    py::class_<Compiler>(m, "Compiler", "The compiler interface.");
    py::class_<SystemCompiler, Compiler>(m, "SystemCompiler",
                                         "A real g++ or clang++, run with posix_spawnp.")
        .def(py::init([](const std::string& cxx, const std::string& launcher, double timeout,
                         ModuleCache* version_records) {
                 CompilerOptions options;
                 options.cxx = cxx;
                 options.launcher = launcher;
                 options.timeout_seconds = timeout;
                 py::gil_scoped_release release;
                 if (version_records == nullptr) {
                     return std::make_unique<SystemCompiler>(options);
                 }
                 const VersionMemo memo = compiler_version_records(*version_records);
                 return std::make_unique<SystemCompiler>(options, &memo);
             }),
             py::arg("cxx") = "", py::arg("launcher") = "",
             py::arg("timeout") = CompilerOptions{}.timeout_seconds,
             py::arg("version_records") = static_cast<ModuleCache*>(nullptr),
             "version_records: a ModuleCache that keeps the compiler's `--version`\n"
             "output between processes (compiler_version_records), or None.")
        .def_property_readonly(
            "identity",
            [](const SystemCompiler& compiler) {
                const CompilerIdentity& identity = compiler.identity();
                py::dict out;
                out["path"] = text(identity.path);
                out["version"] = text(identity.version);
                out["launcher"] = text_list(identity.launcher);
                return out;
            },
            "dict(path, version, launcher): what about the compiler enters keys.")
        .def(
            "key_material",
            [](const SystemCompiler& compiler) { return text(compiler.identity().key_material()); },
            "The compiler identity as stable text, for cache keys.")
        .def("command_lines", &SystemCompiler::command_lines, py::arg("job"),
             "The command line(s) compile() would run.")
        .def("header_command_line", &SystemCompiler::header_command_line, py::arg("job"),
             "The command line compile_header() would run.")
        .def(
            "compile",
            [](const SystemCompiler& compiler, const CompileJob& job) {
                return result_to_dict(PythonMonitor::run(
                    [&](BuildMonitor* monitor) { return compiler.compile(job, monitor); }));
            },
            py::arg("job"), "Compiles; raises CompileError on failure.")
        .def(
            "compile_header",
            [](const SystemCompiler& compiler, const CompileJob& job) {
                return result_to_dict(PythonMonitor::run(
                    [&](BuildMonitor* monitor) { return compiler.compile_header(job, monitor); }));
            },
            py::arg("job"),
            "Compiles the header job.source into the precompiled header job.output;\n"
            "raises CompileError on failure.");
}


// headers_changed(origin) for an `Origin` (BuiltModule or Entry).
template <typename Origin>
void def_headers_changed(py::module_& m) {
    m.def(
        "headers_changed",
        [](const Origin& origin) {
            py::gil_scoped_release release;
            return headers_changed(origin.headers);
        },
        py::arg("origin"),
        "'' when every header `origin` (a BuiltModule or Entry) was compiled with\n"
        "still has its recorded content; otherwise why not. A module loaded from\n"
        "it earlier in the process passes this before it is used again.");
}

void init_request(py::module_& m) {
    py::class_<PreludeRequest>(m, "PreludeRequest",
                               "A precompiled header a module may be compiled with.")
        .def(py::init([](std::string header_text, std::string extra) {
                 return PreludeRequest{std::move(header_text), std::move(extra)};
             }),
             py::arg("header_text"), py::arg("extra") = "")
        .def_readwrite("header_text", &PreludeRequest::header_text)
        .def_readwrite("extra", &PreludeRequest::extra);
    py::class_<TranslationUnit>(m, "TranslationUnit",
                                "A unit compiled on its own (a cache entry) and linked into a "
                                "module.")
        .def(py::init([](std::string source, std::string label,
                         std::vector<std::string> exports) {
                 return TranslationUnit{std::move(source), std::move(label), std::move(exports)};
             }),
             py::arg("source"), py::arg("label") = "",
             py::arg("exports") = std::vector<std::string>{})
        .def_readwrite("source", &TranslationUnit::source)
        .def_readwrite("label", &TranslationUnit::label)
        .def_readwrite("exports", &TranslationUnit::exports,
                       "Keys of what the unit holds: recorded in its entry when built, for\n"
                       "ModuleCache.find_export (not part of the key).");
    py::class_<BuiltUnit>(m, "BuiltUnit", "What became of one unit while a module was built.")
        .def_readonly("key", &BuiltUnit::key)
        .def_readonly("label", &BuiltUnit::label)
        .def_property_readonly("outcome",
                               [](const BuiltUnit& b) { return outcome_name(b.outcome); })
        .def_readonly("compile_seconds", &BuiltUnit::compile_seconds);
    py::class_<ModuleRequest>(m, "ModuleRequest",
                              "Everything build_module needs to know about one module.")
        .def(py::init<>())
        .def("copy", [](const ModuleRequest& request) { return ModuleRequest(request); },
             "A copy that shares no object with this one (for another thread).")
        .def_readwrite("source", &ModuleRequest::source)
        .def_readwrite("job", &ModuleRequest::job)
        .def_readwrite("extra", &ModuleRequest::extra, "Key material beyond the job.")
        .def_readwrite("label", &ModuleRequest::label, "What it is (op names), for listings.")
        .def_readwrite("environment", &ModuleRequest::environment,
                       "Recorded in the entries it builds (exports compare it).")
        .def_readwrite("covered_header_dirs", &ModuleRequest::covered_header_dirs,
                       "Header directories the key covers (not tracked).")
        .def_readwrite("prelude", &ModuleRequest::prelude)
        .def_readwrite("units", &ModuleRequest::units,
                       "More translation units, compiled on their own and linked with source.")
        .def_readwrite("exports", &ModuleRequest::exports,
                       "The node keys whose functions the module exports: recorded in its\n"
                       "entry for ModuleCache.find_export (not part of the key). ValueError\n"
                       "from build_module for one that is not a key.")
        .def_readwrite("shared_code", &ModuleRequest::shared_code,
                       "With units: the support code several of them may hold; a name "
                       "defined in several units by one piece of it is merged at the link.");
    py::class_<BuiltModule>(m, "BuiltModule", "A verified module in the cache.")
        .def_readonly("key", &BuiltModule::key)
        .def_readonly("dir", &BuiltModule::dir)
        .def_readonly("library", &BuiltModule::library)
        .def_readonly("source", &BuiltModule::source)
        .def_property_readonly(
            "library_file", [](const BuiltModule& b) { return path_text(b.library); },
            "`library` as a str (what a cache hit uses: no pathlib.Path made).")
        .def_property_readonly(
            "source_file", [](const BuiltModule& b) { return path_text(b.source); },
            "`source` as a str.")
        .def_property_readonly("outcome",
                               [](const BuiltModule& b) { return outcome_name(b.outcome); })
        .def_readonly("compile_seconds", &BuiltModule::compile_seconds)
        .def_readonly("events", &BuiltModule::events)
        .def_readonly("units", &BuiltModule::units,
                      "Each unit, when the module was built here from units.")
        .def_readonly("headers", &BuiltModule::headers,
                      "The headers the entry was compiled with (HeaderRecord).");
    // Overloads rather than a list of HeaderRecord: the records stay in C++.
    def_headers_changed<BuiltModule>(m);
    def_headers_changed<Entry>(m);
}

// Requests are copied while the GIL is held, so another thread may change
// the caller's objects while a build runs.
void init_prelude(py::module_& m) {
    m.def("supports_prelude", &supports_prelude, py::arg("compiler"),
          "Whether modules compiled by `compiler` can use a precompiled prelude\n"
          "(GCC without a launcher).");
    m.def("prelude_key", &prelude_key, py::arg("compiler"), py::arg("job"),
          py::arg("header_text"), py::arg("extra") = "",
          "The cache key of the prelude `header_text` for modules compiled with `job`.");
    m.def(
        "prelude_text_of",
        [](const std::vector<std::string>& sources) {
            return prelude_text_of(std::vector<std::string_view>(sources.begin(), sources.end()));
        },
        py::arg("sources"),
        "The prelude of `sources`: the lines every one that includes Python.h\n"
        "starts its includes with (standard and NumPy headers only); empty when\n"
        "none includes it. A source compiles with a prelude only when its includes\n"
        "start with the prelude's text.");
    m.def(
        "build_prelude",
        [](ModuleCache& cache, const Compiler& compiler, ModuleRequest request) {
            return PythonMonitor::run([&](BuildMonitor* monitor) {
                return build_prelude(cache, compiler, request, monitor);
            });
        },
        py::arg("cache"), py::arg("compiler"), py::arg("request"),
        "Returns the CacheResult of request.prelude's entry, building it on a miss.\n"
        "Raises CompileError if the header does not compile.");
}

}  // namespace

void init_compiler(py::module_& m) {
    init_job(m);
    init_system_compiler(m);
    init_request(m);
    init_prelude(m);

    m.def(
        "request_key",
        [](const Compiler& compiler, const ModuleRequest& request) {
            return module_key(compiler, request);
        },
        py::arg("compiler"), py::arg("request"),
        "The key build_module looks up for `request` (its units' keys included).");
    m.def("unit_keys", &unit_keys, py::arg("compiler"), py::arg("request"),
          "The keys build_module files the units of `request` under, in order.");
    m.def("compile_jobs", &builder::compile_jobs, py::arg("requested"),
          "The compiles a build runs at once for compile_jobs=`requested`: itself, or\n"
          "when 0, the CPUs this process may use (its affinity and cgroup limit).");
    m.def(
        "build_module",
        [](ModuleCache& cache, const Compiler& compiler, ModuleRequest request,
           py::object on_prelude_missing, RemoteStorage* remote) {
            return PythonMonitor::run(
                [&](BuildMonitor* monitor) {
                    return build_module(cache, compiler, request, monitor, remote);
                },
                std::move(on_prelude_missing));
        },
        py::arg("cache"), py::arg("compiler"), py::arg("request"),
        py::arg("on_prelude_missing") = py::none(), py::arg("remote") = nullptr,
        "The verified BuiltModule for `request`, compiled into the cache on a miss.\n"
        "Calls on_prelude_missing(request) (if given) when a compile could use\n"
        "request.prelude, which is not built yet: before it, or with units that\n"
        "take every compile job, once they are compiled. With a `remote`\n"
        "RemoteStorage, a miss first asks it for the entry (one that verifies is\n"
        "a hit, with a 'fetched' event), and a module built here is put there.\n"
        "Raises CompileError on a failed compile, LockTimeout, CacheError, and\n"
        "KeyboardInterrupt (or whatever a signal handler raises) when interrupted.");
}

}  // namespace opweave::bindings

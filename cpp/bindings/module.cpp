// opweave._core: the binding module's entry point.
#include "bindings/bindings.hpp"
#include "bindings/monitor.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/version.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "opweave's C++ core: content hash, file locks, module cache and compiler driver,\n"
              "graph module assembly and the compiled-function runtime.";
    m.attr("__version__") = OPWEAVE_VERSION;
    m.attr("DEFAULT_LOCK_TIMEOUT") = opweave::CacheOptions{}.lock_timeout_seconds;
    m.attr("MODULE_LAYOUT_VERSION") = opweave::k_module_layout_version;
    m.attr("CACHE_FORMAT_VERSION") = opweave::ModuleCache::k_format_version;
    opweave::bindings::init_errors(m);
    opweave::bindings::init_monitor(m);
    opweave::bindings::init_hash(m);
    opweave::bindings::init_cache(m);
    opweave::bindings::init_remote(m);
    opweave::bindings::init_compiler(m);
    opweave::bindings::init_assembly(m);
    opweave::bindings::init_runtime(m);
    opweave::bindings::init_deps(m);
    opweave::bindings::init_dep_values(m);
}

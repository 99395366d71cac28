// opweave._core: the binding module's entry point.
#include "bindings/bindings.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "opweave's C++ core: content hash, file locks, module cache and compiler driver,\n"
              "graph module assembly and the compiled-function runtime.";
    m.attr("MODULE_LAYOUT_VERSION") = 1;
    opweave::bindings::init_errors(m);
    opweave::bindings::init_hash(m);
    opweave::bindings::init_cache(m);
    opweave::bindings::init_compiler(m);
    opweave::bindings::init_assembly(m);
    opweave::bindings::init_function(m);
}

// opweave core: what the link of a module from units checks.
#pragma once

#include <string>
#include <vector>

#include "opweave/compiler.hpp"

namespace opweave::builder {

// The flags that make the linker report every symbol the module leaves
// undefined (as warnings: Python's own symbols are resolved only when the
// interpreter loads the module). Duplicate definitions stay errors: there is
// no -z muldefs (link_merge.hpp merges the copies of one piece of code).
std::vector<std::string> link_check_flags();

// Checks what the link with link_check_flags() reported. Undefined symbols
// of Python (Py*, _Py*) and names reserved to the implementation (__*) are
// expected: their reports are removed from `result.diagnostics`. Any other undefined symbol (not found in the
// objects, the C and C++ runtimes or a declared library) throws a
// CompileError naming it and the object that references it.
void check_undefined_symbols(CompileResult& result);

}  // namespace opweave::builder

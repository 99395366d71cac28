// opweave core: what the link of a module from units checks.
#pragma once

#include <string>
#include <vector>

#include "opweave/compiler.hpp"

namespace opweave::cache {

// The flags that make the linker report every symbol the module leaves
// undefined (as warnings: Python's own symbols are resolved only when the
// interpreter loads the module). Duplicate definitions stay errors: there is
// no -z muldefs.
std::vector<std::string> link_check_flags();

// Checks what the link with link_check_flags() reported. Undefined symbols
// of Python (Py*, _Py*) and names reserved to the implementation (__*) are
// expected: their reports are removed from `result.diagnostics`. Any other undefined symbol (not found in the
// objects, the C and C++ runtimes or a declared library) throws a
// CompileError naming it and the object that references it.
void check_undefined_symbols(CompileResult& result);

// Whether a link that failed with `diagnostics` failed on names defined
// more than once, each named by exactly one of `shared_code` (so every copy
// comes from that piece of code, repeated in several translation units):
// then it may be linked again with them merged (-z muldefs).
bool duplicates_from_shared_code(const std::string& diagnostics,
                                 const std::vector<std::string>& shared_code);

}  // namespace opweave::cache

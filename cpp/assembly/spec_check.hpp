// opweave core (internal): the checks assemble_module makes of a ModuleSpec
// before it lays anything out.
#pragma once

#include "opweave/module_source.hpp"

namespace opweave::assembly {

// Throws std::invalid_argument for an inconsistent spec: an origin index out
// of range, a step id that is not positive or not unique, a function name
// that is not a C identifier, a bad export key or table name, unit names
// without units, or a unit given as text with other parts.
void validate_spec(const ModuleSpec& spec);

}  // namespace opweave::assembly

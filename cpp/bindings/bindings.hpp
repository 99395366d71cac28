// opweave._core: the pybind11 binding module, split by area. Each init_*
// adds one area's classes and functions to the module.
#pragma once

#include <pybind11/pybind11.h>

#include "opweave/module_cache.hpp"

namespace opweave::bindings {

// "hit", "built" or "built_by_other": how Python sees an Outcome.
const char* outcome_name(Outcome outcome);

void init_errors(pybind11::module_& m);
void init_hash(pybind11::module_& m);
void init_cache(pybind11::module_& m);
void init_compiler(pybind11::module_& m);

}  // namespace opweave::bindings

// opweave._core: the pybind11 binding module, split by area. Each init_*
// adds one area's classes and functions to the module.
#pragma once

#include <pybind11/pybind11.h>

#include <filesystem>
#include <string>
#include <vector>

#include "opweave/module_cache.hpp"

namespace opweave::bindings {

// "hit", "built" or "built_by_other": how Python sees an Outcome.
const char* outcome_name(Outcome outcome);

// A Python str from text that may not be valid UTF-8 (compiler output in a
// non-UTF-8 locale, bytes from a source file): bad bytes become U+FFFD
// instead of raising UnicodeDecodeError.
pybind11::str text(const std::string& value);

// A path as Python's os.fsdecode() gives it (undecodable bytes kept as
// surrogates, so the str names the same file): for paths a cache hit
// reads, where a pathlib.Path would make pybind11 import pathlib.
pybind11::str path_text(const std::filesystem::path& path);

// The same for each element of a list of strings.
pybind11::list text_list(const std::vector<std::string>& values);

void init_errors(pybind11::module_& m);
void init_hash(pybind11::module_& m);
void init_cache(pybind11::module_& m);
void init_remote(pybind11::module_& m);
void init_compiler(pybind11::module_& m);
void init_assembly(pybind11::module_& m);
// The types of cpp/bindings/runtime/: Function, StepRunner, CellCall.
void init_runtime(pybind11::module_& m);
void init_deps(pybind11::module_& m);
void init_dep_values(pybind11::module_& m);

}  // namespace opweave::bindings

// opweave's CPython runtime: the types a compiled graph is called through.
//
// Written against the C API alone (no pybind11): the call paths are hot and
// their reference counting is checked by hand, so nothing sits between them
// and the interpreter. cpp/bindings/bind_runtime.cpp adds each type to the
// module opweave._core.
#pragma once

#include <Python.h>

namespace opweave::bindings::runtime {

// Each returns a new type object (a new reference), or NULL with an exception
// set.

// opweave._core.Function: a graph module's instance called through vectorcall,
// or a Python callable in the same type (function.cpp).
PyObject* new_function_type();

// opweave._core.StepRunner: a graph run as a table of steps, compiled and
// Python, in C (step_runner.cpp, step_table.cpp).
PyObject* new_step_runner_type();

// opweave._core.CellCall: a compiled graph bound to PyTensor's storage cells
// (cell_call.cpp).
PyObject* new_cell_call_type();

}  // namespace opweave::bindings::runtime

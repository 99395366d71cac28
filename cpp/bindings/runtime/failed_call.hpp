// opweave._core: what the compiled-call types (Function, StepRunner) hand to
// their Python error handler when a call fails or is unusual.
#pragma once

#include <Python.h>

namespace opweave::bindings::runtime {

// The raised exception, normalized and with its traceback attached, as a
// new reference; NULL (and nothing cleared) if none is set. Clears it.
PyObject* fetch_error();

// A vectorcall's arguments as a tuple of the positional ones and a dict of
// the keyword ones (None when `kwnames` is NULL), both new references.
// Returns -1 with an exception set (and both NULL) on failure.
int pack_call(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** positional,
              PyObject** keywords);

}  // namespace opweave::bindings::runtime

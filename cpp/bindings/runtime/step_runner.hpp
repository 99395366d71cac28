// opweave._core.StepRunner: the runner's object and its step table, shared
// by step_runner.cpp (the call path, the runner's lifetime and its
// type) and step_table.cpp (the constructor: its arguments and the step
// table's checks). Internal to the runtime.
#pragma once

#include <Python.h>

#include <cstddef>

#include "opweave/graph_abi.h"

namespace opweave::bindings::runtime::step_runner {

enum class StepKind : long { compiled = 0, python = 1 };

struct Step {
    StepKind kind;
    int n_inputs;
    int n_outputs;
    int n_gc;
    int* inputs;            // n_inputs slots, then n_outputs slots (one allocation)
    int* outputs;           // inside `inputs`' allocation
    unsigned char* offer;   // n_outputs flags, inside `inputs`' allocation (compiled)
    int* gc;                // n_gc slots emptied after the step, or NULL
    PyObject* callable;     // a Python step's callable
    const opweave_graph_abi* abi;  // a compiled step's module table
    void* graph;            // its graph instance, from abi->create
    PyObject* owner;        // keeps the module (and `abi`) alive
    PyObject* orphans;      // the tuple `graph` was created from
};

struct StepRunnerObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject* weakrefs;
    PyObject** slots;       // n_slots owned references or NULL
    Step* steps;            // n_steps of them
    PyObject** scratch;     // a compiled step's inputs and outputs during its run()
    int* outputs;           // n_outputs slots returned
    int* transient;         // n_transient slots emptied at the end of a call
    int* filtered;          // n_filtered argument positions passed through `filter`
    PyObject* filter;       // callable(position, value) or NULL
    PyObject* on_error;     // callable(args, kwargs, error, step, block) or NULL
    PyObject* on_reenter;   // callable(*args) run instead of a re-entrant call, or NULL
    Py_ssize_t n_steps;
    int n_inputs;
    int n_slots;
    int n_outputs;
    int n_transient;
    int n_filtered;
    int unpack_single;
    int running;
};

// The constructor (tp_new): parses and checks the step table and creates
// each compiled step's graph instance. In step_table.cpp.
PyObject* runner_new(PyTypeObject* type, PyObject* args, PyObject* kwargs);

// A call: runs the steps on the arguments, or hands an unusual call or a
// failure to on_error. In step_runner.cpp.
PyObject* runner_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames);

}  // namespace opweave::bindings::runtime::step_runner

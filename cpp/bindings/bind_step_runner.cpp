// opweave._core.StepRunner: runs a graph as a table of steps, in C.
//
// The per-node linker splits a graph into steps: compiled graph modules (one
// per compiled region or node, each run through its graph ABI, see
// include/opweave/graph_abi.h) and Python callables (the nodes without C
// code). The steps pass values through an array of slots, each an owned
// reference or NULL. A call puts its arguments into the first slots, runs
// the steps in order, empties each step's `gc` slots once it has run, and
// returns new references to the output slots' values. At the end of every
// call, successful or not, every slot but the kept and constant ones is
// emptied, so that a call holds nothing of the caller's after it returns.
//
// A kept slot whose step offers it keeps its storage from one call to the
// next: its value is handed back to run() as that output's storage (a
// preallocated output). An output of the runner is never kept, so no later
// call writes into an object a caller was given.
//
// The per-call path allocates nothing but the result (and the argument list
// of a Python step): the pointer arrays a compiled step's run() takes live in
// one scratch buffer sized at construction. Re-entrant calls are refused, so
// one buffer is enough. The GIL is held throughout.
#include <Python.h>
#include <structmember.h>

#include <algorithm>
#include <cstddef>

#include "bindings/bindings.hpp"
#include "bindings/failed_call.hpp"
#include "opweave/graph_abi.h"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

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
    Py_ssize_t n_steps;
    int n_inputs;
    int n_slots;
    int n_outputs;
    int n_transient;
    int n_filtered;
    int unpack_single;
    int running;
};

// Where a failed call failed: the step (-1 before the first step, in the
// filter) and the failing block of a compiled step (0 for any other
// failure). A failure that is no step's (a re-entrant call, an empty output
// slot) is not handed to on_error.
struct Failure {
    Py_ssize_t step = -1;
    int block = 0;
    bool for_on_error = false;
};

// --- The call path ----------------------------------------------------------

int empty_slot_error(Py_ssize_t step, int slot) {
    PyErr_Format(PyExc_SystemError, "step %zd reads slot %d, which is empty", step, slot);
    return -1;
}

// Runs a compiled step: 0 on success, the failed block (> 0) or -1 with an
// exception set. The values it writes replace its output slots'; a slot it
// offers gives its value to run() as that output's storage.
int run_compiled(StepRunnerObject* self, Py_ssize_t index, const Step& step) {
    PyObject** slots = self->slots;
    PyObject** inputs = self->scratch;
    PyObject** outputs = self->scratch + step.n_inputs;
    for (int i = 0; i < step.n_inputs; ++i) {
        inputs[i] = slots[step.inputs[i]];
        if (inputs[i] == NULL) {
            return empty_slot_error(index, step.inputs[i]);
        }
    }
    for (int j = 0; j < step.n_outputs; ++j) {
        // A step never writes a slot it reads (checked at construction), so
        // releasing an old value here leaves the inputs alive.
        PyObject** slot = &slots[step.outputs[j]];
        if (step.offer[j]) {
            outputs[j] = *slot;  // run() takes this reference over
            *slot = NULL;
        } else {
            outputs[j] = NULL;
            Py_CLEAR(*slot);
        }
    }
    int status = step.abi->run(step.graph, inputs, outputs);
    if (status == 0) {
        for (int j = 0; j < step.n_outputs; ++j) {
            if (outputs[j] == NULL) {
                PyErr_Format(PyExc_SystemError, "step %zd: the compiled graph left output %d unset",
                             index, j);
                status = -1;
                break;
            }
        }
    } else if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_SystemError, "step %zd: the compiled graph failed without an exception",
                     index);
    }
    if (status != 0) {
        for (int j = 0; j < step.n_outputs; ++j) {
            Py_XDECREF(outputs[j]);
        }
        return status;
    }
    for (int j = 0; j < step.n_outputs; ++j) {
        slots[step.outputs[j]] = outputs[j];  // emptied above
    }
    return 0;
}

// Runs a Python step: callable(list of input values) must return a sequence
// of one value per output. 0 on success, -1 with an exception set.
int run_python(StepRunnerObject* self, Py_ssize_t index, const Step& step) {
    PyObject** slots = self->slots;
    PyObject* arguments = PyList_New(step.n_inputs);
    if (arguments == NULL) {
        return -1;
    }
    for (int i = 0; i < step.n_inputs; ++i) {
        PyObject* value = slots[step.inputs[i]];
        if (value == NULL) {
            Py_DECREF(arguments);
            return empty_slot_error(index, step.inputs[i]);
        }
        PyList_SET_ITEM(arguments, i, Py_NewRef(value));
    }
    PyObject* returned = PyObject_CallOneArg(step.callable, arguments);
    Py_DECREF(arguments);
    if (returned == NULL) {
        return -1;
    }
    PyObject* values = PySequence_Fast(returned, "");
    if (values == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Format(PyExc_TypeError,
                         "step %zd (a Python step) returned %.200s, not a sequence of %d values",
                         index, Py_TYPE(returned)->tp_name, step.n_outputs);
        }
        Py_DECREF(returned);
        return -1;
    }
    Py_DECREF(returned);
    const Py_ssize_t n_values = PySequence_Fast_GET_SIZE(values);
    if (n_values != step.n_outputs) {
        PyErr_Format(PyExc_ValueError, "step %zd (a Python step) returned %zd values, expected %d",
                     index, n_values, step.n_outputs);
        Py_DECREF(values);
        return -1;
    }
    PyObject** items = PySequence_Fast_ITEMS(values);
    for (int j = 0; j < step.n_outputs; ++j) {
        Py_XSETREF(slots[step.outputs[j]], Py_NewRef(items[j]));
    }
    Py_DECREF(values);
    return 0;
}

int apply_filter(StepRunnerObject* self) {
    for (int i = 0; i < self->n_filtered; ++i) {
        const int position = self->filtered[i];
        PyObject* number = PyLong_FromLong(position);
        if (number == NULL) {
            return -1;
        }
        PyObject* call_args[2] = {number, self->slots[position]};
        PyObject* value = PyObject_Vectorcall(self->filter, call_args, 2, NULL);
        Py_DECREF(number);
        if (value == NULL) {
            return -1;
        }
        Py_SETREF(self->slots[position], value);
    }
    return 0;
}

PyObject* collect_outputs(StepRunnerObject* self) {
    const bool single = self->unpack_single && self->n_outputs == 1;
    PyObject* result = single ? NULL : PyList_New(self->n_outputs);
    if (!single && result == NULL) {
        return NULL;
    }
    for (int i = 0; i < self->n_outputs; ++i) {
        PyObject* value = self->slots[self->outputs[i]];
        if (value == NULL) {
            Py_XDECREF(result);
            PyErr_Format(PyExc_SystemError, "output %d (slot %d) is empty after the last step", i,
                         self->outputs[i]);
            return NULL;
        }
        if (single) {
            return Py_NewRef(value);
        }
        PyList_SET_ITEM(result, i, Py_NewRef(value));
    }
    return result;
}

void clear_transient(StepRunnerObject* self) {
    for (int i = 0; i < self->n_transient; ++i) {
        Py_CLEAR(self->slots[self->transient[i]]);
    }
}

// Runs the steps on `args` (exactly n_inputs of them). Returns the result, or
// NULL with an exception set and `failure` saying where.
PyObject* run_steps(StepRunnerObject* self, PyObject* const* args, Failure* failure) {
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this opweave step runner is already running (a re-entrant or "
                        "concurrent call); create a second one to run it in parallel");
        return NULL;
    }
    self->running = 1;
    PyObject** slots = self->slots;
    for (int i = 0; i < self->n_inputs; ++i) {
        Py_XSETREF(slots[i], Py_NewRef(args[i]));
    }
    PyObject* result = NULL;
    failure->for_on_error = true;
    if (apply_filter(self) == 0) {
        Py_ssize_t index = 0;
        for (; index < self->n_steps; ++index) {
            const Step& step = self->steps[index];
            const int status = step.kind == StepKind::compiled ? run_compiled(self, index, step)
                                                               : run_python(self, index, step);
            if (status != 0) {
                failure->step = index;
                failure->block = status > 0 ? status : 0;
                break;
            }
            for (int g = 0; g < step.n_gc; ++g) {
                Py_CLEAR(slots[step.gc[g]]);
            }
        }
        if (index == self->n_steps) {
            result = collect_outputs(self);
            failure->for_on_error = false;
        }
    }
    clear_transient(self);
    self->running = 0;
    return result;
}

// on_error(args, kwargs or None, error or None, step, block). Takes the
// raised exception, if any, as `error`.
PyObject* call_on_error(StepRunnerObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames, Py_ssize_t step, int block) {
    PyObject* error = fetch_error();
    PyObject* positional = NULL;
    PyObject* keywords = NULL;
    PyObject* result = NULL;
    if (pack_call(args, nargs, kwnames, &positional, &keywords) == 0) {
        result = PyObject_CallFunction(self->on_error, "OOOni", positional, keywords,
                                       error != NULL ? error : Py_None, step, block);
    }
    Py_XDECREF(positional);
    Py_XDECREF(keywords);
    Py_XDECREF(error);
    return result;
}

PyObject* runner_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames) {
    auto* self = reinterpret_cast<StepRunnerObject*>(callable);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const bool keywords = kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0;
    if (!keywords && nargs == self->n_inputs) {
        Failure failure;
        PyObject* result = run_steps(self, args, &failure);
        if (result != NULL || self->on_error == NULL || !failure.for_on_error) {
            return result;
        }
        return call_on_error(self, args, nargs, NULL, failure.step, failure.block);
    }
    if (self->on_error == NULL) {
        if (keywords) {
            PyErr_SetString(PyExc_TypeError, "a step runner takes no keyword arguments");
        } else {
            PyErr_Format(PyExc_TypeError, "expected %d positional arguments, got %zd",
                         self->n_inputs, nargs);
        }
        return NULL;
    }
    return call_on_error(self, args, nargs, keywords ? kwnames : NULL, -1, 0);
}

// call_exact(*args): no on_error.
PyObject* runner_call_exact(PyObject* object, PyObject* const* args, Py_ssize_t nargs) {
    auto* self = reinterpret_cast<StepRunnerObject*>(object);
    if (nargs != self->n_inputs) {
        PyErr_Format(PyExc_TypeError, "expected %d arguments, got %zd", self->n_inputs, nargs);
        return NULL;
    }
    Failure failure;
    return run_steps(self, args, &failure);
}

// --- Lifetime ---------------------------------------------------------------

// Destroys every graph instance before releasing the object that owns its
// module, then frees the step table.
void release_steps(StepRunnerObject* self) {
    Step* steps = self->steps;
    const Py_ssize_t n_steps = self->n_steps;
    self->steps = NULL;
    self->n_steps = 0;
    for (Py_ssize_t k = 0; k < n_steps; ++k) {
        Step& step = steps[k];
        if (step.graph != NULL) {
            step.abi->destroy(step.graph);
            step.graph = NULL;
        }
    }
    for (Py_ssize_t k = 0; k < n_steps; ++k) {
        Step& step = steps[k];
        Py_CLEAR(step.orphans);
        Py_CLEAR(step.owner);
        Py_CLEAR(step.callable);
        PyMem_Free(step.inputs);
        PyMem_Free(step.gc);
    }
    PyMem_Free(steps);
}

void clear_slots(StepRunnerObject* self) {
    if (self->slots != NULL) {
        for (int i = 0; i < self->n_slots; ++i) {
            Py_CLEAR(self->slots[i]);
        }
    }
}

int runner_traverse(PyObject* object, visitproc visit, void* arg) {
    auto* self = reinterpret_cast<StepRunnerObject*>(object);
    Py_VISIT(Py_TYPE(object));
    for (Py_ssize_t k = 0; k < self->n_steps; ++k) {
        Py_VISIT(self->steps[k].owner);
        Py_VISIT(self->steps[k].orphans);
        Py_VISIT(self->steps[k].callable);
    }
    if (self->slots != NULL) {
        for (int i = 0; i < self->n_slots; ++i) {
            Py_VISIT(self->slots[i]);
        }
    }
    Py_VISIT(self->filter);
    Py_VISIT(self->on_error);
    return 0;
}

// Leaves the arrays allocated (and a call on a cleared runner reports an
// empty slot) but for the step table, which it releases.
int runner_clear(PyObject* object) {
    auto* self = reinterpret_cast<StepRunnerObject*>(object);
    if (self->running) {
        return 0;
    }
    release_steps(self);
    clear_slots(self);
    Py_CLEAR(self->filter);
    Py_CLEAR(self->on_error);
    return 0;
}

void runner_dealloc(PyObject* object) {
    auto* self = reinterpret_cast<StepRunnerObject*>(object);
    PyTypeObject* type = Py_TYPE(object);
    PyObject_GC_UnTrack(object);
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs(object);
    }
    self->running = 0;
    runner_clear(object);
    PyMem_Free(self->slots);
    PyMem_Free(self->scratch);
    PyMem_Free(self->outputs);
    PyMem_Free(self->transient);
    PyMem_Free(self->filtered);
    type->tp_free(object);
    Py_DECREF(type);
}

// --- Construction -----------------------------------------------------------

// Per-slot roles, for the checks made at construction.
enum SlotRole : unsigned char {
    k_role_constant = 1,
    k_role_kept = 2,
};

// An int in [low, high) from `item`, or -1 with an exception set (`what`
// names it in the message).
int read_index(PyObject* item, int low, int high, const char* what) {
    const long value = PyLong_AsLong(item);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (value < low || value >= high) {
        PyErr_Format(PyExc_ValueError, "%s: %ld is not in [%d, %d)", what, value, low, high);
        return -1;
    }
    return static_cast<int>(value);
}

// Reads the slot indices of `sequence` into a new PyMem array of *count
// items (*array NULL when empty). Returns -1 with an exception set.
int read_slots(PyObject* sequence, int n_slots, const char* what, int** array, int* count) {
    PyObject* fast = PySequence_Fast(sequence, what);
    if (fast == NULL) {
        return -1;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    *count = static_cast<int>(n);
    *array = n > 0 ? static_cast<int*>(PyMem_Malloc(static_cast<size_t>(n) * sizeof(int))) : NULL;
    if (n > 0 && *array == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        const int slot = read_index(PySequence_Fast_GET_ITEM(fast, i), 0, n_slots, what);
        if (slot < 0) {
            Py_DECREF(fast);
            return -1;
        }
        (*array)[i] = slot;
    }
    Py_DECREF(fast);
    return 0;
}

// Fills `step` from the spec of step `index`: its slots, and for a compiled
// step its graph instance. Returns -1 with an exception set.
int parse_step(StepRunnerObject* self, Py_ssize_t index, PyObject* spec, Step* step) {
    PyObject* fast = PySequence_Fast(spec, "a step must be a tuple");
    if (fast == NULL) {
        return -1;
    }
    PyObject** items = PySequence_Fast_ITEMS(fast);
    const Py_ssize_t size = PySequence_Fast_GET_SIZE(fast);
    const long kind = size > 0 ? PyLong_AsLong(items[0]) : -1;
    int status = -1;
    PyObject* inputs = NULL;
    PyObject* outputs = NULL;
    PyObject* offer = NULL;
    if (kind == -1 && PyErr_Occurred()) {
        // not an int: reported as it is
    } else if (kind == static_cast<long>(StepKind::compiled) && size == 7) {
        step->kind = StepKind::compiled;
        inputs = PySequence_Fast(items[4], "a step's inputs must be a sequence");
        outputs = PySequence_Fast(items[5], "a step's outputs must be a sequence");
        offer = PySequence_Fast(items[6], "a step's offer must be a sequence");
        status = inputs != NULL && outputs != NULL && offer != NULL ? 0 : -1;
    } else if (kind == static_cast<long>(StepKind::python) && size == 4) {
        step->kind = StepKind::python;
        inputs = PySequence_Fast(items[2], "a step's inputs must be a sequence");
        outputs = PySequence_Fast(items[3], "a step's outputs must be a sequence");
        status = inputs != NULL && outputs != NULL ? 0 : -1;
    } else {
        PyErr_Format(PyExc_ValueError,
                     "step %zd: expected (0, abi, owner, orphans, inputs, outputs, offer) or "
                     "(1, callable, inputs, outputs)",
                     index);
    }
    if (status == 0) {
        const Py_ssize_t n_inputs = PySequence_Fast_GET_SIZE(inputs);
        const Py_ssize_t n_outputs = PySequence_Fast_GET_SIZE(outputs);
        step->n_inputs = static_cast<int>(n_inputs);
        step->n_outputs = static_cast<int>(n_outputs);
        const size_t n_indices = static_cast<size_t>(n_inputs + n_outputs);
        step->inputs = static_cast<int*>(
            PyMem_Malloc(n_indices * sizeof(int) + static_cast<size_t>(n_outputs) + 1));
        if (step->inputs == NULL) {
            PyErr_NoMemory();
            status = -1;
        } else {
            step->outputs = step->inputs + n_inputs;
            step->offer = reinterpret_cast<unsigned char*>(step->inputs + n_indices);
        }
        for (Py_ssize_t i = 0; status == 0 && i < n_inputs + n_outputs; ++i) {
            PyObject* item = i < n_inputs ? PySequence_Fast_GET_ITEM(inputs, i)
                                          : PySequence_Fast_GET_ITEM(outputs, i - n_inputs);
            const int slot = read_index(item, 0, self->n_slots, "a step's slot");
            if (slot < 0) {
                status = -1;
            } else {
                step->inputs[i] = slot;
            }
        }
        if (status < 0 && PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyObject* error = fetch_error();
            PyErr_Format(PyExc_ValueError, "step %zd: %S", index, error);
            Py_XDECREF(error);
        }
    }
    if (status == 0 && step->kind == StepKind::python) {
        if (!PyCallable_Check(items[1])) {
            PyErr_Format(PyExc_TypeError, "step %zd: a Python step's callable is not callable",
                         index);
            status = -1;
        } else {
            step->callable = Py_NewRef(items[1]);
        }
    }
    if (status == 0 && step->kind == StepKind::compiled) {
        if (PySequence_Fast_GET_SIZE(offer) != step->n_outputs) {
            PyErr_Format(PyExc_ValueError, "step %zd: offer has %zd flags for %d outputs", index,
                         PySequence_Fast_GET_SIZE(offer), step->n_outputs);
            status = -1;
        }
        for (int j = 0; status == 0 && j < step->n_outputs; ++j) {
            const int truth = PyObject_IsTrue(PySequence_Fast_GET_ITEM(offer, j));
            status = truth < 0 ? -1 : 0;
            step->offer[j] = static_cast<unsigned char>(truth > 0);
        }
        PyObject* capsule = items[1];
        const auto* abi = status == 0 && PyCapsule_IsValid(capsule, OPWEAVE_GRAPH_ABI_CAPSULE)
                              ? static_cast<const opweave_graph_abi*>(
                                    PyCapsule_GetPointer(capsule, OPWEAVE_GRAPH_ABI_CAPSULE))
                              : NULL;
        if (status == 0 && abi == NULL) {
            PyErr_Format(PyExc_TypeError, "step %zd: abi must be a capsule named %s", index,
                         OPWEAVE_GRAPH_ABI_CAPSULE);
            status = -1;
        } else if (status == 0 && abi->abi_version != OPWEAVE_GRAPH_ABI_VERSION) {
            PyErr_Format(PyExc_ValueError, "step %zd: the graph module has ABI version %d, "
                         "expected %d", index, abi->abi_version, OPWEAVE_GRAPH_ABI_VERSION);
            status = -1;
        } else if (status == 0 &&
                   (abi->n_inputs != step->n_inputs || abi->n_outputs != step->n_outputs)) {
            PyErr_Format(PyExc_ValueError,
                         "step %zd: the graph has %d inputs and %d outputs, the step %d and %d",
                         index, abi->n_inputs, abi->n_outputs, step->n_inputs, step->n_outputs);
            status = -1;
        }
        if (status == 0) {
            step->orphans = PySequence_Tuple(items[3]);
            status = step->orphans != NULL ? 0 : -1;
        }
        if (status == 0 && PyTuple_GET_SIZE(step->orphans) != abi->n_orphans) {
            PyErr_Format(PyExc_ValueError, "step %zd: the graph needs %d orphans, got %zd", index,
                         abi->n_orphans, PyTuple_GET_SIZE(step->orphans));
            status = -1;
        }
        if (status == 0) {
            // The owner holds the module whose code `abi` points into: it is
            // taken before the graph exists and released after it is gone.
            step->owner = Py_NewRef(items[2]);
            step->abi = abi;
            step->graph = abi->create(PySequence_Fast_ITEMS(step->orphans));
            status = step->graph != NULL ? 0 : -1;
        }
    }
    Py_XDECREF(offer);
    Py_XDECREF(outputs);
    Py_XDECREF(inputs);
    Py_DECREF(fast);
    return status;
}

// Checks what a step writes: neither an argument nor a constant slot, nor a
// slot it reads, nor one slot twice.
int check_step_writes(const StepRunnerObject* self, Py_ssize_t index, const Step& step,
                      const unsigned char* roles) {
    for (int j = 0; j < step.n_outputs; ++j) {
        const int slot = step.outputs[j];
        const char* problem = NULL;
        if (slot < self->n_inputs) {
            problem = "an argument slot";
        } else if (roles[slot] & k_role_constant) {
            problem = "a constant slot";
        } else if (std::find(step.inputs, step.inputs + step.n_inputs, slot) !=
                   step.inputs + step.n_inputs) {
            problem = "a slot it reads";
        } else if (std::find(step.outputs, step.outputs + j, slot) != step.outputs + j) {
            problem = "a slot it writes twice";
        }
        if (problem != NULL) {
            PyErr_Format(PyExc_ValueError, "step %zd writes slot %d, %s", index, slot, problem);
            return -1;
        }
    }
    return 0;
}

int parse_constants(StepRunnerObject* self, PyObject* constants, unsigned char* roles) {
    PyObject* fast = PySequence_Fast(constants, "constants must be a sequence of (slot, value)");
    if (fast == NULL) {
        return -1;
    }
    int status = 0;
    for (Py_ssize_t i = 0; status == 0 && i < PySequence_Fast_GET_SIZE(fast); ++i) {
        PyObject* pair = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "constants must be a sequence of (slot, value)");
            status = -1;
            break;
        }
        const int slot =
            read_index(PyTuple_GET_ITEM(pair, 0), self->n_inputs, self->n_slots, "constant slot");
        if (slot < 0) {
            status = -1;
        } else if (roles[slot] != 0) {
            PyErr_Format(PyExc_ValueError, "constant slot %d is given twice", slot);
            status = -1;
        } else {
            roles[slot] = k_role_constant;
            self->slots[slot] = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
        }
    }
    Py_DECREF(fast);
    return status;
}

int parse_keep(StepRunnerObject* self, PyObject* keep, unsigned char* roles) {
    int* kept = NULL;
    int n_kept = 0;
    int status = read_slots(keep, self->n_slots, "keep", &kept, &n_kept);
    for (int i = 0; status == 0 && i < n_kept; ++i) {
        const int slot = kept[i];
        if (slot < self->n_inputs || (roles[slot] & k_role_constant)) {
            PyErr_Format(PyExc_ValueError, "keep: slot %d is %s", slot,
                         slot < self->n_inputs ? "an argument slot" : "a constant slot");
            status = -1;
        } else {
            roles[slot] |= k_role_kept;
        }
    }
    PyMem_Free(kept);
    return status;
}

int parse_gc(StepRunnerObject* self, PyObject* gc, const unsigned char* roles) {
    PyObject* fast = PySequence_Fast(gc, "gc must be None or a sequence of slot sequences");
    if (fast == NULL) {
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(fast) != self->n_steps) {
        PyErr_Format(PyExc_ValueError, "gc has %zd entries for %zd steps",
                     PySequence_Fast_GET_SIZE(fast), self->n_steps);
        Py_DECREF(fast);
        return -1;
    }
    int status = 0;
    for (Py_ssize_t k = 0; status == 0 && k < self->n_steps; ++k) {
        Step& step = self->steps[k];
        status = read_slots(PySequence_Fast_GET_ITEM(fast, k), self->n_slots, "gc", &step.gc,
                            &step.n_gc);
        for (int g = 0; status == 0 && g < step.n_gc; ++g) {
            if (roles[step.gc[g]] != 0) {
                PyErr_Format(PyExc_ValueError, "gc[%zd]: slot %d is %s", k, step.gc[g],
                             (roles[step.gc[g]] & k_role_constant) ? "a constant slot"
                                                                   : "a kept slot");
                status = -1;
            }
        }
    }
    Py_DECREF(fast);
    return status;
}

// Everything after the slots and constants: keep, outputs, steps, gc,
// filtered, and the derived tables.
int parse_tables(StepRunnerObject* self, PyObject* steps, PyObject* outputs, PyObject* keep,
                 PyObject* gc, PyObject* filtered, unsigned char* roles) {
    if (parse_keep(self, keep, roles) < 0 ||
        read_slots(outputs, self->n_slots, "outputs", &self->outputs, &self->n_outputs) < 0) {
        return -1;
    }
    for (int i = 0; i < self->n_outputs; ++i) {
        if (roles[self->outputs[i]] & k_role_kept) {
            PyErr_Format(PyExc_ValueError,
                         "output slot %d is kept: a later call would change a returned value",
                         self->outputs[i]);
            return -1;
        }
    }
    PyObject* fast = PySequence_Fast(steps, "steps must be a sequence of tuples");
    if (fast == NULL) {
        return -1;
    }
    const Py_ssize_t n_steps = PySequence_Fast_GET_SIZE(fast);
    self->steps = static_cast<Step*>(PyMem_Calloc(static_cast<size_t>(n_steps) + 1, sizeof(Step)));
    if (self->steps == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    size_t scratch = 1;
    for (Py_ssize_t k = 0; k < n_steps; ++k) {
        // Counted first, so that a failure releases what this step holds.
        self->n_steps = k + 1;
        Step& step = self->steps[k];
        if (parse_step(self, k, PySequence_Fast_GET_ITEM(fast, k), &step) < 0 ||
            check_step_writes(self, k, step, roles) < 0) {
            Py_DECREF(fast);
            return -1;
        }
        if (step.kind == StepKind::compiled) {
            scratch = std::max(scratch, static_cast<size_t>(step.n_inputs + step.n_outputs));
        }
    }
    Py_DECREF(fast);
    if (gc != Py_None && parse_gc(self, gc, roles) < 0) {
        return -1;
    }
    if (read_slots(filtered, self->n_inputs, "filtered", &self->filtered, &self->n_filtered) <
        0) {
        return -1;
    }
    self->scratch = static_cast<PyObject**>(PyMem_Calloc(scratch, sizeof(PyObject*)));
    self->transient = static_cast<int*>(
        PyMem_Malloc((static_cast<size_t>(self->n_slots) + 1) * sizeof(int)));
    if (self->scratch == NULL || self->transient == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int slot = 0; slot < self->n_slots; ++slot) {
        if (roles[slot] == 0) {
            self->transient[self->n_transient++] = slot;
        }
    }
    return 0;
}

PyObject* runner_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"n_inputs", "n_slots",  "steps", "outputs",
                                     "constants", "filtered", "filter", "gc",
                                     "keep",      "on_error", "unpack_single", NULL};
    int n_inputs = 0;
    int n_slots = 0;
    PyObject* steps = NULL;
    PyObject* outputs = NULL;
    PyObject* empty = PyTuple_New(0);
    if (empty == NULL) {
        return NULL;
    }
    PyObject* constants = empty;
    PyObject* filtered = empty;
    PyObject* filter = Py_None;
    PyObject* gc = Py_None;
    PyObject* keep = empty;
    PyObject* on_error = Py_None;
    int unpack_single = 1;
    PyObject* result = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiOO|$OOOOOOp:StepRunner",
                                     const_cast<char**>(keywords), &n_inputs, &n_slots, &steps,
                                     &outputs, &constants, &filtered, &filter, &gc, &keep,
                                     &on_error, &unpack_single)) {
        // reported
    } else if (n_inputs < 0 || n_slots < n_inputs) {
        PyErr_Format(PyExc_ValueError, "need 0 <= n_inputs <= n_slots, got %d and %d", n_inputs,
                     n_slots);
    } else if (filter != Py_None && !PyCallable_Check(filter)) {
        PyErr_SetString(PyExc_TypeError, "filter must be callable");
    } else if (on_error != Py_None && !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "on_error must be callable");
    } else {
        result = type->tp_alloc(type, 0);
    }
    auto* self = reinterpret_cast<StepRunnerObject*>(result);
    unsigned char* roles = NULL;
    if (self != NULL) {
        self->vectorcall = runner_vectorcall;
        self->n_inputs = n_inputs;
        self->unpack_single = unpack_single;
        self->filter = filter != Py_None ? Py_NewRef(filter) : NULL;
        self->on_error = on_error != Py_None ? Py_NewRef(on_error) : NULL;
        self->slots = static_cast<PyObject**>(
            PyMem_Calloc(static_cast<size_t>(n_slots) + 1, sizeof(PyObject*)));
        roles = static_cast<unsigned char*>(PyMem_Calloc(static_cast<size_t>(n_slots) + 1, 1));
        int status = 0;
        if (self->slots == NULL || roles == NULL) {
            PyErr_NoMemory();
            status = -1;
        } else {
            self->n_slots = n_slots;
            status = parse_constants(self, constants, roles);
        }
        if (status == 0) {
            status = parse_tables(self, steps, outputs, keep, gc, filtered, roles);
        }
        if (status == 0 && self->n_filtered > 0 && self->filter == NULL) {
            PyErr_SetString(PyExc_TypeError, "filtered positions need a filter");
            status = -1;
        }
        if (status < 0) {
            Py_CLEAR(result);
        }
    }
    PyMem_Free(roles);
    Py_DECREF(empty);
    return result;
}

// --- The type -----------------------------------------------------------------

PyMethodDef runner_methods[] = {
    {"call_exact",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(runner_call_exact)),
     METH_FASTCALL,
     "call_exact(*args): runs the steps on exactly n_inputs arguments (the filtered ones\n"
     "through filter), never calling on_error: a failure raises its exception."},
    {NULL, NULL, 0, NULL},
};

PyMemberDef runner_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(StepRunnerObject, vectorcall), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(StepRunnerObject, weakrefs), READONLY, NULL},
    {"n_inputs", T_INT, offsetof(StepRunnerObject, n_inputs), READONLY,
     "The number of arguments a call takes."},
    {"n_steps", T_PYSSIZET, offsetof(StepRunnerObject, n_steps), READONLY,
     "The number of steps."},
    {NULL, 0, 0, 0, NULL},
};

const char* k_step_runner_doc =
    "StepRunner(n_inputs, n_slots, steps, outputs, *, constants=(), filtered=(), filter=None,\n"
    "           gc=None, keep=(), on_error=None, unpack_single=True)\n"
    "\n"
    "Runs a graph as a table of steps that pass values through n_slots slots; a call's\n"
    "arguments fill slots 0..n_inputs-1. A step is (0, abi, owner, orphans, inputs,\n"
    "outputs, offer), a compiled graph module's instance (created now from the orphans;\n"
    "owner is kept alive as long as the runner; offer[j] hands the slot's current value\n"
    "to run() as output j's storage), or (1, callable, inputs, outputs), where\n"
    "callable(list of input values) returns one value per output. inputs and outputs\n"
    "are slot indices. A call returns the outputs' slots as a list (or the single\n"
    "output, with unpack_single). gc[k] lists the slots emptied after step k; the slots\n"
    "in keep keep their values between calls, and constants' (slot, value) pairs stay;\n"
    "every other slot is emptied at the end of every call. Before the steps, each\n"
    "argument position in filtered is replaced by filter(position, value). A call with\n"
    "keywords or a wrong argument count returns on_error(args, kwargs, None, -1, 0); a\n"
    "failed step k returns on_error(args, None, error, k, failed_block) (k is -1 when\n"
    "the filter failed), or raises without on_error.";

}  // namespace

void init_step_runner(py::module_& m) {
    PyType_Slot slots[] = {
        {Py_tp_doc, const_cast<char*>(k_step_runner_doc)},
        {Py_tp_new, reinterpret_cast<void*>(runner_new)},
        {Py_tp_dealloc, reinterpret_cast<void*>(runner_dealloc)},
        {Py_tp_traverse, reinterpret_cast<void*>(runner_traverse)},
        {Py_tp_clear, reinterpret_cast<void*>(runner_clear)},
        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
        {Py_tp_methods, runner_methods},
        {Py_tp_members, runner_members},
        {0, NULL},
    };
    PyType_Spec spec = {
        "opweave._core.StepRunner",
        static_cast<int>(sizeof(StepRunnerObject)),
        0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
        slots,
    };
    PyObject* type = PyType_FromSpec(&spec);
    if (type == NULL) {
        throw py::error_already_set();
    }
    m.add_object("StepRunner", py::reinterpret_steal<py::object>(type));
}

}  // namespace opweave::bindings

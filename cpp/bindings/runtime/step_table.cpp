// opweave._core.StepRunner's constructor: parses its arguments and checks
// the step table it describes, then creates each compiled step's graph
// instance.
//
// Every slot index is checked to be in range, and every step's writes: no
// step writes an argument or constant slot, a slot it reads, or one slot
// twice (so the call path, in step_runner.cpp, can release a slot's
// old value before the step runs). Constant and kept slots are never
// emptied by gc, and no output slot is kept. What is left, the transient
// slots, is listed for the call path to empty after every call, and the
// scratch buffer is sized for the largest compiled step.
#include <Python.h>

#include <algorithm>
#include <cstddef>

#include "bindings/runtime/failed_call.hpp"
#include "bindings/runtime/step_runner.hpp"
#include "opweave/graph_abi.h"

namespace opweave::bindings::runtime::step_runner {

namespace {

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

// Reads the kind of a step from its spec's first item, and opens its
// inputs, outputs and (compiled) offer as fast sequences, new references
// the caller releases. Returns -1 with an exception set.
int open_step(Py_ssize_t index, PyObject** items, Py_ssize_t size, Step* step,
              PyObject** inputs, PyObject** outputs, PyObject** offer) {
    const long kind = size > 0 ? PyLong_AsLong(items[0]) : -1;
    if (kind == -1 && PyErr_Occurred()) {
        return -1;  // not an int: reported as it is
    }
    if (kind == static_cast<long>(StepKind::compiled) && size == 7) {
        step->kind = StepKind::compiled;
        *inputs = PySequence_Fast(items[4], "a step's inputs must be a sequence");
        *outputs = PySequence_Fast(items[5], "a step's outputs must be a sequence");
        *offer = PySequence_Fast(items[6], "a step's offer must be a sequence");
        return *inputs != NULL && *outputs != NULL && *offer != NULL ? 0 : -1;
    }
    if (kind == static_cast<long>(StepKind::python) && size == 4) {
        step->kind = StepKind::python;
        *inputs = PySequence_Fast(items[2], "a step's inputs must be a sequence");
        *outputs = PySequence_Fast(items[3], "a step's outputs must be a sequence");
        return *inputs != NULL && *outputs != NULL ? 0 : -1;
    }
    PyErr_Format(PyExc_ValueError,
                 "step %zd: expected (0, abi, owner, orphans, inputs, outputs, offer) or "
                 "(1, callable, inputs, outputs)",
                 index);
    return -1;
}

// Reads a step's input and output slots into one allocation, which also
// holds its offer flags. Returns -1 with an exception set.
int read_step_slots(const StepRunnerObject* self, Py_ssize_t index, PyObject* inputs,
                    PyObject* outputs, Step* step) {
    const Py_ssize_t n_inputs = PySequence_Fast_GET_SIZE(inputs);
    const Py_ssize_t n_outputs = PySequence_Fast_GET_SIZE(outputs);
    step->n_inputs = static_cast<int>(n_inputs);
    step->n_outputs = static_cast<int>(n_outputs);
    const size_t n_indices = static_cast<size_t>(n_inputs + n_outputs);
    step->inputs = static_cast<int*>(
        PyMem_Malloc(n_indices * sizeof(int) + static_cast<size_t>(n_outputs) + 1));
    if (step->inputs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    step->outputs = step->inputs + n_inputs;
    step->offer = reinterpret_cast<unsigned char*>(step->inputs + n_indices);
    for (Py_ssize_t i = 0; i < n_inputs + n_outputs; ++i) {
        PyObject* item = i < n_inputs ? PySequence_Fast_GET_ITEM(inputs, i)
                                      : PySequence_Fast_GET_ITEM(outputs, i - n_inputs);
        const int slot = read_index(item, 0, self->n_slots, "a step's slot");
        if (slot < 0) {
            if (PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyObject* error = fetch_error();
                PyErr_Format(PyExc_ValueError, "step %zd: %S", index, error);
                Py_XDECREF(error);
            }
            return -1;
        }
        step->inputs[i] = slot;
    }
    return 0;
}

// Takes a Python step's callable. Returns -1 with an exception set.
int take_callable(Py_ssize_t index, PyObject* callable, Step* step) {
    if (!PyCallable_Check(callable)) {
        PyErr_Format(PyExc_TypeError, "step %zd: a Python step's callable is not callable",
                     index);
        return -1;
    }
    step->callable = Py_NewRef(callable);
    return 0;
}

// Reads a compiled step's offer flags, one per output. Returns -1 with an
// exception set.
int read_offer(Py_ssize_t index, PyObject* offer, Step* step) {
    if (PySequence_Fast_GET_SIZE(offer) != step->n_outputs) {
        PyErr_Format(PyExc_ValueError, "step %zd: offer has %zd flags for %d outputs", index,
                     PySequence_Fast_GET_SIZE(offer), step->n_outputs);
        return -1;
    }
    for (int j = 0; j < step->n_outputs; ++j) {
        const int truth = PyObject_IsTrue(PySequence_Fast_GET_ITEM(offer, j));
        step->offer[j] = static_cast<unsigned char>(truth > 0);
        if (truth < 0) {
            return -1;
        }
    }
    return 0;
}

// The graph ABI table in a compiled step's capsule, checked against the
// step's slots, or NULL with an exception set.
const opweave_graph_abi* read_abi(Py_ssize_t index, PyObject* capsule, const Step& step) {
    const auto* abi = PyCapsule_IsValid(capsule, OPWEAVE_GRAPH_ABI_CAPSULE)
                          ? static_cast<const opweave_graph_abi*>(
                                PyCapsule_GetPointer(capsule, OPWEAVE_GRAPH_ABI_CAPSULE))
                          : NULL;
    if (abi == NULL) {
        PyErr_Format(PyExc_TypeError, "step %zd: abi must be a capsule named %s", index,
                     OPWEAVE_GRAPH_ABI_CAPSULE);
    } else if (abi->abi_version != OPWEAVE_GRAPH_ABI_VERSION) {
        PyErr_Format(PyExc_ValueError, "step %zd: the graph module has ABI version %d, "
                     "expected %d", index, abi->abi_version, OPWEAVE_GRAPH_ABI_VERSION);
        abi = NULL;
    } else if (abi->n_inputs != step.n_inputs || abi->n_outputs != step.n_outputs) {
        PyErr_Format(PyExc_ValueError,
                     "step %zd: the graph has %d inputs and %d outputs, the step %d and %d",
                     index, abi->n_inputs, abi->n_outputs, step.n_inputs, step.n_outputs);
        abi = NULL;
    }
    return abi;
}

// Creates a compiled step's graph instance from its spec's abi, owner and
// orphans. Returns -1 with an exception set.
int create_graph(Py_ssize_t index, PyObject** items, Step* step) {
    const opweave_graph_abi* abi = read_abi(index, items[1], *step);
    if (abi == NULL) {
        return -1;
    }
    step->orphans = PySequence_Tuple(items[3]);
    if (step->orphans == NULL) {
        return -1;
    }
    if (PyTuple_GET_SIZE(step->orphans) != abi->n_orphans) {
        PyErr_Format(PyExc_ValueError, "step %zd: the graph needs %d orphans, got %zd", index,
                     abi->n_orphans, PyTuple_GET_SIZE(step->orphans));
        return -1;
    }
    // The owner holds the module whose code `abi` points into: it is taken
    // before the graph exists and released after it is gone.
    step->owner = Py_NewRef(items[2]);
    step->abi = abi;
    step->graph = abi->create(PySequence_Fast_ITEMS(step->orphans));
    return step->graph != NULL ? 0 : -1;
}

// Fills `step` from the spec of step `index`: its slots, and for a compiled
// step its graph instance. Returns -1 with an exception set.
int parse_step(StepRunnerObject* self, Py_ssize_t index, PyObject* spec, Step* step) {
    PyObject* fast = PySequence_Fast(spec, "a step must be a tuple");
    if (fast == NULL) {
        return -1;
    }
    PyObject** items = PySequence_Fast_ITEMS(fast);
    PyObject* inputs = NULL;
    PyObject* outputs = NULL;
    PyObject* offer = NULL;
    int status = open_step(index, items, PySequence_Fast_GET_SIZE(fast), step, &inputs,
                           &outputs, &offer);
    if (status == 0) {
        status = read_step_slots(self, index, inputs, outputs, step);
    }
    if (status == 0 && step->kind == StepKind::python) {
        status = take_callable(index, items[1], step);
    }
    if (status == 0 && step->kind == StepKind::compiled) {
        status = read_offer(index, offer, step) == 0 ? create_graph(index, items, step) : -1;
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

// Reads keep and outputs: no output slot is kept.
int parse_outputs(StepRunnerObject* self, PyObject* outputs, PyObject* keep,
                  unsigned char* roles) {
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
    return 0;
}

// Reads the step table and checks what each step writes. *scratch grows to
// the largest compiled step's inputs and outputs.
int parse_steps(StepRunnerObject* self, PyObject* steps, const unsigned char* roles,
                size_t* scratch) {
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
            *scratch = std::max(*scratch, static_cast<size_t>(step.n_inputs + step.n_outputs));
        }
    }
    Py_DECREF(fast);
    return 0;
}

// Allocates what a call uses: the scratch buffer of `scratch` pointers, and
// the list of transient slots (neither constant nor kept).
int make_call_buffers(StepRunnerObject* self, size_t scratch, const unsigned char* roles) {
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

// Everything after the slots and constants: keep, outputs, steps, gc,
// filtered, and the derived tables.
int parse_tables(StepRunnerObject* self, PyObject* steps, PyObject* outputs, PyObject* keep,
                 PyObject* gc, PyObject* filtered, unsigned char* roles) {
    size_t scratch = 1;
    if (parse_outputs(self, outputs, keep, roles) < 0 ||
        parse_steps(self, steps, roles, &scratch) < 0) {
        return -1;
    }
    if (gc != Py_None && parse_gc(self, gc, roles) < 0) {
        return -1;
    }
    if (read_slots(filtered, self->n_inputs, "filtered", &self->filtered, &self->n_filtered) <
        0) {
        return -1;
    }
    return make_call_buffers(self, scratch, roles);
}

// The constructor's arguments, borrowed. constants, filtered and keep
// default to an empty tuple, filter, gc and on_error to None.
struct RunnerArgs {
    int n_inputs = 0;
    int n_slots = 0;
    PyObject* steps = NULL;
    PyObject* outputs = NULL;
    PyObject* constants = NULL;
    PyObject* filtered = NULL;
    PyObject* filter = NULL;
    PyObject* gc = NULL;
    PyObject* keep = NULL;
    PyObject* on_error = NULL;
    int unpack_single = 1;
    PyObject* on_reenter = NULL;
};

// Parses and checks the constructor's arguments into `parsed`, `empty` (an
// empty tuple) standing for the omitted sequences. Returns -1 with an
// exception set.
int parse_args(PyObject* args, PyObject* kwargs, PyObject* empty, RunnerArgs* parsed) {
    static const char* keywords[] = {"n_inputs", "n_slots",  "steps", "outputs",
                                     "constants", "filtered", "filter", "gc",
                                     "keep",      "on_error", "unpack_single", "on_reenter",
                                     NULL};
    RunnerArgs& a = *parsed;
    a.constants = a.filtered = a.keep = empty;
    a.filter = a.gc = a.on_error = a.on_reenter = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiOO|$OOOOOOpO:StepRunner",
                                     const_cast<char**>(keywords), &a.n_inputs, &a.n_slots,
                                     &a.steps, &a.outputs, &a.constants, &a.filtered, &a.filter,
                                     &a.gc, &a.keep, &a.on_error, &a.unpack_single,
                                     &a.on_reenter)) {
        return -1;
    }
    if (a.on_reenter != Py_None && !PyCallable_Check(a.on_reenter)) {
        PyErr_SetString(PyExc_TypeError, "on_reenter must be callable");
        return -1;
    }
    if (a.n_inputs < 0 || a.n_slots < a.n_inputs) {
        PyErr_Format(PyExc_ValueError, "need 0 <= n_inputs <= n_slots, got %d and %d",
                     a.n_inputs, a.n_slots);
        return -1;
    }
    if (a.filter != Py_None && !PyCallable_Check(a.filter)) {
        PyErr_SetString(PyExc_TypeError, "filter must be callable");
        return -1;
    }
    if (a.on_error != Py_None && !PyCallable_Check(a.on_error)) {
        PyErr_SetString(PyExc_TypeError, "on_error must be callable");
        return -1;
    }
    return 0;
}

// Fills a new runner from its checked arguments: its slots, constants and
// tables. Returns -1 with an exception set; the runner's dealloc then frees
// what it holds.
int fill_runner(StepRunnerObject* self, const RunnerArgs& a) {
    self->vectorcall = runner_vectorcall;
    self->n_inputs = a.n_inputs;
    self->unpack_single = a.unpack_single;
    self->filter = a.filter != Py_None ? Py_NewRef(a.filter) : NULL;
    self->on_error = a.on_error != Py_None ? Py_NewRef(a.on_error) : NULL;
    self->on_reenter = a.on_reenter != Py_None ? Py_NewRef(a.on_reenter) : NULL;
    self->slots = static_cast<PyObject**>(
        PyMem_Calloc(static_cast<size_t>(a.n_slots) + 1, sizeof(PyObject*)));
    auto* roles =
        static_cast<unsigned char*>(PyMem_Calloc(static_cast<size_t>(a.n_slots) + 1, 1));
    int status = 0;
    if (self->slots == NULL || roles == NULL) {
        PyErr_NoMemory();
        status = -1;
    } else {
        self->n_slots = a.n_slots;
        status = parse_constants(self, a.constants, roles);
    }
    if (status == 0) {
        status = parse_tables(self, a.steps, a.outputs, a.keep, a.gc, a.filtered, roles);
    }
    if (status == 0 && self->n_filtered > 0 && self->filter == NULL) {
        PyErr_SetString(PyExc_TypeError, "filtered positions need a filter");
        status = -1;
    }
    PyMem_Free(roles);
    return status;
}

}  // namespace

PyObject* runner_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    PyObject* empty = PyTuple_New(0);
    if (empty == NULL) {
        return NULL;
    }
    RunnerArgs parsed;
    PyObject* result = NULL;
    if (parse_args(args, kwargs, empty, &parsed) == 0) {
        result = type->tp_alloc(type, 0);
    }
    if (result != NULL && fill_runner(reinterpret_cast<StepRunnerObject*>(result), parsed) < 0) {
        Py_CLEAR(result);
    }
    Py_DECREF(empty);
    return result;
}

}  // namespace opweave::bindings::runtime::step_runner

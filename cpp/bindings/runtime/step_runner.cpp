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
//
// This file holds the call path (the run loop, failure handling, the
// vectorcall and call_exact), the runner's lifetime and its type;
// step_table.cpp holds the constructor, which parses and checks the step
// table. step_runner.hpp declares the object and the step table they share.
#include <Python.h>
#include <structmember.h>

#include <cstddef>

#include "bindings/runtime/types.hpp"
#include "bindings/runtime/failed_call.hpp"
#include "bindings/runtime/step_runner.hpp"

namespace opweave::bindings::runtime {

namespace step_runner {

namespace {

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

}  // namespace

PyObject* runner_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames) {
    auto* self = reinterpret_cast<StepRunnerObject*>(callable);
    if (self->running && self->on_reenter != NULL) {  // e.g. from a Python step
        return PyObject_Vectorcall(self->on_reenter, args, nargsf, kwnames);
    }
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

namespace {

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
    Py_VISIT(self->on_reenter);
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
    Py_CLEAR(self->on_reenter);
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
    "           gc=None, keep=(), on_error=None, unpack_single=True, on_reenter=None)\n"
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
    "the filter failed), or raises without on_error. A call made while the runner runs\n"
    "(from a Python step) returns on_reenter(*args, **kwargs), or raises RuntimeError\n"
    "without it.";

}  // namespace

}  // namespace step_runner

PyObject* new_step_runner_type() {
    using namespace step_runner;
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
    return PyType_FromSpec(&spec);
}

}  // namespace opweave::bindings::runtime

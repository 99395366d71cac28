// opweave._core.CellCall: a compiled graph bound to storage cells.
//
// PyTensor's Function keeps each input and output of a graph in a cell (a
// one-element list) and calls its virtual machine with no arguments. A
// CellCall is that call, in C: it reads the input cells, calls the graph's
// function with their values, writes each output into its cell and returns
// the list of outputs. When the function raises, the exception's
// `failed_node` (an int, set by opweave's linkers) becomes
// `position_of_error`, which PyTensor reads to name the failing node.
// With `updates` (pairs of an input's and an output's index), each such
// input cell then takes its output's value, as PyTensor's own virtual
// machines do for a graph's updates (Scan's loop relies on it).
// Other attributes (`nodes`, `thunks`, `storage_map`, ...) live in the
// instance's __dict__, set from Python.
#include <Python.h>
#include <structmember.h>

#include <cstddef>

#include "bindings/runtime/types.hpp"
#include "bindings/runtime/failed_call.hpp"

namespace opweave::bindings::runtime {

namespace cell_call {

namespace {

// Input values up to this count are passed from the stack.
constexpr Py_ssize_t k_stack_inputs = 16;

struct CellCallObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject* function;  // the graph: input values in, a list of outputs out
    PyObject* inputs;    // tuple of input cells (lists)
    PyObject* outputs;   // tuple of output cells (lists)
    PyObject* updates;   // tuple of (input index, output index) pairs
    PyObject* dict;
    PyObject* weakrefs;
    Py_ssize_t position_of_error;
};

int check_cells(PyObject* cells, const char* what) {
    if (!PyTuple_Check(cells)) {
        PyErr_Format(PyExc_TypeError, "CellCall %s must be a tuple of lists", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cells); ++i) {
        PyObject* cell = PyTuple_GET_ITEM(cells, i);
        if (!PyList_Check(cell) || PyList_GET_SIZE(cell) < 1) {
            PyErr_Format(PyExc_TypeError, "CellCall %s[%zd] must be a non-empty list", what, i);
            return -1;
        }
    }
    return 0;
}

// Records the failing node of the raised exception, if it names one.
void note_failed_node(CellCallObject* self) {
    PyObject* error = fetch_error();
    if (error == NULL) {
        return;
    }
    PyObject* failed = PyObject_GetAttrString(error, "failed_node");
    if (failed == NULL) {
        PyErr_Clear();
    } else {
        Py_ssize_t index = PyLong_Check(failed) ? PyLong_AsSsize_t(failed) : -1;
        if (index == -1 && PyErr_Occurred()) {
            PyErr_Clear();
        } else if (PyLong_Check(failed)) {
            self->position_of_error = index;
        }
        Py_DECREF(failed);
    }
    PyErr_Restore(Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(error))), error,
                  PyException_GetTraceback(error));
}

// Writes the outputs into their cells; -1 with an error set if `result` is
// not a list of one value per output cell.
int store_outputs(CellCallObject* self, PyObject* result) {
    Py_ssize_t n = PyTuple_GET_SIZE(self->outputs);
    if (!PyList_Check(result) || PyList_GET_SIZE(result) != n) {
        PyErr_Format(PyExc_TypeError, "CellCall: the function returned %s, not a list of %zd",
                     Py_TYPE(result)->tp_name, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* cell = PyTuple_GET_ITEM(self->outputs, i);
        if (!PyList_Check(cell) || PyList_GET_SIZE(cell) < 1) {
            PyErr_Format(PyExc_TypeError, "CellCall output cell %zd is no longer a list", i);
            return -1;
        }
        PyObject* value = PyList_GET_ITEM(result, i);
        Py_INCREF(value);
        if (PyList_SetItem(cell, 0, value) != 0) {
            return -1;
        }
    }
    return 0;
}

// Each updated input cell takes its output's value (checked at creation).
int apply_updates(CellCallObject* self, PyObject* result) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->updates); ++i) {
        PyObject* pair = PyTuple_GET_ITEM(self->updates, i);
        Py_ssize_t in = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
        Py_ssize_t out = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 1));
        PyObject* cell = PyTuple_GET_ITEM(self->inputs, in);
        if (!PyList_Check(cell) || PyList_GET_SIZE(cell) < 1) {
            PyErr_Format(PyExc_TypeError, "CellCall input cell %zd is no longer a list", in);
            return -1;
        }
        if (PyList_SetItem(cell, 0, Py_NewRef(PyList_GET_ITEM(result, out))) != 0) {
            return -1;
        }
    }
    return 0;
}

// `updates` as stored: a tuple of (input, output) index pairs in range.
int check_updates(PyObject* updates, Py_ssize_t n_inputs, Py_ssize_t n_outputs) {
    if (!PyTuple_Check(updates)) {
        PyErr_SetString(PyExc_TypeError, "CellCall updates must be a tuple of index pairs");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(updates); ++i) {
        PyObject* pair = PyTuple_GET_ITEM(updates, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(pair, 0)) ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(pair, 1))) {
            PyErr_Format(PyExc_TypeError, "CellCall updates[%zd] must be a pair of ints", i);
            return -1;
        }
        Py_ssize_t in = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
        Py_ssize_t out = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 1));
        if (in < 0 || in >= n_inputs || out < 0 || out >= n_outputs) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_ValueError, "CellCall updates[%zd] = (%zd, %zd) is out of range",
                             i, in, out);
            }
            return -1;
        }
    }
    return 0;
}

PyObject* call_with(CellCallObject* self, PyObject** values, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* cell = PyTuple_GET_ITEM(self->inputs, i);
        if (!PyList_Check(cell) || PyList_GET_SIZE(cell) < 1) {
            for (Py_ssize_t j = 0; j < i; ++j) {
                Py_DECREF(values[j]);
            }
            PyErr_Format(PyExc_TypeError, "CellCall input cell %zd is no longer a list", i);
            return NULL;
        }
        values[i] = Py_NewRef(PyList_GET_ITEM(cell, 0));
    }
    PyObject* result = PyObject_Vectorcall(self->function, values, n, NULL);
    for (Py_ssize_t i = 0; i < n; ++i) {
        Py_DECREF(values[i]);
    }
    if (result == NULL) {
        note_failed_node(self);
        return NULL;
    }
    if (store_outputs(self, result) != 0 || apply_updates(self, result) != 0) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
}

PyObject* cell_call_vectorcall(PyObject* callable, PyObject* const*, size_t nargsf,
                               PyObject* kwnames) {
    auto* self = reinterpret_cast<CellCallObject*>(callable);
    if (PyVectorcall_NARGS(nargsf) != 0 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "CellCall takes no arguments");
        return NULL;
    }
    if (self->function == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "CellCall was cleared");
        return NULL;
    }
    self->position_of_error = -1;
    Py_ssize_t n = PyTuple_GET_SIZE(self->inputs);
    if (n <= k_stack_inputs) {
        PyObject* values[k_stack_inputs];
        return call_with(self, values, n);
    }
    auto** values = static_cast<PyObject**>(PyMem_Malloc(sizeof(PyObject*) * n));
    if (values == NULL) {
        return PyErr_NoMemory();
    }
    PyObject* result = call_with(self, values, n);
    PyMem_Free(values);
    return result;
}

PyObject* cell_call_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"function", "inputs", "outputs", "updates", NULL};
    PyObject* function = NULL;
    PyObject* inputs = NULL;
    PyObject* outputs = NULL;
    PyObject* updates = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!|O:CellCall", const_cast<char**>(names),
                                     &function, &PyTuple_Type, &inputs, &PyTuple_Type, &outputs,
                                     &updates)) {
        return NULL;
    }
    if (!PyCallable_Check(function)) {
        PyErr_SetString(PyExc_TypeError, "CellCall function must be callable");
        return NULL;
    }
    if (check_cells(inputs, "inputs") != 0 || check_cells(outputs, "outputs") != 0) {
        return NULL;
    }
    PyObject* no_updates = PyTuple_New(0);
    if (no_updates == NULL) {
        return NULL;
    }
    if (updates == NULL) {
        updates = no_updates;
    }
    if (check_updates(updates, PyTuple_GET_SIZE(inputs), PyTuple_GET_SIZE(outputs)) != 0) {
        Py_DECREF(no_updates);
        return NULL;
    }
    auto* self = reinterpret_cast<CellCallObject*>(type->tp_alloc(type, 0));
    if (self == NULL) {
        Py_DECREF(no_updates);
        return NULL;
    }
    self->vectorcall = cell_call_vectorcall;
    self->function = Py_NewRef(function);
    self->inputs = Py_NewRef(inputs);
    self->outputs = Py_NewRef(outputs);
    self->updates = Py_NewRef(updates);
    Py_DECREF(no_updates);
    self->position_of_error = -1;
    return reinterpret_cast<PyObject*>(self);
}

int cell_call_traverse(PyObject* object, visitproc visit, void* arg) {
    auto* self = reinterpret_cast<CellCallObject*>(object);
    Py_VISIT(Py_TYPE(object));
    Py_VISIT(self->function);
    Py_VISIT(self->inputs);
    Py_VISIT(self->outputs);
    Py_VISIT(self->updates);
    Py_VISIT(self->dict);
    return 0;
}

int cell_call_clear(PyObject* object) {
    auto* self = reinterpret_cast<CellCallObject*>(object);
    Py_CLEAR(self->function);
    Py_CLEAR(self->dict);
    // The cell tuples stay (a cleared object's call checks them): they hold
    // lists, which a cycle through them is broken at.
    return 0;
}

void cell_call_dealloc(PyObject* object) {
    auto* self = reinterpret_cast<CellCallObject*>(object);
    PyTypeObject* type = Py_TYPE(object);
    PyObject_GC_UnTrack(object);
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs(object);
    }
    cell_call_clear(object);
    Py_CLEAR(self->inputs);
    Py_CLEAR(self->outputs);
    Py_CLEAR(self->updates);
    type->tp_free(object);
    Py_DECREF(type);
}

PyMemberDef cell_call_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CellCallObject, vectorcall), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(CellCallObject, dict), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CellCallObject, weakrefs), READONLY, NULL},
    {"position_of_error", T_PYSSIZET, offsetof(CellCallObject, position_of_error), 0,
     "The index of the node that raised in the last call (its exception's failed_node), "
     "else -1."},
    {"function", T_OBJECT, offsetof(CellCallObject, function), READONLY,
     "The graph's function: input values in, a list of output values out."},
    {"inputs", T_OBJECT, offsetof(CellCallObject, inputs), READONLY, "The input cells."},
    {"outputs", T_OBJECT, offsetof(CellCallObject, outputs), READONLY, "The output cells."},
    {"updates", T_OBJECT, offsetof(CellCallObject, updates), READONLY,
     "(input index, output index) pairs: each such input cell takes its output's value "
     "after a call."},
    {NULL, 0, 0, 0, NULL},
};

const char* k_cell_call_doc =
    "CellCall(function, inputs, outputs, updates=())\n"
    "\n"
    "function bound to storage cells (tuples of one-element lists): a call, with no\n"
    "arguments, passes the input cells' values to function, writes each value of the\n"
    "list it returns into the matching output cell, then each (input, output) pair of\n"
    "updates' output value into that input cell, and returns that list. When\n"
    "function raises an exception with an int failed_node, position_of_error is set\n"
    "to it (else it is -1). Instances take attributes.";

}  // namespace

}  // namespace cell_call

PyObject* new_cell_call_type() {
    using namespace cell_call;
    PyType_Slot slots[] = {
        {Py_tp_doc, const_cast<char*>(k_cell_call_doc)},
        {Py_tp_new, reinterpret_cast<void*>(cell_call_new)},
        {Py_tp_dealloc, reinterpret_cast<void*>(cell_call_dealloc)},
        {Py_tp_traverse, reinterpret_cast<void*>(cell_call_traverse)},
        {Py_tp_clear, reinterpret_cast<void*>(cell_call_clear)},
        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
        {Py_tp_members, cell_call_members},
        {0, NULL},
    };
    PyType_Spec spec = {
        "opweave._core.CellCall",
        static_cast<int>(sizeof(CellCallObject)),
        0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
        slots,
    };
    return PyType_FromSpec(&spec);
}

}  // namespace opweave::bindings::runtime

// opweave._core.Function: the callable a compiled graph is run through.
//
// A Function holds one instance of a graph module's struct (see
// include/opweave/graph_abi.h) and calls it through vectorcall: the inputs go
// straight to the module's run(), whose types' c_extract code checks them;
// nothing else runs in Python on that path. When run() fails, or the call has
// keywords or a wrong argument count, the Python `fallback` decides what to
// do (filter the inputs and retry, or raise a precise error).
//
// A Function can also wrap a Python callable (`impl`), for the modes that do
// not compile the whole graph.
#include <Python.h>
#include <structmember.h>

#include <cstddef>

#include "bindings/runtime/types.hpp"
#include "bindings/runtime/failed_call.hpp"
#include "opweave/graph_abi.h"

namespace opweave::bindings::runtime {

namespace {

struct FunctionObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject* dict;
    PyObject* weakrefs;
    PyObject* module;    // the graph module (owns the ABI table); NULL with impl
    PyObject* impl;      // a Python callable run instead of a graph; NULL with module
    PyObject* fallback;  // callable(args, kwargs, error, failed_block) or NULL
    PyObject* orphans;   // the tuple the graph was created from (free() recreates it)
    const opweave_graph_abi* abi;
    void* graph;
    int unpack_single;
    int trust_input;
    int running;
};

constexpr std::size_t k_stack_outputs = 8;

// Runs the graph on `args` (exactly n_inputs of them). `offered` is NULL or
// n_outputs borrowed objects to offer as the outputs' storage (None: nothing
// offered for that output). Returns the result, or NULL with an exception
// set and *failed_block the id of the failing block (0 when the failure is
// not the graph's own).
PyObject* run_graph(FunctionObject* self, PyObject* const* args, PyObject* const* offered,
                    int* failed_block) {
    *failed_block = 0;
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this opweave function is already running (a re-entrant or concurrent "
                        "call); create a second function to run it in parallel");
        return NULL;
    }
    const auto n_outputs = static_cast<std::size_t>(self->abi->n_outputs);
    PyObject* stack_outputs[k_stack_outputs];
    PyObject** outputs = stack_outputs;
    if (n_outputs > k_stack_outputs) {
        outputs = static_cast<PyObject**>(PyMem_Malloc(n_outputs * sizeof(PyObject*)));
        if (outputs == NULL) {
            return PyErr_NoMemory();
        }
    }
    for (std::size_t i = 0; i < n_outputs; ++i) {
        // The module takes over the references it is offered.
        outputs[i] = offered == NULL || offered[i] == Py_None ? NULL : Py_NewRef(offered[i]);
    }
    self->running = 1;
    int status = self->abi->run(self->graph, args, outputs);
    self->running = 0;
    PyObject* result = NULL;
    if (status == 0) {
        for (std::size_t i = 0; i < n_outputs; ++i) {
            if (outputs[i] == NULL) {
                PyErr_Format(PyExc_SystemError, "compiled graph left output %zu unset", i);
                status = -1;
                break;
            }
        }
    } else if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_SystemError, "compiled graph failed without an exception");
    }
    if (status != 0) {
        *failed_block = status > 0 ? status : 0;
        for (std::size_t i = 0; i < n_outputs; ++i) {
            Py_XDECREF(outputs[i]);
        }
    } else if (self->unpack_single && n_outputs == 1) {
        result = outputs[0];
    } else {
        result = PyList_New(static_cast<Py_ssize_t>(n_outputs));
        for (std::size_t i = 0; i < n_outputs; ++i) {
            if (result != NULL) {
                PyList_SET_ITEM(result, static_cast<Py_ssize_t>(i), outputs[i]);
            } else {
                Py_DECREF(outputs[i]);
            }
        }
    }
    if (outputs != stack_outputs) {
        PyMem_Free(outputs);
    }
    return result;
}

// Hands a failed or unusual call to the Python fallback. Steals nothing.
PyObject* call_fallback(FunctionObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames, int failed_block) {
    PyObject* error = fetch_error();
    PyObject* positional = NULL;
    PyObject* keywords = NULL;
    PyObject* result = NULL;
    if (pack_call(args, nargs, kwnames, &positional, &keywords) == 0) {
        result = PyObject_CallFunction(self->fallback, "OOOi", positional, keywords,
                                       error != NULL ? error : Py_None, failed_block);
    }
    Py_XDECREF(positional);
    Py_XDECREF(keywords);
    Py_XDECREF(error);
    return result;
}

PyObject* function_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                              PyObject* kwnames) {
    auto* self = reinterpret_cast<FunctionObject*>(callable);
    if (self->impl != NULL) {
        return PyObject_Vectorcall(self->impl, args, nargsf, kwnames);
    }
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const bool plain = kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0;
    if (plain && nargs == self->abi->n_inputs) {
        int failed_block = 0;
        PyObject* result = run_graph(self, args, NULL, &failed_block);
        // With trust_input, an input the C code refused raises as it is; a
        // node's failure still goes to the fallback, which names the node.
        const bool input_failed = failed_block <= self->abi->n_inputs;
        if (result != NULL || self->fallback == NULL || failed_block == 0 ||
            (self->trust_input && input_failed)) {
            return result;
        }
        return call_fallback(self, args, nargs, NULL, failed_block);
    }
    if (self->fallback == NULL) {
        PyErr_Format(PyExc_TypeError, "expected %d positional arguments, got %zd",
                     self->abi->n_inputs, nargs);
        return NULL;
    }
    return call_fallback(self, args, nargs, plain ? NULL : kwnames, 0);
}

void release_graph(FunctionObject* self) {
    if (self->graph != NULL) {
        void* graph = self->graph;
        self->graph = NULL;
        self->abi->destroy(graph);
    }
}

int function_traverse(PyObject* object, visitproc visit, void* arg) {
    auto* self = reinterpret_cast<FunctionObject*>(object);
    Py_VISIT(Py_TYPE(object));
    Py_VISIT(self->dict);
    Py_VISIT(self->module);
    Py_VISIT(self->impl);
    Py_VISIT(self->fallback);
    Py_VISIT(self->orphans);
    return 0;
}

int function_clear(PyObject* object) {
    auto* self = reinterpret_cast<FunctionObject*>(object);
    if (!self->running) {
        release_graph(self);
    }
    Py_CLEAR(self->dict);
    Py_CLEAR(self->impl);
    Py_CLEAR(self->fallback);
    if (self->graph == NULL) {
        Py_CLEAR(self->module);
        Py_CLEAR(self->orphans);
    }
    return 0;
}

void function_dealloc(PyObject* object) {
    auto* self = reinterpret_cast<FunctionObject*>(object);
    PyTypeObject* type = Py_TYPE(object);
    PyObject_GC_UnTrack(object);
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs(object);
    }
    release_graph(self);
    function_clear(object);
    type->tp_free(object);
    Py_DECREF(type);
}

const opweave_graph_abi* graph_abi(PyObject* module) {
    PyObject* capsule = PyObject_GetAttrString(module, "abi");
    if (capsule == NULL) {
        return NULL;
    }
    auto* abi = static_cast<const opweave_graph_abi*>(
        PyCapsule_GetPointer(capsule, OPWEAVE_GRAPH_ABI_CAPSULE));
    Py_DECREF(capsule);
    if (abi != NULL && abi->abi_version != OPWEAVE_GRAPH_ABI_VERSION) {
        PyErr_Format(PyExc_ImportError, "graph module has ABI version %d, expected %d",
                     abi->abi_version, OPWEAVE_GRAPH_ABI_VERSION);
        return NULL;
    }
    return abi;
}

// Function(*, module=None, orphans=(), impl=None, unpack_single=True, fallback=None)
int attach_graph(FunctionObject* self, PyObject* module, PyObject* orphans) {
    const opweave_graph_abi* abi = graph_abi(module);
    if (abi == NULL) {
        return -1;
    }
    PyObject* sequence = PySequence_Fast(orphans, "orphans must be a sequence");
    if (sequence == NULL) {
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(sequence) != abi->n_orphans) {
        PyErr_Format(PyExc_ValueError, "the graph needs %d orphans, got %zd", abi->n_orphans,
                     PySequence_Fast_GET_SIZE(sequence));
        Py_DECREF(sequence);
        return -1;
    }
    self->graph = abi->create(PySequence_Fast_ITEMS(sequence));
    if (self->graph == NULL) {
        Py_DECREF(sequence);
        return -1;
    }
    self->orphans = PySequence_Tuple(sequence);
    Py_DECREF(sequence);
    if (self->orphans == NULL) {
        abi->destroy(self->graph);
        self->graph = NULL;
        return -1;
    }
    self->abi = abi;
    self->module = Py_NewRef(module);
    return 0;
}

// free(): the graph's instance is replaced by a new one, created from the
// same orphans, so that the intermediate results the old one kept between
// calls are released. A Function of a Python callable calls its free(), if
// it has one.
PyObject* function_free(PyObject* object, PyObject*) {
    auto* self = reinterpret_cast<FunctionObject*>(object);
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError, "free() called while the function runs");
        return NULL;
    }
    if (self->graph == NULL) {
        if (self->impl == NULL || !PyObject_HasAttrString(self->impl, "free")) {
            Py_RETURN_NONE;
        }
        return PyObject_CallMethod(self->impl, "free", NULL);
    }
    void* fresh = self->abi->create(PySequence_Fast_ITEMS(self->orphans));
    if (fresh == NULL) {
        return NULL;
    }
    void* old = self->graph;
    self->graph = fresh;
    self->abi->destroy(old);
    Py_RETURN_NONE;
}

PyObject* function_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* keywords[] = {"module", "orphans", "impl", "unpack_single", "fallback",
                                     NULL};
    PyObject* module = Py_None;
    PyObject* orphans = NULL;
    PyObject* impl = Py_None;
    int unpack_single = 1;
    PyObject* fallback = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOpO:Function",
                                     const_cast<char**>(keywords), &module, &orphans, &impl,
                                     &unpack_single, &fallback)) {
        return NULL;
    }
    if ((module == Py_None) == (impl == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "Function needs exactly one of module= and impl=");
        return NULL;
    }
    if (impl != Py_None && (orphans != NULL || fallback != Py_None)) {
        PyErr_SetString(PyExc_TypeError,
                        "Function(impl=...) takes no orphans= or fallback=: a graph module's");
        return NULL;
    }
    if (fallback != Py_None && !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable");
        return NULL;
    }
    auto* self = reinterpret_cast<FunctionObject*>(type->tp_alloc(type, 0));
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = function_vectorcall;
    self->unpack_single = unpack_single;
    self->fallback = fallback == Py_None ? NULL : Py_NewRef(fallback);
    if (impl != Py_None) {
        if (!PyCallable_Check(impl)) {
            PyErr_SetString(PyExc_TypeError, "impl must be callable");
            Py_DECREF(self);
            return NULL;
        }
        self->impl = Py_NewRef(impl);
    } else {
        PyObject* none = orphans == NULL ? PyTuple_New(0) : NULL;
        int status = orphans == NULL && none == NULL
                         ? -1
                         : attach_graph(self, module, orphans != NULL ? orphans : none);
        Py_XDECREF(none);
        if (status < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return reinterpret_cast<PyObject*>(self);
}

// call_exact(*args): runs the graph on inputs that must already be exact;
// no fallback.
PyObject* function_call_exact(PyObject* object, PyObject* const* args, Py_ssize_t nargs) {
    auto* self = reinterpret_cast<FunctionObject*>(object);
    if (self->impl != NULL) {
        return PyObject_Vectorcall(self->impl, args, static_cast<size_t>(nargs), NULL);
    }
    if (nargs != self->abi->n_inputs) {
        PyErr_Format(PyExc_TypeError, "expected %d arguments, got %zd", self->abi->n_inputs,
                     nargs);
        return NULL;
    }
    int failed_block = 0;
    return run_graph(self, args, NULL, &failed_block);
}

// call_with_outputs(inputs, outputs): call_exact on `inputs`, offering the
// objects in `outputs` (None: nothing) as the outputs' storage.
PyObject* function_call_with_outputs(PyObject* object, PyObject* const* args, Py_ssize_t nargs) {
    auto* self = reinterpret_cast<FunctionObject*>(object);
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "call_with_outputs takes 2 arguments (inputs, outputs), "
                     "got %zd", nargs);
        return NULL;
    }
    if (self->impl != NULL) {
        PyErr_SetString(PyExc_TypeError, "call_with_outputs needs a compiled graph module");
        return NULL;
    }
    PyObject* inputs = PySequence_Fast(args[0], "inputs must be a sequence");
    if (inputs == NULL) {
        return NULL;
    }
    PyObject* outputs = PySequence_Fast(args[1], "outputs must be a sequence");
    PyObject* result = NULL;
    if (outputs == NULL) {
        // fall through to the release below
    } else if (PySequence_Fast_GET_SIZE(inputs) != self->abi->n_inputs) {
        PyErr_Format(PyExc_TypeError, "expected %d inputs, got %zd", self->abi->n_inputs,
                     PySequence_Fast_GET_SIZE(inputs));
    } else if (PySequence_Fast_GET_SIZE(outputs) != self->abi->n_outputs) {
        PyErr_Format(PyExc_TypeError, "expected %d outputs, got %zd", self->abi->n_outputs,
                     PySequence_Fast_GET_SIZE(outputs));
    } else {
        int failed_block = 0;
        result = run_graph(self, PySequence_Fast_ITEMS(inputs), PySequence_Fast_ITEMS(outputs),
                           &failed_block);
    }
    Py_XDECREF(outputs);
    Py_DECREF(inputs);
    return result;
}

PyObject* get_trust_input(PyObject* object, void*) {
    return PyBool_FromLong(reinterpret_cast<FunctionObject*>(object)->trust_input);
}

int set_trust_input(PyObject* object, PyObject* value, void*) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete trust_input");
        return -1;
    }
    int truth = PyObject_IsTrue(value);
    if (truth < 0) {
        return -1;
    }
    reinterpret_cast<FunctionObject*>(object)->trust_input = truth;
    return 0;
}

PyObject* get_is_compiled(PyObject* object, void*) {
    return PyBool_FromLong(reinterpret_cast<FunctionObject*>(object)->module != NULL);
}

// A view of the record of how the function was compiled: the attribute
// `closure` (a field name) of the object in the instance's `compiled`
// (opweave.link.compiled.Compiled, written by record_compiled alone).
// Read-only, so that nothing writes these names beside the record.
PyObject* get_compiled_field(PyObject* object, void* closure) {
    const char* name = static_cast<const char*>(closure);
    PyObject* dict = reinterpret_cast<FunctionObject*>(object)->dict;
    PyObject* record = dict != NULL ? PyDict_GetItemString(dict, "compiled") : NULL;  // borrowed
    if (record == NULL) {
        PyErr_Format(PyExc_AttributeError,
                     "'opweave._core.Function' object has no attribute '%s' (it has no record of "
                     "how it was compiled)",
                     name);
        return NULL;
    }
    return PyObject_GetAttrString(record, name);
}

#define OPWEAVE_COMPILED_FIELD(name, doc) \
    {name, get_compiled_field, NULL, doc " (a view of compiled)", const_cast<char*>(name)}

PyMethodDef function_methods[] = {
    {"free", function_free, METH_NOARGS,
     "free(): releases what the compiled graph keeps between calls (its intermediate\n"
     "results), by replacing its instance with a new one made from the same constants."},
    {"call_exact", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(function_call_exact)),
     METH_FASTCALL,
     "call_exact(*inputs): runs the function on inputs that are already exact values of the\n"
     "input types, without converting them or calling the fallback."},
    {"call_with_outputs",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(function_call_with_outputs)),
     METH_FASTCALL,
     "call_with_outputs(inputs, outputs): call_exact(*inputs), offering each object of\n"
     "outputs (None: nothing) as that output's storage. A compiled op may write its result\n"
     "into the object it is offered (a preallocated output) or replace it."},
    {NULL, NULL, 0, NULL},
};

PyGetSetDef function_getset[] = {
    {"trust_input", get_trust_input, set_trust_input,
     "When true, a failed input check raises at once instead of converting the inputs with\n"
     "Type.filter and retrying.",
     NULL},
    {"is_compiled", get_is_compiled, NULL, "True when a compiled graph module runs the calls.",
     NULL},
    OPWEAVE_COMPILED_FIELD("source", "The source file of the module that runs the whole graph"),
    OPWEAVE_COMPILED_FIELD("library", "Its shared library"),
    OPWEAVE_COMPILED_FIELD("cache_outcome", "Its cache outcome: hit, built or built_by_other"),
    OPWEAVE_COMPILED_FIELD("compile_seconds", "Its wall seconds per phase"),
    OPWEAVE_COMPILED_FIELD("compile_units", "Its units' outcomes and compile seconds"),
    OPWEAVE_COMPILED_FIELD("whole_because", "Why a graph planned in units was compiled as one"),
    OPWEAVE_COMPILED_FIELD("compiled_parts", "The modules the function runs"),
    OPWEAVE_COMPILED_FIELD("node_outcomes", "Per node, its module's outcome (None: perform runs)"),
    OPWEAVE_COMPILED_FIELD("compile_profile", "Where the time of making the function went"),
    OPWEAVE_COMPILED_FIELD("recipe", "What pickling replays"),
    {NULL, NULL, NULL, NULL, NULL},
};

#undef OPWEAVE_COMPILED_FIELD

PyMemberDef function_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FunctionObject, vectorcall), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(FunctionObject, dict), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(FunctionObject, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

const char* k_function_doc =
    "Function(*, module, orphans=(), unpack_single=True, fallback=None), or\n"
    "Function(*, impl, unpack_single=True)\n"
    "\n"
    "A compiled function. With module=, calls run the graph module's struct (created now\n"
    "from the orphan values); with impl=, calls run that Python callable. A graph call\n"
    "returns the single output (unpack_single) or the list of outputs. On a failed\n"
    "call, a keyword call or a wrong argument count, fallback(args, kwargs, error,\n"
    "failed_block) is called and its result returned.";

}  // namespace

PyObject* new_function_type() {
    PyType_Slot slots[] = {
        {Py_tp_doc, const_cast<char*>(k_function_doc)},
        {Py_tp_new, reinterpret_cast<void*>(function_new)},
        {Py_tp_dealloc, reinterpret_cast<void*>(function_dealloc)},
        {Py_tp_traverse, reinterpret_cast<void*>(function_traverse)},
        {Py_tp_clear, reinterpret_cast<void*>(function_clear)},
        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
        {Py_tp_methods, function_methods},
        {Py_tp_getset, function_getset},
        {Py_tp_members, function_members},
        {0, NULL},
    };
    PyType_Spec spec = {
        "opweave._core.Function",
        static_cast<int>(sizeof(FunctionObject)),
        0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
        slots,
    };
    return PyType_FromSpec(&spec);
}

}  // namespace opweave::bindings::runtime

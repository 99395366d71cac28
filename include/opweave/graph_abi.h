/* opweave: the ABI between a compiled graph module and the runtime that
 * calls it (opweave._core.Function).
 *
 * A graph module exports a PyCapsule named OPWEAVE_GRAPH_ABI_CAPSULE, as the
 * module attribute "abi", pointing at a static opweave_graph_abi. The
 * generated text repeats this definition (it does not include this header),
 * so a change here must bump OPWEAVE_GRAPH_ABI_VERSION, which the capsule
 * name carries. Every function is called with the GIL held. */
#ifndef OPWEAVE_GRAPH_ABI_H
#define OPWEAVE_GRAPH_ABI_H

#define OPWEAVE_GRAPH_ABI_VERSION 2
#define OPWEAVE_GRAPH_ABI_CAPSULE "opweave.graph_abi.v2"

#ifdef __cplusplus
extern "C" {
#endif

struct _object; /* PyObject */

typedef struct opweave_graph_abi {
    int abi_version; /* OPWEAVE_GRAPH_ABI_VERSION */
    int n_inputs;
    int n_outputs;
    int n_orphans;
    /* Creates one instance of the graph's struct and runs its init code.
     * `orphans` holds n_orphans borrowed objects (constants' values).
     * Returns NULL with a Python exception set on failure. */
    void* (*create)(struct _object* const* orphans);
    /* Runs the graph on n_inputs borrowed objects.
     *
     * On entry each of the n_outputs slots of `outputs` holds NULL or a new
     * reference to an object the caller offers as that output's storage (a
     * preallocated output); the module takes those references over. An op
     * may write its result into the offered object, or replace it. NULL
     * everywhere gives every output fresh storage (version 1's behaviour).
     *
     * On success returns 0 and stores n_outputs new references in `outputs`.
     * On failure returns the id of the failing block (> 0) with a Python
     * exception set; `outputs` may hold some new references (the caller
     * releases them) and NULLs. */
    int (*run)(void* graph, struct _object* const* inputs, struct _object** outputs);
    /* Runs the struct's cleanup code and frees it. */
    void (*destroy)(void* graph);
} opweave_graph_abi;

#ifdef __cplusplus
}
#endif

#endif /* OPWEAVE_GRAPH_ABI_H */

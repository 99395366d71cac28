"""A small hand-written extension module for the cache tests: compiled
through the module cache here, and loaded again by a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEMO_MODULE_NAME",
    "DEMO_SOURCE",
    "DemoRun",
    "run_in_fresh_process",
    "run_in_this_process",
]

DEMO_MODULE_NAME = "opweave_demo"

# A minimal extension: dot(x, y) over two sequences of floats, called with
# vectorcall (METH_FASTCALL).
DEMO_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject* demo_dot(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "dot() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject* x = PySequence_Fast(args[0], "dot(): x must be a sequence");
    if (!x) {
        return NULL;
    }
    PyObject* y = PySequence_Fast(args[1], "dot(): y must be a sequence");
    if (!y) {
        Py_DECREF(x);
        return NULL;
    }
    double total = 0.0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(x);
    if (n != PySequence_Fast_GET_SIZE(y)) {
        PyErr_SetString(PyExc_ValueError, "dot(): x and y differ in length");
        n = -1;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        const double a = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(x, i));
        const double b = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(y, i));
        if (PyErr_Occurred()) {
            break;
        }
        total += a * b;
    }
    Py_DECREF(x);
    Py_DECREF(y);
    return PyErr_Occurred() ? NULL : PyFloat_FromDouble(total);
}

static PyMethodDef demo_methods[] = {
    {"dot", (PyCFunction)(void (*)(void))demo_dot, METH_FASTCALL, "dot(x, y): sum of x[i]*y[i]."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot demo_slots[] = {{0, NULL}};

static struct PyModuleDef demo_module = {
    PyModuleDef_HEAD_INIT, "opweave_demo", "opweave's demo module.", 0,
    demo_methods, demo_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_opweave_demo(void) { return PyModuleDef_Init(&demo_module); }
"""


@dataclass(frozen=True)
class DemoRun:
    """What one process saw: the cache outcome, seconds to get the module
    (compile or lookup plus import), and the module's answer."""

    outcome: str
    seconds: float
    result: float
    library: str


def run_in_this_process() -> DemoRun:
    """Gets the demo module through the cache at ``config.compiledir`` and calls it."""
    from opweave.link.c.cmodule import compile_extension

    start = time.perf_counter()
    compiled = compile_extension(DEMO_SOURCE, DEMO_MODULE_NAME)
    seconds = time.perf_counter() - start
    result = compiled.module.dot([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    return DemoRun(compiled.outcome, seconds, result, str(compiled.library))


def run_in_fresh_process(cache_dir: str) -> tuple[DemoRun, float]:
    """Runs the demo in a new Python process using the cache at ``cache_dir``.
    Returns its DemoRun and the seconds it spent importing opweave."""
    code = (
        "import json, sys, time\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "t0 = time.perf_counter()\n"
        "import opweave\n"
        "t1 = time.perf_counter()\n"
        f"opweave.config.compiledir = {cache_dir!r}\n"
        "from dot_module import run_in_this_process\n"
        "run = run_in_this_process()\n"
        "print(json.dumps(dict(run.__dict__, import_seconds=t1 - t0)))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    if completed.returncode != 0:
        raise RuntimeError(f"demo child process failed:\n{completed.stderr}")
    data = json.loads(completed.stdout.strip().splitlines()[-1])
    import_seconds = data.pop("import_seconds")
    return DemoRun(**data), import_seconds

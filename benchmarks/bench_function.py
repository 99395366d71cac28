"""Benchmarks of `function()` on the tutorial's VectorTimesVector COp, opweave against PyTensor.

Measures, for each backend, with `Mode(linker="c")`:
- per call: `f(x, y)` on length-1 float64 vectors, also with `f.trust_input = True`,
  against NumPy's own `x * y` on the same inputs as the baseline;
- cold compile: the `function(...)` call alone, in a fresh process with an empty
  compile dir (imports are done and not timed); and again in a dir where another
  graph was compiled first, which leaves out one-time helper builds;
- fresh process, cache hit: the imports a user needs (`import <backend>` and the
  modules below it, NumPy included), and separately the `function(...)` call that
  finds its module in a warm compile dir.

Every measurement runs in a subprocess: opweave's with this interpreter, PyTensor's
with --pytensor-python or $OPWEAVE_BENCH_PYTENSOR_PYTHON (PyTensor 3.3.7 in its own
venv; PyTensor is skipped, with a note, when neither names one). Prints medians and ratios.
Usage: python benchmarks/bench_function.py [--only opweave|pytensor] [--json PATH]
       [--pytensor-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from backends import import_backend, pytensor_python

BACKENDS = ("opweave", "pytensor")
FLAGS_VARIABLE = {"opweave": "OPWEAVE_FLAGS", "pytensor": "PYTENSOR_FLAGS"}
# (label, key, target ratio against PyTensor, target ratio against NumPy's x * y)
ROWS = (
    ("per call (us)", "call_us", 1 / 10, 1.5),
    ("per call, trust_input (us)", "trusted_call_us", 1 / 10, 1.5),
    ("numpy x * y (us)", "numpy_us", None, None),
    ("cold compile, empty dir (s)", "cold_compile_s", 1 / 2, None),
    ("cold compile, module only (s)", "cold_module_s", 1 / 2, None),
    ("fresh process: import (s)", "fresh_import_s", None, None),
    ("fresh process: cache hit (s)", "fresh_hit_s", None, None),
    ("fresh process: import + hit (s)", "fresh_total_s", 1 / 4, None),
)


# ---------------------------------------------------------------- worker side


# The C code of the seed tutorial's VectorTimesVector, as it writes it.
_SUPPORT_CODE_APPLY = """
void vector_elemwise_mult_%(name)s(npy_%(dtype_x)s* x_ptr, int x_str,
    npy_%(dtype_y)s* y_ptr, int y_str, npy_%(dtype_z)s* z_ptr, int z_str,
    int nbElements)
{ for (int i=0; i < nbElements; i++){
    z_ptr[i * z_str] = x_ptr[i * x_str] * y_ptr[i * y_str]; } }
"""

_C_CODE = """
if ( !vector_same_shape(%(x)s, %(y)s)) {
    PyErr_Format(PyExc_ValueError, "Shape mismatch : x.shape[0] and y.shape[0] "
        "should match but x.shape[0] == %%i and y.shape[0] == %%i",
        PyArray_DIMS(%(x)s)[0], PyArray_DIMS(%(y)s)[0]);
    %(fail)s;
}
if (NULL == %(z)s || !(vector_same_shape(%(x)s, %(z)s))) {
    Py_XDECREF(%(z)s);
    %(z)s = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(%(x)s), %(typenum_z)s, 0);
    if (!%(z)s) { %(fail)s; }
}
vector_elemwise_mult_%(name)s(
    (npy_%(dtype_x)s*)PyArray_DATA(%(x)s), PyArray_STRIDES(%(x)s)[0] / %(itemsize_x)s,
    (npy_%(dtype_y)s*)PyArray_DATA(%(y)s), PyArray_STRIDES(%(y)s)[0] / %(itemsize_y)s,
    (npy_%(dtype_z)s*)PyArray_DATA(%(z)s), PyArray_STRIDES(%(z)s)[0] / %(itemsize_z)s,
    PyArray_DIMS(%(x)s)[0]);
"""


def make_vector_times_vector(api: SimpleNamespace) -> type:
    """The seed tutorial's VectorTimesVector, built from `api`'s COp and Apply."""
    numpy = api.numpy

    class VectorTimesVector(api.op.COp):
        __props__ = ()

        def make_node(self, x, y):
            if x.type.ndim != 1:
                raise TypeError("x must be a 1-d vector")
            if y.type.ndim != 1:
                raise TypeError("y must be a 1-d vector")
            output_var = api.tensor_type.TensorType(
                dtype=api.scalar.upcast(x.dtype, y.dtype), shape=(None,)
            )()
            return api.basic.Apply(self, [x, y], [output_var])

        def perform(self, node, inputs, output_storage):
            # Not in the tutorial: PyTensor 3.3.7 refuses to instantiate an Op
            # without `perform` (abstract method). Never called by the C linker.
            output_storage[0][0] = inputs[0] * inputs[1]

        def c_code_cache_version(self):
            return (1, 0, 2)

        def c_support_code(self, **kwargs):
            return """
            bool vector_same_shape(PyArrayObject* arr1, PyArrayObject* arr2)
            { return (PyArray_DIMS(arr1)[0] == PyArray_DIMS(arr2)[0]); }
            """

        def c_support_code_apply(self, node, name):
            dtype_x = node.inputs[0].dtype
            dtype_y = node.inputs[1].dtype
            dtype_z = node.outputs[0].dtype
            return _SUPPORT_CODE_APPLY % locals()

        def c_code(self, node, name, inp, out, sub):
            x, y = inp
            (z,) = out
            dtype_x = node.inputs[0].dtype
            dtype_y = node.inputs[1].dtype
            dtype_z = node.outputs[0].dtype
            itemsize_x = numpy.dtype(dtype_x).itemsize
            itemsize_y = numpy.dtype(dtype_y).itemsize
            itemsize_z = numpy.dtype(dtype_z).itemsize
            typenum_z = numpy.dtype(dtype_z).num
            fail = sub["fail"]
            return _C_CODE % locals()

    # PyTensor pickles the op into its cache key, so the class must be found by
    # name, as it is when a user's script defines it at the top level.
    globals()["VectorTimesVector"] = VectorTimesVector
    VectorTimesVector.__qualname__ = "VectorTimesVector"
    return VectorTimesVector


def timed_function(api: SimpleNamespace, nodes: int = 1) -> tuple[Any, float]:
    """Build the graph (a chain of `nodes` ops, op(x, y) for one) untimed, then return
    the compiled function and the seconds its `function(...)` call took."""
    x, y = api.tensor.dvector(), api.tensor.dvector()
    op = make_vector_times_vector(api)()
    out = x
    for _ in range(nodes):
        out = op(out, y)
    mode = api.mode.Mode(linker="c")
    start = time.perf_counter()
    f = api.function([x, y], out, mode=mode)
    return f, time.perf_counter() - start


def per_call_us(stmt: str, names: dict[str, Any], number: int, repeat: int) -> float:
    samples = timeit.Timer(stmt, globals=names).repeat(repeat=repeat, number=number)
    return statistics.median(samples) / number * 1e6


def worker_compile(backend: str, nodes: int) -> dict[str, float]:
    start = time.perf_counter()
    api = import_backend(backend)
    import_s = time.perf_counter() - start
    _, function_s = timed_function(api, nodes)
    return {"import_s": import_s, "function_s": function_s}


def worker_call(backend: str, number: int, repeat: int) -> dict[str, float]:
    api = import_backend(backend)
    f, _ = timed_function(api)
    a, b = api.numpy.array([2.0]), api.numpy.array([3.0])
    names = {"f": f, "a": a, "b": b}
    if not api.numpy.array_equal(f(a, b), a * b):
        raise AssertionError(f"wrong result: {f(a, b)!r}")
    call_us = per_call_us("f(a, b)", names, number, repeat)
    f.trust_input = True
    trusted_call_us = per_call_us("f(a, b)", names, number, repeat)
    numpy_us = per_call_us("a * b", names, number, repeat)
    return {"call_us": call_us, "trusted_call_us": trusted_call_us, "numpy_us": numpy_us}


def run_worker_mode(args: argparse.Namespace) -> None:
    if args.worker == "check":
        import_backend(args.backend)
        result: dict[str, float] = {}
    elif args.worker == "compile":
        result = worker_compile(args.backend, args.nodes)
    else:
        result = worker_call(args.backend, args.number, args.timeit_repeat)
    print(json.dumps(result))


# ---------------------------------------------------------------- driver side


class WorkerFailed(RuntimeError):
    """A worker subprocess exited non-zero; carries the last lines of its stderr."""


def run_worker(
    python: str,
    backend: str,
    kind: str,
    compiledir: Path,
    notes: set[str],
    extra: tuple[str, ...] = (),
) -> dict[str, float]:
    env = dict(os.environ)
    variable = FLAGS_VARIABLE[backend]
    env[variable] = ",".join(filter(None, [env.get(variable), f"compiledir={compiledir}"]))
    command = [python, str(Path(__file__).resolve()), "--worker", kind, "--backend", backend]
    proc = subprocess.run(
        command + list(extra), env=env, capture_output=True, text=True, timeout=900, check=False
    )
    if proc.returncode != 0:
        raise WorkerFailed("\n".join(proc.stderr.strip().splitlines()[-3:]))
    notes.update(
        f"{backend}: {line.strip()}" for line in proc.stderr.splitlines() if "Warning:" in line
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def count_modules(compiledir: Path) -> int:
    return sum(1 for _ in compiledir.rglob("*.so"))


def cold_compiles(
    python: str, backend: str, scratch: Path, repeat: int, notes: set[str]
) -> dict[str, float]:
    """Medians of the `function(...)` call into an empty compile dir, and into a dir
    where another graph (a 2-op chain) was compiled first, so the backend's one-time
    helpers (PyTensor's cutils_ext) are already built and only the module is."""
    empty, module_only = [], []
    for index in range(repeat):
        empty.append(run_worker(python, backend, "compile", scratch / f"cold{index}", notes))
        primed = scratch / f"primed{index}"
        run_worker(python, backend, "compile", primed, notes, ("--nodes", "2"))
        module_only.append(run_worker(python, backend, "compile", primed, notes))
    return {
        "cold_compile_s": statistics.median(run["function_s"] for run in empty),
        "cold_module_s": statistics.median(run["function_s"] for run in module_only),
        "cold_import_s": statistics.median(run["import_s"] for run in empty),
    }


def bench_backend(
    python: str, backend: str, args: argparse.Namespace, notes: set[str]
) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix=f"bench-function-{backend}-") as scratch_name:
        scratch = Path(scratch_name)
        colds = cold_compiles(python, backend, scratch, args.repeat, notes)
        warm = scratch / "warm"
        run_worker(python, backend, "compile", warm, notes)
        modules = count_modules(warm)
        hits = [run_worker(python, backend, "compile", warm, notes) for _ in range(args.fresh)]
        if count_modules(warm) != modules:
            notes.add(f"{backend}: a fresh-process 'cache hit' compiled a new module")
        timing = ("--number", str(args.number), "--timeit-repeat", str(args.timeit_repeat))
        result = run_worker(python, backend, "call", warm, notes, timing)
    result.update(colds)
    result["fresh_import_s"] = statistics.median(run["import_s"] for run in hits)
    result["fresh_hit_s"] = statistics.median(run["function_s"] for run in hits)
    result["fresh_total_s"] = result["fresh_import_s"] + result["fresh_hit_s"]
    return result


def unusable_reason(python: str, backend: str) -> str | None:
    """Why `backend` cannot be benchmarked with `python`, or None if it can."""
    if not Path(python).exists():
        return f"{python} does not exist"
    with tempfile.TemporaryDirectory(prefix=f"bench-function-{backend}-") as scratch:
        try:
            run_worker(python, backend, "check", Path(scratch), set())
        except WorkerFailed as error:
            return f"its C-op API is not importable with {python}: {str(error).splitlines()[-1]}"
    return None


def ratio_cell(value: float | None, base: float | None, target: float | None) -> str:
    if value is None or not base:
        return "-"
    ratio = value / base
    verdict = "" if target is None else (" ok" if ratio <= target else " MISS")
    return f"{ratio:.3f}{verdict}"


def format_report(results: dict[str, dict[str, float]]) -> str:
    opweave, pytensor = results.get("opweave", {}), results.get("pytensor", {})
    lines = [f"{'':32} {'opweave':>10} {'pytensor':>10} {'ow/pt':>10} {'ow/numpy':>10}  target"]
    for label, key, vs_pytensor, vs_numpy in ROWS:
        ours, theirs = opweave.get(key), pytensor.get(key)
        targets = [f"<= {vs_pytensor:.2g} of pytensor"] if vs_pytensor else []
        targets += [f"<= {vs_numpy}x numpy"] if vs_numpy else []
        numpy_cell = ratio_cell(ours, opweave.get("numpy_us"), vs_numpy) if vs_numpy else "-"
        lines.append(
            f"{label:32} {_number(ours):>10} {_number(theirs):>10} "
            f"{ratio_cell(ours, theirs, vs_pytensor):>10} {numpy_cell:>10}  {', '.join(targets)}"
        )
    return "\n".join(lines)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=BACKENDS, help="benchmark one backend alone")
    parser.add_argument(
        "--pytensor-python",
        help="interpreter with pytensor installed (default: $OPWEAVE_BENCH_PYTENSOR_PYTHON)",
    )
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    parser.add_argument("--repeat", type=int, default=5, help="cold compiles")
    parser.add_argument("--fresh", type=int, default=7, help="fresh-process cache hits")
    parser.add_argument("--number", type=int, default=20000, help="calls per timeit sample")
    parser.add_argument("--timeit-repeat", type=int, default=15, help="timeit samples")
    parser.add_argument("--worker", choices=("check", "compile", "call"), help=argparse.SUPPRESS)
    parser.add_argument("--backend", choices=BACKENDS, help=argparse.SUPPRESS)
    parser.add_argument("--nodes", type=int, default=1, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.worker:
        run_worker_mode(args)
        return
    results: dict[str, dict[str, float]] = {}
    notes: set[str] = set()
    for backend in [args.only] if args.only else BACKENDS:
        python, skipped = (
            (sys.executable, "") if backend == "opweave" else pytensor_python(args.pytensor_python)
        )
        if python is None:
            notes.add(skipped)
            continue
        reason = unusable_reason(python, backend)
        if reason:
            notes.add(f"{backend} skipped: {reason}")
            continue
        try:
            results[backend] = bench_backend(python, backend, args, notes)
        except WorkerFailed as error:
            notes.add(f"{backend} failed:\n{error}")
    print(format_report(results))
    for note in sorted(notes):
        print(f"note: {note}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "notes": sorted(notes)}, indent=2))


if __name__ == "__main__":
    main()

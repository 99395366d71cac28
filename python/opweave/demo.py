"""The demo behind ``python -m opweave demo``.

It builds the seed tutorials' examples (``opweave.examples``) as compiled
functions, runs them and checks their results against NumPy or plain
Python, then starts a fresh Python process that builds the same functions
again, this time from the module cache. The functions here return data; the
command line prints.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opweave.configparser import config

__all__ = ["ExampleRun", "run_demo", "run_examples", "run_in_fresh_process"]


@dataclass(frozen=True)
class ExampleRun:
    """One example in one process: how its module was obtained ("built",
    "hit" or "built_by_other"), the seconds ``opweave.function`` took, the
    result shown, and whether it matched the expected values."""

    name: str
    outcome: str
    seconds: float
    shown: str
    ok: bool


def _timed(build: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    built = build()
    return built, time.perf_counter() - start


def _vector_times_scalar() -> tuple[Any, str, bool]:
    import numpy as np

    import opweave
    from opweave.examples.vector_times_scalar import VectorTimesScalar

    x, y = opweave.tensor.dvector("x"), opweave.tensor.dscalar("y")
    f, seconds = _timed(lambda: opweave.function([x, y], VectorTimesScalar()(x, y)))
    values = np.array([1.0, 2.0, 3.0])
    result = f(values, 2.5)
    return (f, seconds), f"f([1,2,3], 2.5) = {result}", bool(np.array_equal(result, values * 2.5))


def _vector_times_vector() -> tuple[Any, str, bool]:
    import numpy as np

    import opweave
    from opweave.examples.vector_times_vector import VectorTimesVector

    op = VectorTimesVector()
    i, f32 = opweave.tensor.ivector("i"), opweave.tensor.fvector("f")
    x, y = opweave.tensor.dvector("x"), opweave.tensor.dvector("y")
    outputs = [op(i, f32), op(op(x, y), x)]
    f, seconds = _timed(lambda: opweave.function([i, f32, x, y], outputs))
    ints, floats = np.arange(1, 4, dtype="int32"), np.full(3, 0.5, dtype="float32")
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    first, second = f(ints, floats, a, b)
    ok = np.array_equal(first, ints * floats) and np.array_equal(second, a * b * a)
    return (f, seconds), f"int32*float32 = {first}, (x*y)*x = {second}", bool(ok)


def _external_vector_times_vector() -> tuple[Any, str, bool]:
    import numpy as np

    import opweave
    from opweave.examples.external_vector_times_vector import VectorTimesVector

    op = VectorTimesVector()
    x, y = opweave.tensor.fvector("x"), opweave.tensor.vector("y", dtype="int16")
    f, seconds = _timed(lambda: opweave.function([x, y], op(x, y)))
    a, b = np.array([0.5, 1.5, 2.5], dtype="float32"), np.array([2, 4, 6], dtype="int16")
    result = f(a, b)
    return (f, seconds), f"float32*int16 = {result}", bool(np.array_equal(result, a * b))


def _quadratic_params() -> tuple[Any, str, bool]:
    import numpy as np

    import opweave
    from opweave.examples.quadratic import QuadraticExternal

    x = opweave.tensor.dmatrix("x")
    outputs = [QuadraticExternal(1, 0, 0)(x), QuadraticExternal(0, 2, -1)(x)]
    f, seconds = _timed(lambda: opweave.function([x], outputs))
    values = np.arange(4.0).reshape(2, 2)
    squares, lines = f(values)
    ok = np.array_equal(squares, values**2) and np.array_equal(lines, 2 * values - 1)
    return (f, seconds), f"x**2, 2x-1 (params) = {squares.ravel()}, {lines.ravel()}", bool(ok)


def _double_ops() -> tuple[Any, str, bool]:
    import opweave
    from opweave.examples.double_ops import add, double, mul

    x, y, z = double("x"), double("y"), double("z")
    f, seconds = _timed(lambda: opweave.function([x, y, z], mul(add(x, y), z)))
    result = f(1.0, 2.0, 3.0)
    return (f, seconds), f"mul(add(x, y), z)(1, 2, 3) = {result}", result == 9.0


_EXAMPLES: dict[str, Callable[[], tuple[Any, str, bool]]] = {
    "VectorTimesScalar": _vector_times_scalar,
    "VectorTimesVector (2 dtypes, chained)": _vector_times_vector,
    "VectorTimesVector (ExternalCOp, .c file)": _external_vector_times_vector,
    "Quadratic (params, ExternalCOp)": _quadratic_params,
    "double: BinaryDoubleOp": _double_ops,
}


def run_examples() -> list[ExampleRun]:
    """Builds and runs every example through the cache at ``config.compiledir``."""
    runs = []
    for name, example in _EXAMPLES.items():
        (function, seconds), shown, ok = example()
        runs.append(ExampleRun(name, function.cache_outcome, seconds, shown, ok))
    return runs


def run_in_fresh_process(cache_dir: str) -> tuple[list[ExampleRun], float]:
    """Runs the examples in a new Python process using the cache at
    ``cache_dir``. Returns its runs and the seconds it spent importing opweave
    (with NumPy and the graph layer)."""
    code = (
        "import json, time\n"
        "t0 = time.perf_counter()\n"
        "import opweave, opweave.tensor, opweave.compile\n"
        "t1 = time.perf_counter()\n"
        f"opweave.config.compiledir = {cache_dir!r}\n"
        "from dataclasses import asdict\n"
        "from opweave.demo import run_examples\n"
        "runs = [asdict(run) for run in run_examples()]\n"
        "print(json.dumps(dict(runs=runs, import_seconds=t1 - t0)))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=600
    )
    if completed.returncode != 0:
        raise RuntimeError(f"demo child process failed:\n{completed.stderr}")
    data = json.loads(completed.stdout.strip().splitlines()[-1])
    return [ExampleRun(**run) for run in data["runs"]], data["import_seconds"]


def run_demo(cache_dir: str) -> tuple[list[ExampleRun], list[ExampleRun], float]:
    """The whole demo: this process (compiles on a cold cache), then a fresh
    process (cache hits). Returns both lists of runs and the child's import
    time."""
    with config.change_flags(compiledir=cache_dir):
        first = run_examples()
    second, import_seconds = run_in_fresh_process(cache_dir)
    return first, second, import_seconds

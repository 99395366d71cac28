"""How much of what it already compiled a backend reuses (issue 24; not a test).

What: the issue-24 graphs of scaling_graphs.py, all made of distinct
ScaledVectorTimesScalar(k) ops, built in this order in ONE process that starts
with an EMPTY compile dir: rchainA20 (20 new ops), rchainR20 (the same ops
rewired in reverse), rtwo10 (ten of them on two inputs), rchainC20 (20 other
ops), rmix20 (half of rchainA20's ops, then half of rchainC20's) and rnew20 (20
ops never seen). Each build is `function()` plus the first call, timed apart;
the table's build figure is their sum. opweave then builds rfresh20 (20 more
new ops) in C mode, whose module exports nothing, to compare rnew20's first
build with. Then, per call with length-1 float64
vectors, the median of 7 x 20,000 calls of pymid40 (40 distinct ops, the one at
position 20 without C code) and chain10 (10 nodes of one C op).

How: opweave runs with `Mode(linker="c|py", optimizer=None)` in this
interpreter, PyTensor with `Mode(linker="cvm", optimizer=None)` in the one
named by --pytensor-python or $OPWEAVE_BENCH_PYTENSOR_PYTHON (PyTensor 3.3.7 in
its own venv; skipped, with a note, when neither names one). Each backend runs
in a fresh worker process (bench_scaling.run_worker) with OPWEAVE_FLAGS /
PYTENSOR_FLAGS set to compiledir=<a new temporary dir>; --repeat runs the whole
sequence again in new dirs and the table shows the medians. Each build also
counts the shared libraries that appeared in the compile dir and, for opweave,
the modules and compile units its compile profile says were compiled here.
The first output of every first call is compared across backends.

Prints each figure, opweave / cvm, the issue's targets and the machine's load
before and after, and writes all of it as JSON with --json.
Usage: python benchmarks/bench_reuse.py [--repeat N] [--json PATH]
       [--pytensor-python PATH]
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_scaling import FLAGS_VARIABLE, command_line, per_call_us, run_worker

SCRIPT = Path(__file__).resolve()
BUILDS = ("rchainA20", "rchainR20", "rtwo10", "rchainC20", "rmix20", "rnew20")
CALLS = ("pymid40", "chain10")
LINKER = {"opweave": "c|py", "pytensor": "cvm"}
# (label, key in a worker's answer, target for opweave / cvm)
FIGURES = (
    ("rchainA20 build, empty dir (s)", "build.rchainA20", None),
    ("rewired build rchainR20 (s)", "build.rchainR20", 1.0),
    ("two-input build rtwo10 (s)", "build.rtwo10", 1.0),
    ("rchainC20 build (s)", "build.rchainC20", None),
    ("mix build rmix20 (s)", "build.rmix20", 1.0),
    ("first build of 20 new ops rnew20 (s)", "build.rnew20", 0.2),
    ("per call pymid40 (us)", "call.pymid40", 0.25),
    ("per call chain10 (us)", "call.chain10", 0.25),
)


# ---------------------------------------------------------------- worker side


def shared_libraries(compiledir: Path) -> int:
    return sum(1 for _ in compiledir.rglob("*.so"))


def opweave_counts(fn: Any) -> dict[str, Any]:
    """What opweave's compile profile says `fn`'s `function()` compiled and
    reused, and why modules planned in units were compiled whole (if so)."""
    profile = getattr(fn, "compile_profile", None)
    if not profile:
        return {}
    modules = profile.get("modules", [])
    return {
        "modules_compiled": profile["compiled"],
        "modules_reused": profile["reused"],
        "units_compiled": sum(m.get("units_compiled", 0) for m in modules),
        "units_reused": sum(m.get("units_reused", 0) for m in modules),
        "whole_because": "; ".join(m["whole_because"] for m in modules if m.get("whole_because")),
    }


def worker(backend: str, task: str) -> dict[str, Any]:
    """Runs in a fresh process: the builds in order, then the per-call timings."""
    import numpy as np

    import scaling_graphs

    if task != "all":
        raise ValueError(f"unknown task {task!r}")
    flags = os.environ[FLAGS_VARIABLE[backend]]
    compiledir = Path(flags.split("compiledir=", 1)[1].split(",", 1)[0])
    api = scaling_graphs.import_backend(backend)
    mode = api.mode.Mode(linker=LINKER[backend], optimizer=None)
    found: dict[str, Any] = {}
    for graph in (*BUILDS, *CALLS):
        inputs, outputs = scaling_graphs.build(api, graph)
        args = [np.ones(1) for _ in inputs[:-1]] + [np.array(2.0)]
        libraries = shared_libraries(compiledir)
        start = time.perf_counter()
        f = api.function(inputs, outputs, mode=mode)
        built = time.perf_counter()
        result = f(*args)
        called = time.perf_counter()
        first = result[0] if isinstance(result, list | tuple) else result
        if graph in CALLS:
            found[f"call.{graph}"] = per_call_us(f, tuple(args))
            continue
        found[f"function.{graph}"] = built - start
        found[f"first_call.{graph}"] = called - built
        found[f"build.{graph}"] = called - start
        found[f"new_libraries.{graph}"] = shared_libraries(compiledir) - libraries
        found[f"result.{graph}"] = float(first[0])
        for name, count in opweave_counts(f).items():
            found[f"{name}.{graph}"] = count
    if backend == "opweave":  # rnew20's first build, in a module that exports nothing
        inputs, outputs = scaling_graphs.build(api, "rfresh20")
        start = time.perf_counter()
        f = api.function(inputs, outputs, mode=api.mode.Mode(linker="c", optimizer=None))
        f(np.ones(1), np.array(2.0))
        found["build.rfresh20_c"] = time.perf_counter() - start
    return found


# ---------------------------------------------------------------- driver side


def measure(backends: dict[str, str], repeat: int) -> dict[str, list[dict[str, Any]]]:
    """Every backend's answers, one per repeat, each in a new empty compile dir."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in backends}
    for index in range(repeat):
        for name, python in backends.items():
            with tempfile.TemporaryDirectory(prefix=f"opweave-bench-reuse-{name}-") as scratch:
                answer = run_worker(python, name, "all", Path(scratch), SCRIPT)
            runs[name].append(answer)
            print(f"run {index + 1}/{repeat}: {name} done", file=sys.stderr)
    return runs


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each number over `runs`; the first run's text for the rest."""
    return {
        key: statistics.median(run[key] for run in runs)
        if isinstance(value, float | int)
        else value
        for key, value in runs[0].items()
    }


def cell(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def counts_cell(found: dict[str, float], graph: str) -> str:
    """`new .so files` and, for opweave, `modules/units compiled` of one build."""
    libraries = found.get(f"new_libraries.{graph}")
    if libraries is None:
        return "-"
    text = f"{libraries:g} so"
    if f"modules_compiled.{graph}" in found:
        text += (
            f", {found[f'modules_compiled.{graph}']:g} mod"
            f"/{found[f'units_compiled.{graph}']:g} units"
        )
    return text


def report(found: dict[str, dict[str, Any]], load: list[float], notes: list[str]) -> dict[str, Any]:
    ours, theirs = found.get("opweave", {}), found.get("pytensor", {})
    print(f"load average (1 min) before and after: {load[0]:.2f}, {load[1]:.2f}")
    header = f"{'figure':<38} {'opweave':>9} {'cvm':>9} {'ow/cvm':>8} {'target':>7}"
    print(f"{header}  {'compiled: opweave':<24} {'cvm':<8}")
    figures = {}
    for label, key, target in FIGURES:
        mine, other = ours.get(key), theirs.get(key)
        ratio = mine / other if mine is not None and other else None
        verdict = "" if ratio is None or target is None else (" ok" if ratio <= target else " MISS")
        figures[label] = {"opweave": mine, "pytensor": other, "ratio": ratio, "target": target}
        graph = key.split(".", 1)[1]
        counts = ""
        if key.startswith("build."):
            counts = f"  {counts_cell(ours, graph):<24} {counts_cell(theirs, graph):<8}"
        shown_target = f"<= {target:g}" if target is not None else ""
        print(
            f"{label:<38} {cell(mine):>9} {cell(other):>9} "
            f"{cell(ratio, 3) + verdict:>8} {shown_target:>7}{counts}"
        )
    if "build.rfresh20_c" in ours:
        plain, exported = ours["build.rfresh20_c"], ours["build.rnew20"]
        print(
            f"first build of 20 new ops in C mode, exporting nothing (s): {plain:.4g}; "
            f"c|py's rnew20, exporting its 20 nodes, / that: {exported / plain:.3g}"
        )
    print("\nbuild = function() + first call; function() alone and the first call (s):")
    for graph in BUILDS:
        parts = [
            f"{backend} {cell(values.get(f'function.{graph}'))} + "
            f"{cell(values.get(f'first_call.{graph}'))}"
            for backend, values in found.items()
        ]
        print(f"  {graph:<10} " + "; ".join(parts))
    for graph in BUILDS:
        if ours.get(f"whole_because.{graph}"):
            print(f"  opweave compiled {graph} whole: {ours[f'whole_because.{graph}']}")
    for note in notes:
        print(f"note: {note}")
    return {"medians": found, "figures": figures, "load": load, "notes": notes}


def check_results(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Notes on first-call results that differ between runs or backends."""
    notes = []
    seen: dict[str, float] = {}
    for name, answers in runs.items():
        for answer in answers:
            for key, value in answer.items():
                if key.startswith("result."):
                    expected = seen.setdefault(key, value)
                    if not math.isclose(value, expected, rel_tol=1e-9):
                        notes.append(f"{name}: {key} = {value!r}, not {expected!r}")
    return notes


def main() -> None:
    parsed = command_line(__doc__.splitlines()[0], 1, worker)
    if parsed is None:
        return
    args, backends, skipped = parsed
    notes = [f"{skipped}: the ratios are left out"] if skipped else []
    load = [os.getloadavg()[0]]
    runs = measure(backends, args.repeat)
    load.append(os.getloadavg()[0])
    notes += check_results(runs)
    found = report({name: medians(answers) for name, answers in runs.items()}, load, notes)
    if args.json:
        found["runs"] = runs
        args.json.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()

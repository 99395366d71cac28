"""How compile time and the per-node linker scale with the graph (not a test).

Measures, in one run, with the graphs of scaling_graphs.py:
- cold `function()` in a fresh process, in a compile dir that already holds the
  precompiled prelude (two different graphs are compiled there first): chain1,
  chain200, wide200 and kchainA200, then kchainB200 in the same dir after
  kchainA200 (an edit of its last 5 ops);
- edits at compile__jobs of 1, 2 and this machine's CPU count: kchainA200's
  full build, then, each in a copy of that compile dir, an edit of 5 of its
  ops at its start, in its middle, at its end, and spread over it (kchainS200,
  kchainM200, kchainB200, kchainP200);
- PyTensor's C linker on chain1 and kchainA200, the same way, when
  --pytensor-python or $OPWEAVE_BENCH_PYTENSOR_PYTHON names an interpreter
  with pytensor (else its figures are left out);
- per call, with length-1 vectors: `Mode(linker="c|py")` on a 10-node chain and
  on the same chain with one Python-only node, against PyTensor's `cvm`.

Prints the medians and the target figures (ratios measured in this run), the
machine's load before and after, and writes them as JSON (--json).
Usage: python benchmarks/bench_scaling.py [--repeat N] [--json PATH]
       [--pytensor-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

from backends import pytensor_python

HERE = Path(__file__).resolve().parent
FLAGS_VARIABLE = {"opweave": "OPWEAVE_FLAGS", "pytensor": "PYTENSOR_FLAGS"}
# Two graphs that share no module with the others: their second module has
# the precompiled prelude built.
WARM_GRAPHS = ("kchainB5", "kchainB4")
EDITS = {"start": "kchainS200", "middle": "kchainM200", "end": "kchainB200", "spread": "kchainP200"}
EDIT_TARGET = 0.25
COLD_GRAPHS = ("chain1", "chain200", "wide200", "kchainA200", "kchainB200")
PYTENSOR_COLD = ("chain1", "kchainA200")
# (label, numerator, denominator, target)
FIGURES = (
    ("chain1, opweave / PyTensor C linker", "opweave.chain1", "pytensor.chain1", 0.35),
    ("chain200 / chain1", "opweave.chain200", "opweave.chain1", 2.5),
    ("wide200 / chain1", "opweave.wide200", "opweave.chain1", 3.0),
    ("kchainB200 after kchainA200 / kchainA200", "opweave.kchainB200", "opweave.kchainA200", 0.3),
    ("kchainA200, opweave / PyTensor C linker", "opweave.kchainA200", "pytensor.kchainA200", 0.25),
    ("c|py per call, 10-node chain / cvm", "opweave.call_chain10", "pytensor.call_chain10", 0.25),
    (
        "the same with one Python node / cvm",
        "opweave.call_pychain10",
        "pytensor.call_pychain10",
        0.5,
    ),
)


# ---------------------------------------------------------------- worker side


def worker(backend: str, task: str) -> dict[str, Any]:
    """Runs in a fresh process: times `function()` on a graph (task "cold:<graph>")
    or calls of a `c|py` function (task "calls")."""
    import time

    sys.path.insert(0, str(HERE))
    import numpy as np

    import scaling_graphs

    api = scaling_graphs.import_backend(backend)
    if task.startswith("cold:"):
        inputs, outputs = scaling_graphs.build(api, task[5:])
        mode = api.mode.Mode(linker="c", optimizer=None)
        start = time.perf_counter()
        api.function(inputs, outputs, mode=mode)
        return {"seconds": time.perf_counter() - start}
    linker = "c|py" if backend == "opweave" else "cvm"
    mode = api.mode.Mode(linker=linker, optimizer=None)
    x, s = np.ones(1), np.array(2.0)
    found = {}
    for graph in ("chain10", "pychain10"):
        inputs, outputs = scaling_graphs.build(api, graph)
        f = api.function(inputs, outputs, mode=mode)
        found[f"call_{graph}"] = per_call_us(f, (x, s))
    return found


def per_call_us(f: Any, args: tuple[Any, ...], number: int = 20000, repeat: int = 7) -> float:
    """The median over `repeat` samples of `number` calls `f(*args)`, in
    microseconds a call (after one untimed call)."""
    f(*args)
    times = timeit.repeat(lambda: f(*args), number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def run_worker(
    python: str,
    backend: str,
    task: str,
    compiledir: Path,
    script: Path | None = None,
    flags: str = "",
) -> dict[str, Any]:
    """Runs `script` (this file by default) as `--worker backend task` with
    `python`, in `compiledir` (and the backend's `flags`); its JSON answer
    (its last line of output)."""
    env = dict(os.environ)
    env[FLAGS_VARIABLE[backend]] = ",".join(filter(None, [f"compiledir={compiledir}", flags]))
    done = subprocess.run(
        [python, str(script or Path(__file__).resolve()), "--worker", backend, task],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{backend} {task} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- driver side


def measure(backend: str, python: str, repeat: int, scratch: Path) -> dict[str, float]:
    graphs = COLD_GRAPHS if backend == "opweave" else PYTENSOR_COLD
    samples: dict[str, list[float]] = {graph: [] for graph in graphs}
    for r in range(repeat):
        compiledir = scratch / f"{backend}-{r}"
        for graph in WARM_GRAPHS:  # the prelude and helpers
            run_worker(python, backend, f"cold:{graph}", compiledir)
        for graph in graphs:
            samples[graph].append(
                run_worker(python, backend, f"cold:{graph}", compiledir)["seconds"]
            )
    found = {graph: statistics.median(values) for graph, values in samples.items()}
    found.update(run_worker(python, backend, "calls", scratch / f"{backend}-calls"))
    return found


def measure_edits(python: str, repeat: int, scratch: Path, jobs: int) -> dict[str, float]:
    """Medians, in seconds at ``compile__jobs=jobs``, of kchainA200's full
    build ("full") and of each edit of EDITS after it, each in its own copy
    of the compile dir that holds the full build."""
    flags = f"compile__jobs={jobs}"
    samples: dict[str, list[float]] = {name: [] for name in ("full", *EDITS, "alone")}
    for r in range(repeat):
        built = scratch / f"edits-{jobs}-{r}"
        for graph in WARM_GRAPHS:
            run_worker(python, "opweave", f"cold:{graph}", built, flags=flags)
        samples["full"].append(
            run_worker(python, "opweave", "cold:kchainA200", built, flags=flags)["seconds"]
        )
        for name, graph in [*EDITS.items(), ("alone", "kalone200")]:
            edited = scratch / f"edits-{jobs}-{r}-{name}"
            shutil.copytree(built, edited)
            task = f"cold:{graph}"
            samples[name].append(
                run_worker(python, "opweave", task, edited, flags=flags)["seconds"]
            )
    return {name: statistics.median(values) for name, values in samples.items()}


def report_edits(edits: dict[int, dict[str, float]]) -> dict[str, Any]:
    """Prints each edit's seconds and its ratio to the full build, per jobs,
    and the spread edit's seconds beyond those of its 5 new ops compiled as
    a graph of their own ("alone"; target: at most 0.1 s)."""
    print(f"\nedits of 5 of kchainA200's 200 ops: s (ratio to the full build, <= {EDIT_TARGET})")
    print(f"{'jobs':>4} {'full':>8} " + " ".join(f"{name:>16}" for name in EDITS))
    found: dict[str, Any] = {}
    for jobs, medians in edits.items():
        full = medians["full"]
        cells = [f"{medians[n]:7.3f} ({medians[n] / full:5.2f})" for n in EDITS]
        beyond = medians["spread"] - medians["alone"]
        print(
            f"{jobs:>4} {full:8.3f} " + " ".join(f"{cell:>16}" for cell in cells),
            f" spread - alone: {beyond:6.3f} (alone {medians['alone']:.3f})",
        )
        found[str(jobs)] = {
            "seconds": medians,
            "ratios": {name: medians[name] / full for name in EDITS},
            "spread_beyond_alone": beyond,
        }
    return found


def report(results: dict[str, dict[str, float]], load: list[float]) -> dict[str, Any]:
    flat = {f"{b}.{k}": v for b, values in results.items() for k, v in values.items()}
    print(f"load average before and after: {load[0]:.2f}, {load[1]:.2f}")
    for key, value in sorted(flat.items()):
        unit = "us" if ".call_" in key else "s"
        print(f"  {key:<28} {value:10.4f} {unit}")
    figures = {}
    print(f"\n{'figure':<44} {'ratio':>8}  target")
    for label, top, bottom, target in FIGURES:
        ratio = flat[top] / flat[bottom] if top in flat and bottom in flat else None
        figures[label] = {"ratio": ratio, "target": target}
        shown = f"{ratio:8.3f}" if ratio is not None else "     n/a"
        print(f"{label:<44} {shown}  <= {target}")
    return {"medians": flat, "figures": figures, "load": load}


def command_line(
    description: str, default_repeat: int, run_task: Any
) -> tuple[argparse.Namespace, dict[str, str], str] | None:
    """The arguments of a benchmark that compares opweave with PyTensor in
    worker processes: ``(args, {backend: interpreter}, why PyTensor is
    skipped or "")``; or None in a worker process, after it ran its task
    with ``run_task(backend, task)`` and printed the answer as JSON."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeat", type=int, default=default_repeat)
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    parser.add_argument(
        "--pytensor-python",
        help="interpreter with pytensor installed (default: $OPWEAVE_BENCH_PYTENSOR_PYTHON)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("BACKEND", "TASK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_task(*args.worker)))
        return None
    backends = {"opweave": sys.executable}
    python, skipped = pytensor_python(args.pytensor_python)
    if python:
        backends["pytensor"] = python
    return args, backends, "" if python else skipped


def main() -> None:
    parsed = command_line(__doc__.splitlines()[0], 3, worker)
    if parsed is None:
        return
    args, backends, skipped = parsed
    if skipped:
        print(f"{skipped}: its figures are left out")
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="opweave-bench-scaling-") as scratch:
        results = {
            name: measure(name, python, args.repeat, Path(scratch))
            for name, python in backends.items()
        }
        edits = {
            jobs: measure_edits(sys.executable, args.repeat, Path(scratch), jobs)
            for jobs in sorted({1, 2, os.cpu_count() or 1})
        }
    load.append(os.getloadavg()[0])
    found = report(results, load)
    found["edits"] = report_edits(edits)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()

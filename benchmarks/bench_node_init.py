"""Reuse of node code in a fresh process, and what loading it costs (issue 24;
not a test).

What: in a compile dir that starts empty, one worker process builds
rchainA20 (scaling_graphs.py); a second, fresh, process then builds rchainR20
(the same 20 ops rewired), timing `function()` plus the first call: opweave
finds every node through the cache's node-code index on disk, PyTensor's cvm
loads its per-node modules. For opweave, two more fresh processes time the
import (dlopen and module init) of the one module that exports all 20 nodes,
against the import of 20 one-node modules of the same nodes (what exporting
per-node modules would load instead): the question of whether loading one
node from a larger module, which runs that module's init code for every op
in it, costs too much.

How: as bench_reuse.py (opweave `c|py`, PyTensor `cvm`, optimizer=None; the
PyTensor interpreter from --pytensor-python or
$OPWEAVE_BENCH_PYTENSOR_PYTHON). Prints medians over --repeat runs, each in
a new compile dir. Usage: python benchmarks/bench_node_init.py [--repeat N]
[--json PATH] [--pytensor-python PATH]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_scaling import FLAGS_VARIABLE, command_line, run_worker

SCRIPT = Path(__file__).resolve()
LINKER = {"opweave": "c|py", "pytensor": "cvm"}


def _build(backend: str, graph: str) -> tuple[Any, float]:
    import numpy as np

    import scaling_graphs

    api = scaling_graphs.import_backend(backend)
    mode = api.mode.Mode(linker=LINKER[backend], optimizer=None)
    inputs, outputs = scaling_graphs.build(api, graph)
    start = time.perf_counter()
    f = api.function(inputs, outputs, mode=mode)
    f(np.ones(1), np.array(2.0))
    return f, time.perf_counter() - start


def _one_node_libraries() -> list[str]:
    """Compiles each node of rchainA20 as a module of its own."""
    import scaling_graphs
    from opweave.graph.fg import FunctionGraph
    from opweave.link.c._node_keys import single_node_graph
    from opweave.link.c.basic import CLinker

    api = scaling_graphs.import_backend("opweave")
    nodes = FunctionGraph(*scaling_graphs.build(api, "rchainA20")).toposort()
    return [CLinker().accept(single_node_graph(n)[0]).compile().library for n in nodes]


def _import_seconds(libraries: list[str]) -> float:
    import numpy  # noqa: F401  # imported by every module's init: not what is measured

    from opweave import _core
    from opweave.link.c import cmodule

    start = time.perf_counter()
    for library in libraries:
        cmodule.load_extension(library, _core.GRAPH_MODULE_NAME)
    return time.perf_counter() - start


def worker(backend: str, task: str) -> dict[str, Any]:
    """One task, in a fresh process."""
    compiledir = Path(os.environ[FLAGS_VARIABLE[backend]].split("compiledir=", 1)[1])
    if task == "seed":
        f, seconds = _build(backend, "rchainA20")
        if backend == "opweave":
            listing = {"region": [f.library], "nodes": _one_node_libraries()}
            (compiledir / "bench-libraries.json").write_text(json.dumps(listing))
        return {"seed": seconds}
    if task == "fresh":
        f, seconds = _build(backend, "rchainR20")
        compiled = f.compile_profile["compiled"] if backend == "opweave" else None
        return {"fresh": seconds, "compiled": compiled}
    if task in ("region", "nodes"):
        listing = json.loads((compiledir / "bench-libraries.json").read_text())
        return {task: _import_seconds(listing[task])}
    raise ValueError(f"unknown task {task!r}")


def main() -> None:
    parsed = command_line(__doc__.splitlines()[0], 3, worker)
    if parsed is None:
        return
    args, backends, skipped = parsed
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in backends}
    for index in range(args.repeat):
        for name, python in backends.items():
            with tempfile.TemporaryDirectory(prefix=f"opweave-bench-init-{name}-") as scratch:
                found: dict[str, Any] = {}
                tasks = (
                    ("seed", "fresh", "region", "nodes") if name == "opweave" else ("seed", "fresh")
                )
                for task in tasks:
                    found.update(run_worker(python, name, task, Path(scratch), SCRIPT))
            runs[name].append(found)
            print(f"run {index + 1}/{args.repeat}: {name} done", file=sys.stderr)
    table = {
        name: {
            key: statistics.median(r[key] for r in found)
            for key in found[0]
            if found[0][key] is not None
        }
        for name, found in runs.items()
    }
    ours, theirs = table["opweave"], table.get("pytensor", {})
    print(f"fresh-process rchainR20 build (s): opweave {ours['fresh']:.4f}", end="")
    if theirs:
        print(f", cvm {theirs['fresh']:.4f}, ratio {ours['fresh'] / theirs['fresh']:.3f}")
    else:
        print(f" ({skipped})")
    print(f"  opweave compiled {ours['compiled']:g} modules for it")
    print(
        f"import of the 20-node module that exports them (s): {ours['region']:.5f}; "
        f"of 20 one-node modules: {ours['nodes']:.5f}"
    )
    if args.json:
        args.json.write_text(json.dumps({"medians": table, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()

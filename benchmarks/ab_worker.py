"""One measurement of benchmarks/ab.py, in a fresh process of one install.

Usage: python ab_worker.py FIGURE GRAPH CACHE [--prepare] [--calls]

Prints one JSON line: {"value": the figure, "calls": Python calls in the
measured region (with --calls)}. The measured region is bracketed by a stat
of /opweave-ab-begin and of /opweave-ab-end, so that ab.py can count the
system calls made inside it under strace. Figures (GRAPH: a graph of
scaling_graphs.py):

- fresh_hit: ms of the function() of a graph compiled and indexed before
  (a fresh process's hit);
- memo_hit: µs of a second function() of that graph in the same process;
- hooks: ms of the hooks phase of a function() whose modules are cached but
  whose graph record is gone (the ops asked for their code, nothing compiled);
- hooks_all: the same plus the phase that makes the dependency list;
- cpy_fresh: ms of a c|py function() in a fresh process, every node's code
  compiled before;
- cold, cpy_cold: ms of a function() (default mode, c|py) in a fresh process
  and an empty compile dir: the whole compile, exports included;
- call: µs per call of the compiled function.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from scaling_graphs import build, import_backend


def mark(where: str) -> None:
    """A system call strace can find: the start or end of the region."""
    try:
        os.stat(f"/opweave-ab-{where}")
    except OSError:
        pass


def measured(run: Any, count_calls: bool) -> tuple[Any, float, int]:
    """run()'s result, its seconds, and (with count_calls) the Python calls
    it made."""
    calls = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[0] += 1

    mark("begin")
    if count_calls:
        sys.setprofile(profile)
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    sys.setprofile(None)
    mark("end")
    return result, seconds, calls[0]


def main() -> None:
    figure, graph, cache = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    prepare, count_calls = "--prepare" in sys.argv, "--calls" in sys.argv
    api = import_backend("opweave")
    inputs, outputs = build(api, graph)
    mode = "c|py" if figure in ("cpy_fresh", "cpy_cold") else None
    if figure.endswith("cold"):
        if prepare:  # nothing to warm: each run compiles in a directory of its own
            print(json.dumps({"value": 0.0, "calls": 0}))
            return
        import opweave

        opweave.config.compiledir = str(cache / f"cold-{os.getpid()}-{time.time_ns()}")
    if figure.startswith("hooks") and not prepare:
        for index in (cache / "v2" / "records" / "graphs", cache / "graphs"):
            shutil.rmtree(index, ignore_errors=True)  # older layouts' graph index
        from opweave import _core

        store = _core.ModuleCache(str(cache))
        for entry in store.list():
            if entry.kind == "graph":  # graph records as entries of the cache
                store.evict(entry.key)

    def compile_() -> Any:
        return api.function(inputs, outputs, mode=mode)

    if prepare or figure in ("memo_hit", "call"):
        f = compile_()
    if prepare:
        print(json.dumps({"value": 0.0, "calls": 0}))
        return
    if figure == "memo_hit":
        inputs, outputs = build(api, graph)
        times = []
        for _ in range(30):
            times.append(measured(compile_, False)[1])
        _, _, calls = measured(compile_, count_calls)
        value = sorted(times)[len(times) // 2] * 1e6
    elif figure == "call":
        x, s = api.numpy.ones(8), api.numpy.array(2.0)
        for _ in range(1000):
            f(x, s)
        start = time.perf_counter()
        for _ in range(100000):
            f(x, s)
        value, calls = (time.perf_counter() - start) / 100000 * 1e6, 0
    else:
        f, seconds, calls = measured(compile_, count_calls)
        profile = f.compile_profile
        value = {
            "fresh_hit": seconds * 1e3,
            "cpy_fresh": seconds * 1e3,
            "cold": seconds * 1e3,
            "cpy_cold": seconds * 1e3,
            "hooks": profile.get("hooks", 0.0) * 1e3,
            "hooks_all": (profile.get("hooks", 0.0) + profile.get("dependencies", 0.0)) * 1e3,
        }[figure]
    print(json.dumps({"value": value, "calls": calls}))


if __name__ == "__main__":
    main()

"""Caches across machines: how long machine B's cold ``function()`` takes
after machine A compiled the same graph, per setup (docs/scale-out.md).

A "machine" is an empty cache root (and launcher cache) used by a fresh
process; a real redis-server on loopback is the shared store. Per setup and
repetition: A compiles a 30-node graph (new code each repetition), then B
loads it. Prints medians and B/A. Also the warm-cache speedup that CI gets
from ``opweave cache export``/``import``: a batch of graphs compiled cold in
one process, then by a process whose empty cache imported A's export.

Run: python benchmarks/bench_scale_out.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "python"))

from support.redis_server import free_port, redis_server  # noqa: E402

TIMED = """
import json, sys, time
sys.path.insert(0, {support!r})
from graph_worker import build
import opweave
graphs = sys.argv[1].split(",")
built = [build(g) for g in graphs]
start = time.perf_counter()
for inputs, outputs, values, expected in built:
    opweave.function(inputs, outputs)
print(json.dumps(time.perf_counter() - start))
"""


def timed(graphs: str, env: dict[str, str]) -> float:
    code = TIMED.format(support=str(HERE.parent / "tests" / "python" / "support"))
    out = subprocess.run(
        [sys.executable, "-c", code, graphs],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out)


def setups(url: str, scratch: Path, r: int) -> dict[str, dict[str, dict[str, str]]]:
    """Per setup, the environments of machines A and B in repetition `r`."""

    def each(name: str, **extra: str) -> dict[str, dict[str, str]]:
        machines = {}
        for m in ("a", "b"):
            root = scratch / name / f"{m}{r}"
            env = {"OPWEAVE_FLAGS": f"compiledir={root}" + extra.get("flags", "")}
            if "ccache" in name:
                env |= {"CCACHE_DIR": str(root / "ccache"), "CCACHE_REMOTE_STORAGE": url}
            if "sccache" in name:
                env |= {
                    "SCCACHE_DIR": str(root / "sccache"),
                    "SCCACHE_SERVER_PORT": str(free_port()),
                    "SCCACHE_REDIS_ENDPOINT": url,
                }
            machines[m] = env
        return machines

    return {
        "remote tier (cache__remote)": each(
            "remote", flags=f",cache__remote={url}/0,cache__remote_secret=bench"
        ),
        "ccache + Redis": each("ccache", flags=",cxx_launcher=ccache"),
        "sccache + Redis": each("sccache", flags=",cxx_launcher=sccache"),
    }


def flush(url: str) -> None:
    host, port = url.removeprefix("redis://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"FLUSHALL\r\n")
        assert sock.recv(16).startswith(b"+OK")


def stop_sccache(env: dict[str, str]) -> None:
    subprocess.run(["sccache", "--stop-server"], env={**os.environ, **env}, capture_output=True)


def warm_ci(scratch: Path, repeat: int) -> tuple[float, float]:
    graphs = ",".join([*(f"vtv:{n}" for n in range(1, 6)), *(f"scaled:{k}" for k in range(1, 9))])
    cold, warm = [], []
    for r in range(repeat):
        a, b, archive = scratch / f"ci-a{r}", scratch / f"ci-b{r}", scratch / f"ci{r}.tgz"
        cold.append(timed(graphs, {"OPWEAVE_FLAGS": f"compiledir={a}"}))
        for action, root in (("export", a), ("import", b)):
            subprocess.run(
                [sys.executable, "-m", "opweave", "cache", action, str(archive)],
                env={
                    **os.environ,
                    "OPWEAVE_FLAGS": f"compiledir={root},cache__remote_secret=bench",
                },
                check=True,
                capture_output=True,
            )
        warm.append(timed(graphs, {"OPWEAVE_FLAGS": f"compiledir={b}"}))
    return statistics.median(cold), statistics.median(warm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, redis_server(Path(tmp)) as url:
        scratch = Path(tmp)
        results = {}
        times: dict[str, tuple[list[float], list[float]]] = {}
        for r in range(args.repeat):
            graph = f"units:{30 + r}"  # new code each repetition
            flush(url)  # machine A starts cold every time, launchers included
            for name, machines in setups(url, scratch, r).items():
                a_times, b_times = times.setdefault(name, ([], []))
                try:
                    a_times.append(timed(graph, machines["a"]))
                    time.sleep(0.5)  # sccache stores after the compile returns
                    b_times.append(timed(graph, machines["b"]))
                finally:
                    if "sccache" in name:
                        stop_sccache(machines["a"])
                        stop_sccache(machines["b"])
        for name, (a_times, b_times) in times.items():
            a, b = statistics.median(a_times), statistics.median(b_times)
            results[name] = {"A_s": round(a, 4), "B_s": round(b, 4), "B/A": round(b / a, 3)}
        cold, warm = warm_ci(scratch, args.repeat)
        results["CI: 13 graphs, cold vs imported"] = {
            "cold_s": round(cold, 4),
            "warm_s": round(warm, 4),
            "warm/cold": round(warm / cold, 3),
        }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

"""A/B speed guard: two installs of opweave, the same figures, in alternating
fresh processes (not a test).

Usage: python benchmarks/ab.py BASE HEAD FIGURE[:GRAPH] ... [--pairs N] [--trace]

BASE and HEAD are Python interpreters (or virtualenv directories) with an
opweave each. For each figure (see ab_worker.py: fresh_hit, memo_hit, hooks,
hooks_all, cpy_fresh, cold, cpy_cold, call; GRAPH a graph of scaling_graphs.py, kchainA20 by
default), each install first warms a compile dir of its own; then N pairs
(10 by default, at least 10) each run one fresh process of BASE and one of
HEAD, in alternating order, and the pair's ratio HEAD / BASE is taken. The
table shows each install's median, the median ratio and its bootstrap 95 %
interval; a figure REGRESSES when the interval's lower end is above 1.05.

With --trace, each hit figure (fresh_hit, memo_hit) is run once more per
install under ``strace -f`` and the system calls inside the measured region
are counted by name (as ``strace -c`` would count them), with the Python
calls of that region (a profile function's count): a new stat or open on a
hit path shows there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

WORKER = Path(__file__).with_name("ab_worker.py")
REGRESSION = 1.05
HIT_FIGURES = ("fresh_hit", "memo_hit")


def python_of(install: str) -> str:
    """The interpreter of ``install`` (an interpreter, or a virtualenv)."""
    path = Path(install)
    return str(path / "bin" / "python") if path.is_dir() else str(path)


def run_worker(python: str, args: list[str], cache: Path, prefix: list[str] = ()) -> dict:
    env = dict(os.environ, OPWEAVE_FLAGS=f"compiledir={cache}")
    done = subprocess.run(
        [*prefix, python, str(WORKER), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{python} {args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bootstrap(ratios: list[float], rounds: int = 4000) -> tuple[float, float]:
    """The 95 % interval of the median of ``ratios``, by resampling."""
    generator = random.Random(12345)
    medians = sorted(
        statistics.median(generator.choices(ratios, k=len(ratios))) for _ in range(rounds)
    )
    return medians[int(rounds * 0.025)], medians[int(rounds * 0.975) - 1]


def measure(installs: dict[str, str], figure: str, graph: str, pairs: int, work: Path) -> dict:
    """The figure's values for each install and the pairs' ratios."""
    caches = {name: work / f"{name}-{figure}-{graph}" for name in installs}
    for name, python in installs.items():
        run_worker(python, [figure, graph, str(caches[name]), "--prepare"], caches[name])
    values: dict[str, list[float]] = {name: [] for name in installs}
    ratios = []
    for pair in range(pairs):
        order = ["base", "head"] if pair % 2 == 0 else ["head", "base"]
        found = {}
        for name in order:
            args = [figure, graph, str(caches[name])]
            found[name] = run_worker(installs[name], args, caches[name])["value"]
            values[name].append(found[name])
        ratios.append(found["head"] / found["base"] if found["base"] else float("nan"))
    low, high = bootstrap(ratios)
    return {"values": values, "ratios": ratios, "interval": (low, high)}


def syscalls(python: str, figure: str, graph: str, cache: Path, work: Path) -> tuple[Counter, int]:
    """The system calls (by name) and Python calls inside the measured region."""
    log = work / "strace.log"
    found = run_worker(
        python, [figure, graph, str(cache), "--calls"], cache, ["strace", "-f", "-o", str(log)]
    )
    lines = log.read_text().splitlines()
    begin = max(i for i, line in enumerate(lines) if "/opweave-ab-begin" in line)
    end = max(i for i, line in enumerate(lines) if "/opweave-ab-end" in line)
    counts: Counter = Counter()
    for line in lines[begin + 1 : end]:  # the last region: the one with --calls
        name = line.split(None, 1)[-1].split("(", 1)[0].strip()
        if name and not name.startswith(("+++", "---", "<...")):
            counts[name] += 1
    return counts, int(found["calls"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("figures", nargs="+", help="FIGURE[:GRAPH]")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args()
    if args.pairs < 10:
        parser.error("--pairs must be at least 10")
    installs = {"base": python_of(args.base), "head": python_of(args.head)}
    with tempfile.TemporaryDirectory(prefix="opweave-ab-") as directory:
        work = Path(directory)
        print(f"{'figure':<24} {'base':>10} {'head':>10} {'ratio':>7}  95% interval     verdict")
        for spec in args.figures:
            figure, _, graph = spec.partition(":")
            graph = graph or "kchainA20"
            found = measure(installs, figure, graph, args.pairs, work)
            base = statistics.median(found["values"]["base"])
            head = statistics.median(found["values"]["head"])
            ratio = statistics.median(found["ratios"])
            low, high = found["interval"]
            verdict = "REGRESSES" if low > REGRESSION else "ok"
            print(
                f"{spec:<24} {base:>10.3f} {head:>10.3f} {ratio:>7.3f}  "
                f"[{low:.3f}, {high:.3f}]  {verdict}",
                flush=True,
            )
            if args.trace and figure in HIT_FIGURES:
                for name, python in installs.items():
                    cache = work / f"{name}-{figure}-{graph}"
                    counts, calls = syscalls(python, figure, graph, cache, work)
                    listed = ", ".join(f"{n} {c}" for n, c in counts.most_common())
                    print(f"    {name}: {calls} Python calls; syscalls: {listed or 'none'}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

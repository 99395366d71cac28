"""A chaos run of the cache with real processes: 8 processes compile 50
graphs a round (20 shared by all, the rest by pairs, 10 of them new each
round), in C and c|py modes, for three rounds. In each round one worker is
SIGKILLed while it compiles, and between rounds about a tenth of the
entries are damaged (truncated, zeroed, garbage, deleted, metadata garbled
or missing; a prelude among them).

The other workers must see no error and crash none, every result must be
right, the cache must end with the same keys as a single-process build of
the same graphs, and verify() must find nothing wrong."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.helpers import GRAPH_WORKER

from opweave import _core

pytestmark = pytest.mark.slow

WORKERS = 8
ROUNDS = 3
# Each round brings 10 new graphs (so that every round compiles): 40 in all,
# half of them compiled by every worker, half by pairs of workers.
NEW_PER_ROUND = 10


def round_graphs(round_: int) -> tuple[list[str], list[str]]:
    """The graphs every worker compiles in `round_`, and those only pairs do."""
    shared = [f"scaled:{k}" for k in range(2, 22)]
    paired = [f"scaled:{k}" for k in range(100, 120)]
    fresh = [
        f"scaled:{1000 * (r + 1) + k}" for r in range(round_ + 1) for k in range(NEW_PER_ROUND)
    ]
    return shared, paired + fresh


def all_graphs() -> list[str]:
    shared, paired = round_graphs(ROUNDS - 1)
    return shared + paired


def graphs_of(worker: int, round_: int) -> list[str]:
    """Every shared graph, plus the paired ones of this worker and of the one
    before it (so each has two workers), in this worker's order."""
    shared, paired = round_graphs(round_)
    share = len(paired) / WORKERS
    mine = paired[round(worker * share) : round((worker + 1) * share)]
    before = (worker - 1) % WORKERS
    previous = paired[round(before * share) : round((before + 1) * share)]
    graphs = shared + mine + previous
    random.Random(worker * 100 + round_).shuffle(graphs)
    return graphs


def mode_of(worker: int) -> str:
    return "C" if worker % 2 == 0 else "c|py"


def start(cache: Path, worker: int, round_: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPWEAVE_FLAGS"}
    return subprocess.Popen(
        [
            sys.executable,
            str(GRAPH_WORKER),
            "--many",
            str(cache),
            mode_of(worker),
            ",".join(graphs_of(worker, round_)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def damage(cache: Path, rng: random.Random) -> list[str]:
    """Damages about a tenth of the entries; returns what was done."""
    done = []
    entries = [Path(e.dir) for e in _core.ModuleCache(str(cache)).list()]
    for entry in rng.sample(entries, max(1, len(entries) // 10)):
        libraries = list(entry.glob("module-*.so")) or list(entry.glob("*.gch"))
        if not libraries:
            continue
        target = libraries[0]
        how = rng.choice(["truncate", "zero", "garbage", "delete", "garble-meta", "drop-meta"])
        size = target.stat().st_size
        if how == "truncate":
            target.write_bytes(target.read_bytes()[: size // 2])
        elif how == "zero":
            target.write_bytes(bytes(size))
        elif how == "garbage":
            target.write_bytes(os.urandom(size))
        elif how == "delete":
            target.unlink()
        elif how == "garble-meta":
            (entry / "meta.json").write_text('{"format": 2, "key": ')
        else:
            (entry / "meta.json").unlink()
        done.append(f"{how} {entry.name[:12]}")
    return done


def wait_until_compiling(cache: Path, pid: int) -> None:
    """Returns once `pid` has a staging directory: it is building."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        tmp = cache / "v2" / "tmp"
        if tmp.is_dir() and any(f".{pid}." in name for name in os.listdir(tmp)):
            return
        time.sleep(0.005)
    raise AssertionError(f"worker {pid} never compiled")


def keys(cache: Path) -> set[str]:
    return {e.key for e in _core.ModuleCache(str(cache)).list()}


def test_chaos(tmp_path: Path) -> None:
    cache = tmp_path / "chaos"
    rng = random.Random(20261124)
    problems = []
    damaged = 0
    for round_ in range(ROUNDS):
        workers = [start(cache, worker, round_) for worker in range(WORKERS)]
        victim = rng.randrange(WORKERS)
        wait_until_compiling(cache, workers[victim].pid)
        workers[victim].kill()
        killed_while_working = workers[victim].wait() == -9
        for worker, process in enumerate(workers):
            out, err = process.communicate(timeout=600)
            if worker == victim:
                continue
            if process.returncode != 0:
                problems.append(
                    f"round {round_} worker {worker} died ({process.returncode}): {err}"
                )
                continue
            report = json.loads(out.strip().splitlines()[-1])
            if report["errors"] or report["wrong"]:
                problems.append(f"round {round_} worker {worker}: {report}")
        assert killed_while_working
        if round_ < ROUNDS - 1:
            damaged += len(damage(cache, rng))
    assert problems == []
    counters = _core.ModuleCache(str(cache)).stats().counters
    assert damaged >= 2 and counters.quarantines >= damaged // 2, (damaged, counters.quarantines)

    # A last pass in one process: everything is there, and hits.
    for mode in ("C", "c|py"):
        graphs = ",".join(all_graphs())
        out = subprocess.run(
            [sys.executable, str(GRAPH_WORKER), "--many", str(cache), mode, graphs],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        ).stdout
        report = json.loads(out.strip().splitlines()[-1])
        assert report["errors"] == [] and report["wrong"] == []
        assert not [r for r in report["logs"] if "compiled module" in r["message"]], report["logs"]

    reference = tmp_path / "reference"
    for mode in ("C", "c|py"):
        subprocess.run(
            [
                sys.executable,
                str(GRAPH_WORKER),
                "--many",
                str(reference),
                mode,
                ",".join(all_graphs()),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
    assert keys(cache) == keys(reference)
    report = _core.ModuleCache(str(cache)).verify()
    assert report.problems == [] and report.stale == []
    assert report.entries_checked == len(keys(reference))

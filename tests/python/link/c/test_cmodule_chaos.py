"""A chaos run of the cache with real processes: 8 processes compile 50
graphs a round (20 shared by all, the rest by pairs, 10 of them new each
round), in C and c|py modes, for three rounds. In each round one worker is
SIGKILLed while it compiles, and between rounds about a tenth of the
entries are damaged (truncated, zeroed, garbage, deleted, metadata garbled
or missing; a prelude among them).

The other workers must see no error and crash none, every result must be
right, the cache must end with the same keys as a single-process build of
the same graphs, and verify() must find nothing wrong.

Then the same for multi-node graphs, one entry at a time: a chain of ops of
distinct codes (one module), and a graph compiled in units (two unit
entries and a module linking them). The module's library or metadata, or
a unit's object file or metadata, is truncated, zeroed or overwritten with
random bytes; a fresh process must get the right values (compared with
NumPy), put a rebuilt entry back under the damaged one's key, reuse the
intact units, and never link a damaged one. A worker SIGKILLed while it
builds a graph's units leaves nothing the next process would use: it
builds, reuses the units that were published, and sweeps the leftovers."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.helpers import GRAPH_WORKER, run_graph

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
        libraries = list(entry.glob("module-*.so")) or list(entry.glob("*.gch*"))
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
    """The keys of the cache's modules, units and preludes (graph records are
    named by the graphs' memo keys, which name variables as each process
    numbered them: a process of each worker's makes records of its own)."""
    return {e.key for e in _core.ModuleCache(str(cache)).list() if e.kind != "graph"}


def run_all_graphs(root: Path, mode: str) -> dict:
    """Every graph, built in one process in ``mode`` with the cache at
    ``root``: the worker's report."""
    graphs = ",".join(all_graphs())
    out = subprocess.run(
        [sys.executable, str(GRAPH_WORKER), "--many", str(root), mode, graphs],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


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
        report = run_all_graphs(cache, mode)
        assert report["errors"] == [] and report["wrong"] == []
        assert not [r for r in report["logs"] if "compiled module" in r["message"]], report["logs"]

    reference = tmp_path / "reference"
    for mode in ("C", "c|py"):
        run_all_graphs(reference, mode)
    assert keys(cache) == keys(reference)
    report = _core.ModuleCache(str(cache)).verify()
    assert report.problems == [] and report.stale == []
    assert report.entries_checked == len(_core.ModuleCache(str(cache)).list())


# Damage to the entries of multi-node graphs, one entry at a time, with a
# graph in compile units: its module's library or metadata, or a unit's
# object file or metadata. A fresh process must get the right values (the
# graph worker compares them with NumPy), rebuild the damaged entry under
# its key, and reuse the entries that are intact.

UNIT_FLAGS = {"OPWEAVE_FLAGS": "cmodule__unit_threshold=8"}
# 30 distinct node codes: two units and a module that links them. The edit,
# one more node, shares its first unit with it.
UNIT_GRAPH, EDITED_UNIT_GRAPH = "units:30", "units:31"
# Six nodes of distinct codes, under the unit threshold: one module.
CHAIN_GRAPH = "units:6"
UNITS_LOG = re.compile(r"compiled module \w+ \(\w+\) in [\d.]+ s from (\d+) units \((\d+) reused\)")


def units_built(report: dict[str, Any]) -> tuple[int, int]:
    """(units, reused) from the log line of the module the worker built."""
    found = [UNITS_LOG.search(r["message"]) for r in report["logs"]]
    [match] = [m for m in found if m]
    return int(match[1]), int(match[2])


def entries(cache: Path, kind: str) -> dict[str, Path]:
    """The entries of `kind` ("module", "unit"), by key."""
    return {e.key: Path(e.dir) for e in _core.ModuleCache(str(cache)).list() if e.kind == kind}


@dataclass(frozen=True)
class UnitCache:
    """A cache holding UNIT_GRAPH and CHAIN_GRAPH (copied for each test),
    and which of its entries belong to what."""

    root: Path
    unit_module: str
    chain_module: str
    shared_units: frozenset[str]  # the units EDITED_UNIT_GRAPH reuses


@pytest.fixture(scope="module")
def unit_cache(tmp_path_factory: pytest.TempPathFactory) -> UnitCache:
    root = tmp_path_factory.mktemp("units") / "cache"
    assert run_graph(root, UNIT_GRAPH, env=UNIT_FLAGS)["right"]
    unit_module, *more = entries(root, "module")
    assert more == [] and len(entries(root, "unit")) >= 2
    assert run_graph(root, CHAIN_GRAPH, env=UNIT_FLAGS)["right"]
    [chain_module] = set(entries(root, "module")) - {unit_module}
    assert len(entries(root, "unit")) >= 2  # the chain has no units of its own
    # The edited graph alone, elsewhere: the units it has in common.
    edited = tmp_path_factory.mktemp("edited") / "cache"
    assert run_graph(edited, EDITED_UNIT_GRAPH, env=UNIT_FLAGS)["right"]
    shared = set(entries(root, "unit")) & set(entries(edited, "unit"))
    assert shared and len(shared) < len(entries(edited, "unit"))
    return UnitCache(root, unit_module, chain_module, frozenset(shared))


def spoil(path: Path, how: str) -> None:
    """Truncates, zeroes or overwrites `path` with random bytes."""
    data = path.read_bytes()
    assert data
    if how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif how == "zero":
        path.write_bytes(bytes(len(data)))
    else:
        path.write_bytes(os.urandom(len(data)))


@pytest.mark.parametrize("how", ["truncate", "zero", "garbage"])
@pytest.mark.parametrize(
    ("graph", "target"),
    [
        (UNIT_GRAPH, "module-*.so"),
        (UNIT_GRAPH, "meta.json"),
        (CHAIN_GRAPH, "module-*.so"),
        (CHAIN_GRAPH, "meta.json"),
    ],
)
def test_a_damaged_module_of_a_multi_node_graph_is_rebuilt(
    unit_cache: UnitCache, tmp_path: Path, graph: str, target: str, how: str
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(unit_cache.root, cache, symlinks=True)
    before = keys(cache)
    key = unit_cache.unit_module if graph == UNIT_GRAPH else unit_cache.chain_module
    [damaged] = entries(cache, "module")[key].glob(target)
    spoil(damaged, how)

    report = run_graph(cache, graph, env=UNIT_FLAGS)
    assert report["right"], report
    assert report["outcomes"] == ["built"]
    if graph == UNIT_GRAPH:  # its units were intact: only the link ran again
        units, reused = units_built(report)
        assert units == reused >= 2
    stats = _core.ModuleCache(str(cache)).stats()
    assert stats.counters.quarantines >= 1
    assert keys(cache) == before  # the module is back under its key
    verified = _core.ModuleCache(str(cache)).verify()
    assert verified.problems == [] and verified.stale == []
    assert run_graph(cache, graph, env=UNIT_FLAGS)["outcomes"] == ["hit"]


@pytest.mark.parametrize("how", ["truncate", "zero", "garbage"])
@pytest.mark.parametrize("target", ["unit.o", "meta.json"])
def test_a_damaged_unit_is_rebuilt_not_linked(
    unit_cache: UnitCache, tmp_path: Path, target: str, how: str
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(unit_cache.root, cache, symlinks=True)
    before = keys(cache)
    for key in unit_cache.shared_units:
        spoil(entries(cache, "unit")[key] / target, how)

    # An edit of the graph: its new module links the damaged unit's key.
    report = run_graph(cache, EDITED_UNIT_GRAPH, env=UNIT_FLAGS)
    assert report["right"], report
    assert report["outcomes"] == ["built"]
    units, reused = units_built(report)
    # What the damaged units held was compiled again (under their keys, or
    # in a new unit beside cached units that hold the rest, _unit_reuse.py).
    assert units >= 2 and reused < units
    stats = _core.ModuleCache(str(cache)).stats()
    assert stats.counters.quarantines >= len(unit_cache.shared_units)
    assert all(key in keys(cache) for key in before - set(unit_cache.shared_units))
    verified = _core.ModuleCache(str(cache)).verify()
    assert verified.problems == [] and verified.stale == []
    # The graph it came from links the rebuilt unit, and hits.
    assert run_graph(cache, UNIT_GRAPH, env=UNIT_FLAGS)["outcomes"] == ["hit"]


def staging_of(cache: Path, pid: int) -> list[str]:
    """The staging directories of `pid` in the cache."""
    tmp = cache / "v2" / "tmp"
    return [name for name in os.listdir(tmp) if f".{pid}." in name] if tmp.is_dir() else []


@pytest.mark.parametrize("when", ["compiling the first unit", "after a unit is published"])
def test_a_worker_killed_while_it_builds_units(tmp_path: Path, when: str) -> None:
    cache = tmp_path / "cache"
    # One compiler at a time and no prelude: the units are built one after
    # the other, and every staging directory is a unit's or the module's.
    flags = "cmodule__unit_threshold=8,cmodule__precompiled_header=false,compile__jobs=1"
    env = {k: v for k, v in os.environ.items() if k != "OPWEAVE_FLAGS"}
    env["OPWEAVE_FLAGS"] = flags
    worker = subprocess.Popen(
        [sys.executable, str(GRAPH_WORKER), str(cache), "C", "units:60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while not (
            staging_of(cache, worker.pid)
            and (when == "compiling the first unit" or entries(cache, "unit"))
        ):
            assert worker.poll() is None, worker.communicate()
            assert time.monotonic() < deadline, "the worker never built a unit"
            time.sleep(0.005)
        worker.kill()
        assert worker.wait(timeout=30) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    published = set(entries(cache, "unit"))
    assert entries(cache, "module") == {}, f"killed too late, {when}"
    if when == "compiling the first unit":
        assert published == set()

    report = run_graph(cache, "units:60", env={"OPWEAVE_FLAGS": flags})
    assert report["right"], report
    assert report["outcomes"] == ["built"]
    units, reused = units_built(report)
    assert units >= 3 and reused == len(published)  # what was published is intact
    assert staging_of(cache, worker.pid) == []  # the killed build's leftovers are swept
    verified = _core.ModuleCache(str(cache)).verify()
    assert verified.problems == [] and verified.stale == []
    assert run_graph(cache, "units:60", env={"OPWEAVE_FLAGS": flags})["outcomes"] == ["hit"]

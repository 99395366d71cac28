"""ModuleCache across real processes: one build per key, parallel builds of
different keys, a killed build, and pruning while others read."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.helpers import finish, read_event, start_worker
from support.workers import payload_for

from opweave import _core

pytestmark = pytest.mark.slow

N_PROCESSES = 8


def writer(content: bytes) -> Callable[[str], None]:
    """A build function that writes `content` as the entry's payload."""

    def build(staging: str) -> None:
        (Path(staging) / "payload").write_bytes(content)

    return build


def test_many_processes_one_key_build_exactly_once(tmp_path: Path) -> None:
    root, counter = str(tmp_path / "cache"), tmp_path / "builds.txt"
    key = "k" * 16
    workers = [start_worker("build", root, key, "0.5", str(counter)) for _ in range(N_PROCESSES)]
    results = [finish(worker) for worker in workers]
    assert len(counter.read_text().splitlines()) == 1
    outcomes = sorted(str(result["outcome"]) for result in results)
    assert outcomes.count("built") == 1
    assert set(outcomes) <= {"built", "built_by_other", "hit"}
    assert len({result["dir"] for result in results}) == 1
    assert (Path(str(results[0]["dir"])) / "payload").read_bytes() == payload_for(key)


def test_many_processes_different_keys_build_in_parallel(tmp_path: Path) -> None:
    root, counter = str(tmp_path / "cache"), tmp_path / "builds.txt"
    build_seconds = 1.0
    started = time.monotonic()
    workers = [
        start_worker("build", root, f"key{i:02d}" + "x" * 12, str(build_seconds), str(counter))
        for i in range(N_PROCESSES)
    ]
    results = [finish(worker) for worker in workers]
    wall = time.monotonic() - started
    assert len(counter.read_text().splitlines()) == N_PROCESSES
    assert all(result["outcome"] == "built" for result in results)
    # No key waited for another: every build was in progress at one moment.
    latest_start = max(float(result["start"]) for result in results)
    earliest_end = min(float(result["end"]) for result in results)
    assert latest_start < earliest_end
    # Serial builds would take 8 s; parallel ones take one build plus startup.
    assert wall < N_PROCESSES * build_seconds / 2


def test_killed_build_publishes_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "cache")
    key = "k" * 16
    worker = start_worker("build-and-hang", root, key)
    event = read_event(worker)
    staging = Path(str(event["staging"]))
    assert (staging / "payload").read_bytes() == b"partial"
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)

    cache = _core.ModuleCache(root)
    assert cache.lookup(key) is None
    assert staging.exists()  # left behind by the dead process ...
    assert cache.stats().builds_in_flight == 1
    # ... and the key is not stuck: the lock died with the builder.
    result = cache.get_or_build(key, writer(b"ok"))
    assert result.outcome == "built"
    assert (Path(result.entry.dir) / "payload").read_bytes() == b"ok"
    assert not staging.exists()  # swept when the next build ran
    assert cache.stats().builds_in_flight == 0


def test_prune_while_other_processes_read(tmp_path: Path) -> None:
    root = str(tmp_path / "cache")
    keys = [f"entry{i:02d}" + "y" * 10 for i in range(6)]
    cache = _core.ModuleCache(root)

    def build_all() -> None:
        for key in keys:
            cache.get_or_build(key, writer(payload_for(key)))

    build_all()
    readers = [start_worker("read", root, "3.0", *keys) for _ in range(3)]
    deadline = time.monotonic() + 2.5
    rounds = 0
    while time.monotonic() < deadline:
        cache.prune(max_total_bytes=0)
        build_all()
        cache.clear()
        build_all()
        rounds += 1
    counts = [finish(reader) for reader in readers]
    assert rounds > 0
    assert all(count["corrupt"] == 0 for count in counts), counts
    assert sum(int(count["hits"]) for count in counts) > 0
    assert sum(int(count["misses"]) for count in counts) > 0  # pruning really overlapped
    assert cache.stats().entries == len(keys)
    assert cache.stats().builds_in_flight == 0


_HITS = """
import sys
from opweave import _core
cache = _core.ModuleCache(sys.argv[1])
for _ in range(int(sys.argv[3])):
    assert cache.get_or_build(sys.argv[2], lambda staging: None).outcome == "hit"
    cache.flush_counters()  # every hit reaches the file, under the others' feet
"""


def test_counters_lose_nothing_under_concurrency(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = str(tmp_path / "cache")
    key = "h" * 16
    cache = _core.ModuleCache(root)
    cache.get_or_build(key, writer(b"x"))
    cache.flush_counters()
    hits = 40
    children = [
        subprocess.Popen([sys.executable, "-c", _HITS, root, key, str(hits)])
        for _ in range(N_PROCESSES)
    ]
    assert [child.wait(timeout=120) for child in children] == [0] * N_PROCESSES
    counters = _core.ModuleCache(root).stats().counters
    assert counters.hits == N_PROCESSES * hits
    assert (counters.misses, counters.builds) == (1, 1)

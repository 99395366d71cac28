"""Compile slots with real processes: processes with different caches share
the slots of one directory, a killed holder frees its slot at once, and a
waiter takes a freed slot quickly while using next to no CPU."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import read_event, start_worker

pytestmark = pytest.mark.slow


class SlotWorker:
    """A child process (workers.py ``slot``) that takes and frees compile
    slots of its own cache when told to."""

    def __init__(self, root: Path, slot_dir: Path | None, jobs: int = 1) -> None:
        self.process = start_worker("slot", str(root), str(slot_dir or "-"), str(jobs))
        # A child that hangs is killed, so that a read of its output ends.
        self._watchdog = threading.Timer(60, self.process.kill)
        self._watchdog.start()

    def command(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def start_taking(self) -> None:
        """Asks for a slot; returns once the child is about to wait for one."""
        self.command("take")
        assert "waiting" in read_event(self.process)

    def taken(self) -> dict[str, object]:
        """Waits for the child to hold its slot: {"slot", "path", "at"}."""
        event = read_event(self.process)
        assert "slot" in event, event
        return event

    def take(self) -> dict[str, object]:
        self.start_taking()
        return self.taken()

    def release(self) -> float:
        """Frees the child's slot; returns the time.monotonic() just before it did."""
        self.command("release")
        return float(read_event(self.process)["released"])  # type: ignore[arg-type]

    def stop(self) -> None:
        self._watchdog.cancel()
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=10)


@pytest.fixture
def workers() -> Iterator[list[SlotWorker]]:
    """The SlotWorkers a test starts (append them), stopped at its end."""
    started: list[SlotWorker] = []
    yield started
    for worker in started:
        worker.stop()


@pytest.fixture
def holder_and_waiter(tmp_path: Path, workers: list[SlotWorker]) -> tuple[SlotWorker, SlotWorker]:
    """Two workers of different caches that share the slot directory `slots`."""
    slots = tmp_path / "slots"
    pair = (SlotWorker(tmp_path / "cache-a", slots), SlotWorker(tmp_path / "cache-b", slots))
    workers += pair
    return pair


def cpu_seconds(pid: int) -> float:
    """CPU time used so far by all threads of process `pid`: from their
    schedstat (nanoseconds) where the kernel has it, else from its stat."""
    tasks = Path(f"/proc/{pid}/task")
    try:
        return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks.iterdir()) / 1e9
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_processes_with_different_caches_share_the_default_slots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: list[SlotWorker]
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # inherited by the children
    holder = SlotWorker(tmp_path / "cache-a", None)
    waiter = SlotWorker(tmp_path / "cache-b", None)
    workers += [holder, waiter]
    held = holder.take()
    assert held["path"] == str(runtime / "opweave" / "compile-slot-0.lock")
    waiter.start_taking()
    time.sleep(0.5)
    released = holder.release()
    taken = waiter.taken()
    assert taken["path"] == held["path"]
    assert float(taken["at"]) >= released  # type: ignore[arg-type]
    # Neither cache holds slots of its own.
    assert not list(tmp_path.glob("cache-*/v2/locks/compile-slot-*"))


def test_a_killed_holder_frees_its_slot(holder_and_waiter: tuple[SlotWorker, SlotWorker]) -> None:
    holder, waiter = holder_and_waiter
    holder.take()
    waiter.start_taking()
    time.sleep(0.3)
    killed = time.monotonic()
    os.kill(holder.process.pid, signal.SIGKILL)
    taken = float(waiter.taken()["at"])  # type: ignore[arg-type]
    assert killed <= taken < killed + 1.0


def test_a_waiter_wakes_within_100_ms_and_uses_under_1_percent_cpu(
    holder_and_waiter: tuple[SlotWorker, SlotWorker],
) -> None:
    holder, waiter = holder_and_waiter
    delays = []
    for attempt in range(5):
        holder.take()
        waiter.start_taking()
        time.sleep(0.1)  # into its wait
        if attempt == 0:
            before = cpu_seconds(waiter.process.pid)
            time.sleep(2.0)
            used = cpu_seconds(waiter.process.pid) - before
            assert used < 0.01 * 2.0, f"the waiter used {used * 1000:.1f} ms of CPU in 2 s"
        released = holder.release()
        delays.append(float(waiter.taken()["at"]) - released)  # type: ignore[arg-type]
        waiter.release()
    assert min(delays) >= 0
    assert statistics.median(delays) < 0.1, f"release-to-take delays (s): {delays}"


def test_a_wait_for_a_slot_stops_on_ctrl_c(
    holder_and_waiter: tuple[SlotWorker, SlotWorker],
) -> None:
    holder, waiter = holder_and_waiter
    holder.take()
    waiter.start_taking()
    time.sleep(0.2)
    sent = time.monotonic()
    waiter.process.send_signal(signal.SIGINT)
    try:
        waiter.process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pytest.fail("the wait for a compile slot did not stop on SIGINT")
    assert time.monotonic() - sent < 0.5
    assert waiter.process.returncode != 0
    assert waiter.process.stderr is not None
    assert "KeyboardInterrupt" in waiter.process.stderr.read()

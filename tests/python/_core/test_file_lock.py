"""FileLock across real processes: exclusion, a killed holder, and the
timeout error that names the holder."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import read_event, start_worker, ticking_thread

import opweave
from opweave import _core

pytestmark = pytest.mark.slow


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A lock file held by another process: yields (path, holder process)."""
    path = str(tmp_path / "k.lock")
    holder = start_worker("hold-lock", path)
    try:
        assert read_event(holder)["locked"] == holder.pid
        yield path, holder
    finally:
        holder.kill()
        holder.wait()


def test_lock_excludes_another_process(held_lock: tuple[str, subprocess.Popen[str]]) -> None:
    path, holder = held_lock
    mine = _core.FileLock(path)
    assert not mine.try_acquire()
    assert not mine.held
    assert holder.stdin is not None
    holder.stdin.close()  # the holder releases and exits
    holder.wait(timeout=10)
    assert mine.try_acquire()
    assert mine.held


def test_sigkill_of_holder_frees_the_lock_at_once(
    held_lock: tuple[str, subprocess.Popen[str]],
) -> None:
    path, holder = held_lock
    mine = _core.FileLock(path)
    assert not mine.try_acquire()
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    assert holder.returncode == -signal.SIGKILL
    # The kernel dropped the dead holder's lock: a non-blocking try succeeds,
    # with no stale-lock timeout and no manual cleanup.
    assert mine.try_acquire()


def test_timeout_names_lock_file_and_holder_pid(
    held_lock: tuple[str, subprocess.Popen[str]],
) -> None:
    path, holder = held_lock
    with pytest.raises(opweave.LockTimeout) as caught:
        _core.FileLock(path).acquire(timeout=0.2)
    error = caught.value
    assert error.lock_path == path
    assert error.holder_pid == holder.pid
    assert error.waited_seconds >= 0.2
    assert path in str(error) and str(holder.pid) in str(error)
    assert isinstance(error, TimeoutError) and isinstance(error, opweave.CacheError)


def test_waiting_releases_the_gil(held_lock: tuple[str, subprocess.Popen[str]]) -> None:
    path, _ = held_lock
    with ticking_thread() as ticks:
        before = ticks[0]
        with pytest.raises(opweave.LockTimeout):
            _core.FileLock(path).acquire(timeout=0.3)
        during = ticks[0] - before
    # The counting thread ran while the main thread waited in C++.
    assert during > 10


def test_forked_child_does_not_keep_the_lock(tmp_path: Path) -> None:
    # A child forked while the lock is held must neither believe it holds the
    # lock nor keep it held after the parent releases it.
    path = str(tmp_path / "k.lock")
    lock = _core.FileLock(path)
    lock.acquire()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then stay alive holding any inherited descriptor
        try:
            os.write(write_end, b"no" if not lock.held else b"yes")
            time.sleep(30)
        finally:
            os._exit(0)
    try:
        os.close(write_end)
        assert os.read(read_end, 3) == b"no"
        assert lock.held
        lock.release()
        # The child is alive, yet the lock is free.
        assert _core.FileLock(path).try_acquire()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read_end)


def test_lock_object_is_not_reentrant(tmp_path: Path) -> None:
    lock = _core.FileLock(str(tmp_path / "k.lock"))
    with lock:
        with pytest.raises(RuntimeError, match="not re-entrant"), lock:
            pass
        assert lock.held  # the failed inner enter did not release the outer hold
    assert not lock.held


def test_threads_sharing_one_lock_object_do_not_share_the_critical_section(
    tmp_path: Path,
) -> None:
    lock = _core.FileLock(str(tmp_path / "k.lock"))
    lock.acquire()
    errors: list[BaseException] = []

    def second() -> None:
        try:
            lock.acquire(timeout=1.0)
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=second)
    thread.start()
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)
    lock.release()

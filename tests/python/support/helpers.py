"""Helpers for tests that run child processes (see workers.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WORKERS = Path(__file__).with_name("workers.py")


def start_worker(*args: str) -> subprocess.Popen[str]:
    """Starts workers.py with `args`; its stdout yields JSON lines."""
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_event(process: subprocess.Popen[str]) -> dict[str, object]:
    """The next JSON line from a worker; fails the test if it died instead."""
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait(timeout=10)
        assert process.stderr is not None
        pytest.fail(f"worker exited ({process.returncode}): {process.stderr.read()}")
    return json.loads(line)


def finish(process: subprocess.Popen[str], timeout: float = 60) -> dict[str, object]:
    """Waits for a worker that prints one final JSON line, and returns it."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"worker failed ({process.returncode}): {err}"
    return json.loads(out.strip().splitlines()[-1])


def run_command(
    command: list[str], *, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs `command` with its output captured; fails the test on a timeout."""
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(
            f"timed out after {timeout}s: {command}\n"
            f"--- stdout ---\n{error.stdout}\n--- stderr ---\n{error.stderr}"
        )


def describe(result: subprocess.CompletedProcess[str]) -> str:
    """A completed command's status and output, for assertion messages."""
    return (
        f"exit status {result.returncode}: {result.args}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )


@contextlib.contextmanager
def ticking_thread() -> Iterator[list[int]]:
    """Runs a Python thread that counts while the block runs; yields a
    one-element list holding the count. A count that grew while the main
    thread was inside C++ shows that C++ released the GIL."""
    ticks = [0]
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    try:
        yield ticks
    finally:
        stop.set()
        thread.join()


def compiled_modules() -> list[Any]:
    """The graph modules in the current cache (precompiled preludes, which
    are entries too, left out)."""
    from opweave.link.c.cmodule import get_module_cache

    return [e for e in get_module_cache().list() if e.kind == "module"]


def module_request(source: str, job: Any = None, extra: str = "test") -> Any:
    """A plain _core.ModuleRequest: `source`, `job` (default: an empty job),
    `extra`, and nothing else (no prelude, no covered header dirs)."""
    from opweave import _core

    request = _core.ModuleRequest()
    request.source = source
    request.job = job if job is not None else _core.CompileJob()
    request.extra = extra
    return request


GRAPH_WORKER = Path(__file__).with_name("graph_worker.py")


def run_graph(
    cache: Path | str,
    graph: str,
    mode: str = "C",
    *,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> dict[str, Any]:
    """Runs graph_worker.py in a fresh process and returns its JSON report;
    fails the test (showing the output) if the process does not exit 0."""
    import os

    full_env = dict(os.environ)
    full_env.pop("OPWEAVE_FLAGS", None)
    full_env.update(env or {})
    result = run_command(
        [sys.executable, str(GRAPH_WORKER), str(cache), mode, graph], timeout=timeout, env=full_env
    )
    assert result.returncode == 0, describe(result)
    return json.loads(result.stdout.strip().splitlines()[-1])


def seconds_to_interrupt(stderr: str, sent: float) -> float:
    """How long after `sent` (time.monotonic() just before the test sent
    SIGINT) graph_worker.py caught its KeyboardInterrupt, read from the line
    it printed on `stderr`; fails the test if there is no such line."""
    from support.graph_worker import INTERRUPTED_AT

    caught = [line for line in stderr.splitlines() if line.startswith(INTERRUPTED_AT)]
    if not caught:
        pytest.fail(f"the worker reported no KeyboardInterrupt:\n{stderr}")
    return float(caught[-1].removeprefix(INTERRUPTED_AT)) - sent


def sanitize_env(compiler: str, sanitize: str, flags: str = "") -> dict[str, str]:
    """The environment of a child that runs modules built with `sanitize`
    by `compiler` (and OPWEAVE_FLAGS `flags`), from what ``python -m opweave
    sanitize-env`` prints."""
    env = {k: v for k, v in os.environ.items() if k != "OPWEAVE_FLAGS"}
    env["OPWEAVE_FLAGS"] = ",".join(f for f in (f"cxx={compiler}", flags) if f)
    result = run_command(
        [sys.executable, "-m", "opweave", "sanitize-env", "--sanitize", sanitize],
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, describe(result)
    for line in result.stdout.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = shlex.split(value)[0]
    return env

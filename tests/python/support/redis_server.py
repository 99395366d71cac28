"""A real redis-server on loopback for the scale-out tests, and the launcher
statistics they read."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A fresh redis-server on a free loopback port (no persistence); yields
    its URL and stops it afterwards."""
    binary = shutil.which("redis-server")
    assert binary, "redis-server is not installed (apt-get install redis-server)"
    port = free_port()
    server = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def ccache_stats(ccache_dir: Path) -> dict[str, int]:
    """ccache's counters for the cache in `ccache_dir`."""
    env = {**os.environ, "CCACHE_DIR": str(ccache_dir)}
    out = subprocess.run(
        ["ccache", "--print-stats"], env=env, capture_output=True, text=True, check=True
    ).stdout
    return {name: int(value) for name, value in (line.split("\t") for line in out.splitlines())}


def sccache_hits(env: dict[str, str]) -> tuple[int, int]:
    """(hits, misses) of the sccache server that `env` names."""
    out = subprocess.run(
        ["sccache", "--show-stats", "--stats-format=json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    stats = json.loads(out)["stats"]
    return sum(stats["cache_hits"]["counts"].values()), sum(
        stats["cache_misses"]["counts"].values()
    )

"""Child-process workers for the multi-process tests.

Run as ``python workers.py COMMAND ...``; each command prints JSON lines on
stdout so the parent test can follow what the child did.

- ``hold-lock PATH``: acquires a FileLock, prints {"locked": pid}, then waits
  until its stdin closes.
- ``build ROOT KEY SLEEP COUNTER``: get_or_build with a fake builder that
  appends one line to COUNTER, sleeps SLEEP seconds and writes a payload;
  prints {"outcome", "dir", "start", "end"}.
- ``build-and-hang ROOT KEY``: starts a build, prints {"building": pid} and
  hangs inside the builder (the parent kills it).
- ``read ROOT SECONDS KEYS...``: looks keys up in a loop and reads their
  payloads; prints counts of hits, misses, vanished and corrupt reads.
"""

from __future__ import annotations

import json
import os
import sys
import time

from opweave import _core


def payload_for(key: str) -> bytes:
    """The content a fake build of `key` writes: long enough to be read in
    several chunks, and checkable."""
    return (key * 4096).encode()


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def hold_lock(path: str) -> None:
    lock = _core.FileLock(path)
    lock.acquire(30.0)
    emit(locked=os.getpid())
    sys.stdin.read()
    lock.release()


def build(root: str, key: str, sleep: float, counter: str) -> None:
    cache = _core.ModuleCache(root)
    times: dict[str, float] = {}

    def builder(staging: str) -> dict[str, object]:
        times["start"] = time.time()
        with open(counter, "a") as out:
            out.write(f"{os.getpid()}\n")
        time.sleep(sleep)
        with open(os.path.join(staging, "payload"), "wb") as out:
            out.write(payload_for(key))
        times["end"] = time.time()
        return {"command": "fake", "compile_seconds": sleep}

    result = cache.get_or_build(key, builder)
    emit(outcome=result.outcome, dir=str(result.entry.dir), **times)


def build_and_hang(root: str, key: str) -> None:
    cache = _core.ModuleCache(root)

    def builder(staging: str) -> None:
        with open(os.path.join(staging, "payload"), "wb") as out:
            out.write(b"partial")
        emit(building=os.getpid(), staging=str(staging))
        time.sleep(120)

    cache.get_or_build(key, builder)


def read(root: str, seconds: float, keys: list[str]) -> None:
    cache = _core.ModuleCache(root)
    counts = {"hits": 0, "misses": 0, "vanished": 0, "corrupt": 0}
    deadline = time.time() + seconds
    while time.time() < deadline:
        for key in keys:
            entry = cache.lookup(key)
            if entry is None:
                counts["misses"] += 1
                continue
            try:
                with open(os.path.join(entry.dir, "payload"), "rb") as source:
                    data = source.read()
            except FileNotFoundError:
                counts["vanished"] += 1
                continue
            if data == payload_for(key):
                counts["hits"] += 1
            else:
                counts["corrupt"] += 1
    emit(**counts)


def main() -> None:
    command, *args = sys.argv[1:]
    if command == "hold-lock":
        hold_lock(args[0])
    elif command == "build":
        build(args[0], args[1], float(args[2]), args[3])
    elif command == "build-and-hang":
        build_and_hang(args[0], args[1])
    elif command == "read":
        read(args[0], float(args[1]), args[2:])
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()

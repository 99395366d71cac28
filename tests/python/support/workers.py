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
- ``slot ROOT SLOT_DIR JOBS``: takes and frees compile slots of a cache at
  ROOT (SLOT_DIR ``-``: the default directory) as stdin says, one command a
  line: ``take`` prints {"waiting": pid} before it waits and {"slot",
  "path", "at"} once it holds a slot; ``release`` prints {"released": at}, the time
  just before the slot was freed.
  Times are time.monotonic(), which all processes share.
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


def slot(root: str, slot_dir: str, jobs: int) -> None:
    # A wait that lasts a second is reported to the "opweave" logger. A
    # process that compiles through opweave has imported logging already;
    # import it here too, so that a measure of a waiter's CPU time counts
    # the wait and not a one-off import of logging.
    import logging

    logging.getLogger("opweave")
    cache = _core.ModuleCache(
        root, compile_jobs=jobs, slot_dir=None if slot_dir == "-" else slot_dir
    )
    held: _core.CompileSlot | None = None
    for line in sys.stdin:
        if line.strip() == "take":
            emit(waiting=os.getpid())
            held = _core.CompileSlot(cache)
            emit(slot=held.index, path=str(held.path), at=time.monotonic())
        elif line.strip() == "release" and held is not None:
            # The time is read before the slot is freed: a waiter may take
            # the slot, and read its own time, before release() returns.
            releasing = time.monotonic()
            held.release()
            emit(released=releasing)


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
    elif command == "slot":
        slot(args[0], args[1], int(args[2]))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()

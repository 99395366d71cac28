"""The remote tier across machines, with a real redis-server: hits served with
no compile, tampered, unsigned and signed entries, and a remote that is
stopped or never answers (docs/scale-out.md)."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest
from support.helpers import run_graph
from support.redis_server import free_port
from support.scale_out import compiles, flags, logging_compiler, machine

pytestmark = pytest.mark.slow


def test_remote_tier_serves_another_machine_with_no_compile(tmp_path: Path, redis_url: str) -> None:
    cxx, log = logging_compiler(tmp_path)
    env = flags(cache__remote=f"{redis_url}/0", cache__remote_secret="team", cxx=cxx)
    assert machine(tmp_path / "a", env=env)["outcomes"] == ["built"]
    assert compiles(log)  # A compiled
    report = machine(tmp_path / "b", env=env)
    assert report["outcomes"] == ["hit"]
    assert compiles(log) == []  # B ran no compiler
    assert any("fetched module" in r["message"] for r in report["logs"])
    # B's entry is a local one now: a third process hits without the remote.
    assert machine(tmp_path / "b", env=flags(cxx=cxx))["outcomes"] == ["hit"]


def tamper(redis_url: str, key: str, offset: int) -> None:
    """Flips one byte of the value stored under `key`."""
    port = int(redis_url.rsplit(":", 1)[1])
    sys.path.insert(0, str(Path(__file__).parents[2] / "python"))
    from opweave.link.c._resp import RespClient

    client = RespClient(f"redis://127.0.0.1:{port}", 2.0)
    value = bytearray(client.get(key) or b"")
    assert value
    value[offset] ^= 0xFF
    client.set(key, bytes(value))


def stored_keys(redis_url: str) -> list[str]:
    port = redis_url.rsplit(":", 1)[1]
    with socket.create_connection(("127.0.0.1", int(port)), timeout=2) as sock:
        sock.sendall(b"KEYS opweave:*\r\n")
        reply = b""
        while not reply.endswith(b"\r\n") or reply.count(b"\r\n") < 1 + 2 * int(
            reply[1 : reply.index(b"\r\n")] if b"\r\n" in reply else 0
        ):
            reply += sock.recv(65536)
    return [line.decode() for line in reply.split(b"\r\n") if line.startswith(b"opweave:")]


@pytest.mark.parametrize("where", ["library", "signature"])
def test_a_tampered_remote_entry_is_refused_with_a_secret(
    tmp_path: Path, redis_url: str, where: str
) -> None:
    env = flags(cache__remote=f"{redis_url}/0", cache__remote_secret="s3cret")
    machine(tmp_path / "a", graph="scaled:7", env=env)
    keys = stored_keys(redis_url)
    assert len(keys) == 2  # the module and the graph's record
    for key in keys:
        tamper(redis_url, key, -100 if where == "library" else 20)
    report = machine(tmp_path / "b", graph="scaled:7", env=env)
    assert report["outcomes"] == ["built"]  # refused, so built locally
    refused = [r for r in report["logs"] if "refused the remote cache's entry" in r["message"]]
    assert refused and refused[0]["level"] == "WARNING"
    assert "signature does not hold" in refused[0]["message"]


def test_an_unsigned_remote_entry_is_refused_with_a_secret(tmp_path: Path, redis_url: str) -> None:
    unsigned = flags(cache__remote=f"{redis_url}/0", cache__remote_trust_unsigned=True)
    machine(tmp_path / "a", graph="scaled:8", env=unsigned)
    env = flags(cache__remote=f"{redis_url}/0", cache__remote_secret="s3cret")
    report = machine(tmp_path / "b", graph="scaled:8", env=env)
    assert report["outcomes"] == ["built"]
    assert any("refusing unsigned entries" in r["message"] for r in report["logs"])


def test_a_signed_entry_is_served_with_the_secret_from_a_file(
    tmp_path: Path, redis_url: str
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    secret.chmod(0o600)
    env = flags(cache__remote=f"{redis_url}/0", cache__remote_secret=f"file:{secret}")
    machine(tmp_path / "a", graph="scaled:9", env=env)
    assert machine(tmp_path / "b", graph="scaled:9", env=env)["outcomes"] == ["hit"]


def test_a_stopped_remote_does_not_fail_a_call(tmp_path: Path) -> None:
    env = flags(cache__remote=f"redis://127.0.0.1:{free_port()}/0", cache__remote_secret="s")
    report = machine(tmp_path / "a", graph="scaled:3", env=env)
    warnings = [r for r in report["logs"] if r["level"] == "WARNING"]
    assert report["outcomes"] == ["built"]
    assert len(warnings) == 1 and "remote cache" in warnings[0]["message"]


def test_a_remote_that_never_answers_costs_at_most_its_timeout(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        accepted: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            server.settimeout(0.1)
            while not stop.is_set():
                try:
                    accepted.append(server.accept()[0])  # and never answer
                except OSError:
                    pass

        thread = threading.Thread(target=accept)
        thread.start()
        try:
            port = server.getsockname()[1]
            env = flags(
                cache__remote=f"redis://127.0.0.1:{port}/0",
                cache__remote_secret="s",
                cache__remote_timeout=0.5,
            )
            report = run_graph(tmp_path / "a", "scaled:5", env=env, timeout=60)
        finally:
            stop.set()
            thread.join()
            for sock in accepted:
                sock.close()
    assert report["right"] and report["outcomes"] == ["built"]
    warnings = [r for r in report["logs"] if r["level"] == "WARNING"]
    assert len(warnings) == 1 and "timed out" in warnings[0]["message"]

"""The remote tier (opweave/link/c/_remote.py, _resp.py) against servers that
misbehave and values that must not be trusted: whole-request deadlines,
capped values, redacted passwords, signatures bound to keys and secrets.

Servers are real sockets on 127.0.0.1: a real redis-server, or a tiny
Python server that never answers, dribbles, or announces a huge value.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from support.graph_worker import Scaled
from support.helpers import run_graph
from support.redis_server import redis_server

import opweave
from opweave import _core
from opweave.link.c import _entry_pack, _remote, _resp, cmodule
from opweave.tensor import dvector

Behaviour = Callable[[socket.socket, threading.Event], None]


@contextmanager
def hostile_server(behaviour: Behaviour) -> Iterator[tuple[str, list[socket.socket]]]:
    """A loopback server that runs ``behaviour`` on each connection, in a
    thread of its own; yields its URL and the connections accepted."""
    stop = threading.Event()
    accepted: list[socket.socket] = []
    threads: list[threading.Thread] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(0.05)

        def accept() -> None:
            while not stop.is_set():
                try:
                    conn = server.accept()[0]
                except OSError:
                    continue
                accepted.append(conn)
                thread = threading.Thread(target=behaviour, args=(conn, stop), daemon=True)
                threads.append(thread)
                thread.start()

        acceptor = threading.Thread(target=accept, daemon=True)
        acceptor.start()
        try:
            yield f"redis://127.0.0.1:{server.getsockname()[1]}", accepted
        finally:
            stop.set()
            acceptor.join()
            for thread in threads:
                thread.join(timeout=2)
            for conn in accepted:
                conn.close()


def silent(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait()


def dribbling(conn: socket.socket, stop: threading.Event) -> None:
    """Starts a valid answer (a bulk of 1000 bytes), then sends one byte
    every 0.3 s: each read gets something, the request never ends."""
    try:
        conn.recv(65536)
        for byte in b"$1000\r\n" + b"x" * 1000:
            conn.sendall(bytes([byte]))
            if stop.wait(0.3):
                return
    except OSError:
        return


def answering(reply: bytes) -> Behaviour:
    """A server that reads the request, sends `reply`, then nothing more."""

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        try:
            conn.recv(65536)
            conn.sendall(reply)
        except OSError:
            return
        stop.wait()

    return answer


huge = answering(b"$2147483648\r\n")  # announces a 2 GiB value
wrong_password = answering(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")


@pytest.fixture(autouse=True)
def fresh_remote_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a fresh process does: no warnings given, no
    clients, no server marked down."""
    monkeypatch.setattr(_remote, "_warned", set())
    monkeypatch.setattr(_remote, "_state", {"down_until": 0.0})
    monkeypatch.setattr(_remote, "_clients", {})


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as url:
        yield url


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


# --- the client: deadlines, caps, linear reads --------------------------------------


@pytest.mark.parametrize("behaviour", [silent, dribbling], ids=["silent", "dribbling"])
def test_a_request_ends_within_its_timeout_whatever_the_server_sends(
    behaviour: Behaviour,
) -> None:
    with hostile_server(behaviour) as (url, _):
        client = _resp.RespClient(url, 1.0)
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="timed out"):
            client.get("k")
        elapsed = time.monotonic() - start
    assert 0.9 <= elapsed < 2.0, elapsed


def test_a_value_over_the_cap_is_refused_from_its_length_unread() -> None:
    with hostile_server(huge) as (url, _):
        client = _resp.RespClient(url, 5.0, max_value=1 << 20)
        start = time.monotonic()
        with pytest.raises(_resp.RespTooLarge, match="2147483648 bytes"):
            client.get("k")
        assert time.monotonic() - start < 2.0  # did not wait for the value


@pytest.mark.parametrize("line", [b"$-5\r\n", b"$abc\r\n", b"?what\r\n", b"+" * 70000])
def test_answers_that_are_not_resp_are_refused(line: bytes) -> None:
    with hostile_server(answering(line)) as (url, _):
        with pytest.raises(_resp.RespError, match="not a RESP answer"):
            _resp.RespClient(url, 5.0).get("k")


class ChunkySocket:
    """A socket whose reads return at most 4 KiB of a bulk answer."""

    def __init__(self, value: bytes) -> None:
        self.data = memoryview(b"$%d\r\n" % len(value) + value + b"\r\n")
        self.at = 0

    def settimeout(self, timeout: float) -> None:
        pass

    def sendall(self, data: bytes) -> None:
        pass

    def recv(self, size: int) -> bytes:
        chunk = bytes(self.data[self.at : self.at + min(size, 4096)])
        self.at += len(chunk)
        return chunk

    def close(self) -> None:
        pass


def test_a_large_value_is_read_in_linear_time() -> None:
    value = bytes(range(256)) * (64 * 4096)  # 64 MiB in 16384 reads
    client = _resp.RespClient("redis://127.0.0.1:1", 60.0)
    client._sock = ChunkySocket(value)  # type: ignore[assignment]
    start = time.monotonic()
    assert client.get("k") == value
    # Copying the buffer on every read would copy ~512 GiB.
    assert time.monotonic() - start < 10.0


# --- passwords --------------------------------------------------------------------


def test_redact_hides_passwords() -> None:
    assert _resp.redact("redis://user:s3cr3t@host:6379/0") == "redis://user:***@host:6379/0"
    assert _resp.redact("rediss://:s3cr3t@host/1") == "rediss://:***@host/1"
    assert _resp.redact("redis://host:6379/0") == "redis://host:6379/0"
    assert "s3cr3t" not in _resp.redact("unix://:s3cr3t@/run/redis.sock?db=2")


def test_no_message_shows_the_password(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "opweave")
    with pytest.raises(ValueError) as raised:
        _resp.RespClient("http://user:topsecret@host/0", 1.0)
    assert "topsecret" not in str(raised.value)
    with pytest.raises(ValueError) as raised:
        opweave.config.cache__remote = "http://user:topsecret@host/0"
    assert "topsecret" not in str(raised.value)
    with hostile_server(wrong_password) as (url, _):
        bad = url.replace("redis://", "redis://user:topsecret@")
        with pytest.raises(_resp.RespError) as refused:
            _resp.RespClient(bad, 1.0).get("k")
        assert "topsecret" not in str(refused.value)
        with opweave.config.change_flags(cache__remote=bad, cache__remote_secret="s"):
            assert not fetch(cmodule.get_module_cache(), "0" * 64)
    with hostile_server(silent) as (url, _):
        bad = url.replace("redis://", "redis://user:topsecret@") + "/0"
        flags = {"cache__remote": bad, "cache__remote_timeout": 0.3}
        with opweave.config.change_flags(**flags, cache__remote_trust_unsigned=True):
            _remote._state["down_until"] = 0.0
            assert not fetch(cmodule.get_module_cache(), "0" * 64)
    messages = [r.getMessage() for r in caplog.records]
    assert any("WRONGPASS" in m and "user:***@" in m for m in messages), messages
    assert any("timed out" in m for m in messages), messages
    assert not any("topsecret" in m for m in messages), messages


# --- what is loaded ------------------------------------------------------------------


def built_entry(constant: int) -> _core.Entry:
    """The entry of a graph z = x * constant, built in the test's cache."""
    cache = cmodule.get_module_cache()
    before = {e.key for e in cache.list() if e.kind == "module"}
    x = dvector("x")
    f = opweave.function([x], Scaled(constant)(x))
    assert f(np.ones(2))[0] == constant
    [key] = {e.key for e in cache.list() if e.kind == "module"} - before
    entry = cache.lookup(key)
    assert entry is not None
    return entry


def pack_of(entry: _core.Entry) -> bytes:
    pack = cmodule.get_module_cache().export_entry(entry.key)
    assert pack is not None
    return pack


def store(entry: _core.Entry) -> None:
    """What build_module does after it builds ``entry``'s module."""
    storage = _remote.storage()
    assert storage is not None
    storage.put(entry.key, pack_of(entry))


def fetch(cache: _core.ModuleCache, key: str) -> bool:
    """What build_module does on a miss of ``key`` in ``cache``: the remote's
    pack, adopted once its signature holds and it verifies."""
    storage = _remote.storage()
    pack = None if storage is None else storage.get(key)
    if pack is None:
        return False
    return cache.adopt(key, pack).outcome == "built"


def other_cache(tmp_path: Path, name: str) -> _core.ModuleCache:
    return _core.ModuleCache(tmp_path / name)


def raw(url: str) -> _resp.RespClient:
    return _resp.RespClient(url, 5.0)


def test_a_signed_value_moved_to_another_key_is_refused(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = built_entry(3), built_entry(4)
    with opweave.config.change_flags(cache__remote=redis_url, cache__remote_secret="team"):
        store(first)
        store(second)
        # The attacker can write to the server but holds no secret.
        stolen = raw(redis_url).get(_remote.remote_name(first.key))
        assert stolen is not None
        raw(redis_url).set(_remote.remote_name(second.key), stolen)
        b = other_cache(tmp_path, "b")
        assert fetch(b, first.key)
        assert not fetch(b, second.key)
    assert b.lookup(first.key) is not None and b.lookup(second.key) is None
    [warning] = warnings_of(caplog)
    assert "signature does not hold" in warning and second.key[:16] in warning


def test_without_a_secret_the_remote_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = built_entry(5)
    with hostile_server(silent) as (url, accepted):
        with opweave.config.change_flags(cache__remote=url):
            store(entry)
            assert not fetch(other_cache(tmp_path, "b"), entry.key)
            assert not fetch(other_cache(tmp_path, "c"), entry.key)
        assert accepted == []  # never asked
    [warning] = warnings_of(caplog)
    assert "cache__remote_secret is not set" in warning
    assert "cache__remote_trust_unsigned" in warning


def test_unsigned_values_are_refused_with_a_secret_and_one_warning_says_why(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # As after an upgrade: entries stored unsigned by an older opweave.
    entries = [built_entry(6), built_entry(7)]
    for entry in entries:
        raw(redis_url).set(_remote.remote_name(entry.key), pack_of(entry))
    with opweave.config.change_flags(cache__remote=redis_url, cache__remote_secret="team"):
        for entry in entries:
            assert not fetch(other_cache(tmp_path, "b"), entry.key)
    [warning] = warnings_of(caplog)
    assert "refusing unsigned entries" in warning
    assert "older opweave" in warning and "cache__remote_secret" in warning
    assert other_cache(tmp_path, "b").list() == []


def test_trusting_unsigned_values_is_an_explicit_choice_warned_once(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    entry = built_entry(7)
    flags = {"cache__remote": redis_url, "cache__remote_trust_unsigned": True}
    with opweave.config.change_flags(**flags):
        store(entry)
        stored = raw(redis_url).get(_remote.remote_name(entry.key))
        assert stored is not None and not _entry_pack.is_signed(stored)
        assert fetch(other_cache(tmp_path, "b"), entry.key)
        assert fetch(other_cache(tmp_path, "c"), entry.key)
    [warning] = warnings_of(caplog)
    assert "anyone who can write to that server can run code" in warning


def test_two_secrets_are_accepted_while_rotating(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    old, new = built_entry(8), built_entry(9)
    with opweave.config.change_flags(cache__remote=redis_url, cache__remote_secret="old"):
        store(old)
    rotating = {"cache__remote_secret": "new", "cache__remote_secret_previous": "old"}
    with opweave.config.change_flags(cache__remote=redis_url, **rotating):
        assert fetch(other_cache(tmp_path, "b"), old.key)
        store(new)  # signed with the new secret only
    stored = raw(redis_url).get(_remote.remote_name(new.key))
    assert stored is not None
    _entry_pack.unsign(stored, b"new", "remote entry", new.key)
    with pytest.raises(_entry_pack.SignatureError):
        _entry_pack.unsign(stored, b"old", "remote entry", new.key)
    assert warnings_of(caplog) == []
    with opweave.config.change_flags(cache__remote=redis_url, cache__remote_secret="new"):
        assert not fetch(other_cache(tmp_path, "c"), old.key)  # retired
        assert fetch(other_cache(tmp_path, "c"), new.key)


def test_a_value_over_the_cap_is_a_miss_warned_once(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    entry = built_entry(10)
    flags = {"cache__remote": redis_url, "cache__remote_secret": "team"}
    with opweave.config.change_flags(**flags):
        store(entry)
        with opweave.config.change_flags(cache__remote_max_entry="1K"):
            assert not fetch(other_cache(tmp_path, "b"), entry.key)
            assert not fetch(other_cache(tmp_path, "c"), entry.key)
        assert fetch(other_cache(tmp_path, "d"), entry.key)  # not marked down
    [warning] = warnings_of(caplog)
    assert "more than cache__remote_max_entry (1024 bytes)" in warning


@pytest.mark.slow
def test_a_dribbling_server_does_not_stall_function(tmp_path: Path) -> None:
    start = time.monotonic()
    run_graph(tmp_path / "cold", "scaled:11", timeout=120)
    cold = time.monotonic() - start
    with hostile_server(dribbling) as (url, accepted):
        flags = f"cache__remote={url}/0,cache__remote_secret=team,cache__remote_timeout=1"
        start = time.monotonic()
        report = run_graph(tmp_path / "a", "scaled:11", env={"OPWEAVE_FLAGS": flags}, timeout=120)
        elapsed = time.monotonic() - start
        connections = len(accepted)
    assert report["right"] and report["outcomes"] == ["built"]
    assert elapsed < cold + 1.0 + 2.0, (elapsed, cold)
    warnings = [r["message"] for r in report["logs"] if r["level"] == "WARNING"]
    assert len(warnings) == 1 and "timed out" in warnings[0], warnings
    assert connections == 1  # not asked again (the upload after the build) for a minute

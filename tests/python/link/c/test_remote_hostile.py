"""The remote tier's client (opweave/link/c/_remote.py, _resp.py) against
servers that misbehave: whole-request deadlines, capped values, redacted
passwords (test_remote_trust.py: what it loads).

Servers are real sockets on 127.0.0.1: a real redis-server, or a tiny
Python server that never answers, dribbles, or announces a huge value
(support/hostile_server.py).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from support.helpers import run_graph
from support.hostile_server import (
    Behaviour,
    answering,
    dribbling,
    hostile_server,
    huge,
    silent,
    wrong_password,
)
from support.remote_entries import fetch, fresh_remote_state

import opweave
from opweave.link.c import _resp, cmodule
from opweave.link.c._context import CONTEXT

pytestmark = pytest.mark.usefixtures("fresh_remote_state")
_ = fresh_remote_state  # the fixture, for pytest to find


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
            CONTEXT.remote_down_until = 0.0
            assert not fetch(cmodule.get_module_cache(), "0" * 64)
    messages = [r.getMessage() for r in caplog.records]
    assert any("WRONGPASS" in m and "user:***@" in m for m in messages), messages
    assert any("timed out" in m for m in messages), messages
    assert not any("topsecret" in m for m in messages), messages


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

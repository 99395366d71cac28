"""What the remote tier loads (opweave/link/c/_remote.py): entries signed
with the configured secret for their very key, unsigned ones only by the
user's explicit choice (cache__remote_trust_unsigned: one rule, the same as
docs/scale-out.md's), never through a secret file another user could read,
write or hold open."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from support.graph_worker import Scaled
from support.hostile_server import hostile_server, silent
from support.remote_entries import (
    built_entry,
    fetch,
    fresh_remote_state,
    other_cache,
    pack_of,
    raw,
    store,
    warnings_of,
)

import opweave
from opweave.link.c import _entry_pack, _remote
from opweave.tensor import dvector

pytestmark = pytest.mark.usefixtures("fresh_remote_state")
_ = fresh_remote_state  # the fixture, for pytest to find


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


def test_with_a_secret_and_trust_unsigned_unsigned_values_load_and_signed_ones_verify(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The one rule of cache__remote_trust_unsigned (docs/scale-out.md): a
    fleet moving to a secret loads the unsigned entries stored before it,
    and a signed entry must still verify."""
    unsigned, forged, signed = built_entry(11), built_entry(12), built_entry(13)
    raw(redis_url).set(_remote.remote_name(unsigned.key), pack_of(unsigned))
    with opweave.config.change_flags(cache__remote=redis_url, cache__remote_secret="other"):
        store(forged)  # signed with a secret this fleet does not have
    flags = {"cache__remote": redis_url, "cache__remote_trust_unsigned": True}
    with opweave.config.change_flags(**flags, cache__remote_secret="team"):
        store(signed)
        b = other_cache(tmp_path, "b")
        assert fetch(b, unsigned.key)
        assert not fetch(b, forged.key)
        assert fetch(b, signed.key)
    stored = raw(redis_url).get(_remote.remote_name(signed.key))
    assert stored is not None and _entry_pack.is_signed(stored)
    assert {e.key for e in b.list()} == {unsigned.key, signed.key}
    warnings = warnings_of(caplog)
    assert any("anyone who can write to that server can run code" in w for w in warnings)
    assert any("signature does not hold" in w and forged.key[:16] in w for w in warnings)


def test_a_secret_file_that_is_a_fifo_turns_the_remote_off_without_blocking(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    fifo = tmp_path / "secret"
    os.mkfifo(fifo, 0o600)
    flags = {"cache__remote": redis_url, "cache__remote_secret": f"file:{fifo}"}
    with opweave.config.change_flags(**flags):
        x = dvector("x")
        f = opweave.function([x], Scaled(14)(x))
        assert f(np.ones(2))[0] == 14
    key = Path(f.library).parent.name
    assert raw(redis_url).get(_remote.remote_name(key)) is None  # not stored
    [warning] = warnings_of(caplog)
    assert "not using the remote cache" in warning and "not a regular file" in warning


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

"""Cache entries through the remote tier, as build_module moves them (for
the tests of link/c/_remote.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import opweave
from opweave import _core
from opweave.link.c import _remote, _resp, cmodule
from opweave.link.c._context import CONTEXT
from opweave.tensor import dvector
from support.graph_worker import Scaled


@pytest.fixture
def fresh_remote_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a fresh process does: no warnings given, no
    clients, no server marked down."""
    monkeypatch.setattr(CONTEXT, "remote_warned", set())
    monkeypatch.setattr(CONTEXT, "remote_down_until", 0.0)
    monkeypatch.setattr(CONTEXT, "remote_clients", {})


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The messages of the WARNINGs (and worse) logged."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


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

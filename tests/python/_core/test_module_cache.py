"""ModuleCache through the bindings: metadata, listing, pruning and the
permission rules of the cache root.

The case of a root owned by another user runs as root (as CI does), with a
second user (the ``other_user`` fixture, conftest.py). Elsewhere it is
skipped, or fails if ``OPWEAVE_REQUIRE_SECOND_USER=1`` is set, as ``.ci/run``
does (support/second_user.py)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import opweave
from opweave import _core


def write_payload(size: int) -> Callable[[str], dict[str, object]]:
    def build(staging: str) -> dict[str, object]:
        (Path(staging) / "payload").write_bytes(b"x" * size)
        return {
            "kind": "test",
            "label": "payload",
            "key_material": "material",
            "command": "fake-cc",
            "compile_seconds": 0.5,
        }

    return build


def test_entry_metadata_is_versioned_json(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    result = cache.get_or_build("a" * 16, write_payload(10))
    assert result.outcome == "built"
    entry = Path(result.entry.dir)
    assert entry == tmp_path.resolve() / "cache" / "v2" / "entries" / "aa" / ("a" * 16)
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["format"] == 2
    assert meta["key"] == "a" * 16
    assert (meta["kind"], meta["label"]) == ("test", "payload")
    assert meta["key_material"] == "material"
    assert meta["command"] == "fake-cc"
    assert meta["compile_seconds"] == 0.5
    assert meta["created"] > 0
    assert meta["files"] == [["payload", 10, hashlib.sha256(b"x" * 10).hexdigest()]]
    assert meta["headers"] == ""  # no headers: one line per header
    [listed] = cache.list()
    assert listed.key == "a" * 16 and listed.size_bytes >= 10 and listed.kind == "test"
    assert cache.stats().entries == 1


def age_entry(cache: _core.ModuleCache, key: str, seconds: float) -> None:
    """Makes an entry look last used `seconds` ago (its directory's mtime)."""
    entry = cache.entry_dir(key)
    when = time.time() - seconds
    os.utime(entry, (when, when))


def test_prune_by_size_keeps_the_most_recently_used(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    for name in "abc":
        cache.get_or_build(name * 16, write_payload(4000))
    for name, age in (("a", 0), ("b", 300), ("c", 200)):
        age_entry(cache, name * 16, age)
    result = cache.prune(max_total_bytes=6000)
    assert result.removed == 2
    assert [entry.key for entry in cache.list()] == ["a" * 16]


def test_a_hit_refreshes_the_last_use_time_without_rewriting_files(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    cache.get_or_build("a" * 16, write_payload(10))
    age_entry(cache, "a" * 16, 3600)
    meta = Path(cache.entry_dir("a" * 16)) / "meta.json"
    before = meta.stat()
    assert cache.get_or_build("a" * 16, write_payload(10)).outcome == "hit"
    [listed] = cache.list()
    assert time.time() - listed.last_used < 60
    after = meta.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_size_limit_evicts_least_recently_used_after_each_build(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"), max_total_bytes=10_000)
    for name in "abcd":
        cache.get_or_build(name * 16, write_payload(2500))
        age_entry(cache, name * 16, 100)  # older than the next one
    # Each entry is 2500 bytes plus its metadata: three fit, four do not.
    assert [e.key for e in cache.list()] == [name * 16 for name in "bcd"]
    assert cache.get_or_build("e" * 16, write_payload(2500)).outcome == "built"
    assert [e.key for e in cache.list()] == [name * 16 for name in "cde"]
    assert cache.stats().total_bytes <= 10_000
    cache.flush_counters()
    assert cache.stats().counters.evictions == 2


def test_root_writable_by_others_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(opweave.CacheError, match="writable by other users") as caught:
        _core.ModuleCache(str(root))
    assert "chmod go-w" in str(caught.value)
    root.chmod(0o770)
    with pytest.raises(opweave.CacheError):
        _core.ModuleCache(str(root))
    root.chmod(0o755)
    assert _core.ModuleCache(str(root)).root == root.resolve()


def test_new_root_is_private(tmp_path: Path) -> None:
    root = tmp_path / "fresh" / "cache"
    _core.ModuleCache(str(root))
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert (root / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172")


def test_root_owned_by_another_user_is_refused(tmp_path: Path, other_user: tuple[int, int]) -> None:
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    os.chown(root, *other_user)
    with pytest.raises(opweave.CacheError, match=f"owned by uid {other_user[0]}"):
        _core.ModuleCache(str(root))


def test_default_root_follows_xdg(isolated_cache: Path) -> None:
    assert _core.ModuleCache.default_root() == isolated_cache
    assert opweave.config.compiledir == str(isolated_cache)


def test_cache_keeps_working_after_its_root_is_deleted(tmp_path: Path) -> None:
    import shutil

    cache = _core.ModuleCache(str(tmp_path / "cache"))
    cache.get_or_build("a" * 16, write_payload(1))
    shutil.rmtree(tmp_path / "cache")
    result = cache.get_or_build("b" * 16, write_payload(1))
    assert result.outcome == "built"
    assert (Path(result.entry.dir) / "payload").exists()

"""ModuleCache through the bindings: metadata, listing, pruning and the
permission rules of the cache root."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

import opweave
from opweave import _core


def write_payload(size: int) -> Callable[[str], dict[str, object]]:
    def build(staging: str) -> dict[str, object]:
        (Path(staging) / "payload").write_bytes(b"x" * size)
        return {"key_material": "material", "command": "fake-cc", "compile_seconds": 0.5}

    return build


def test_entry_metadata_is_versioned_json(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    entry, outcome = cache.get_or_build("a" * 16, write_payload(10))
    assert outcome == "built"
    meta = json.loads((Path(entry) / "meta.json").read_text())
    assert meta["format"] == 1
    assert meta["key"] == "a" * 16
    assert meta["key_material"] == "material"
    assert meta["command"] == "fake-cc"
    assert meta["compile_seconds"] == 0.5
    assert meta["created"] == meta["last_used"] > 0
    [listed] = cache.list()
    assert listed["key"] == "a" * 16 and listed["size_bytes"] >= 10
    assert cache.stats()["entries"] == 1


def test_prune_by_size_keeps_the_most_recently_used(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    for name in "abc":
        cache.get_or_build(name * 16, write_payload(4000))
    # Make "a" the most recently used by editing its last-used time.
    for name, age in (("a", 0), ("b", 300), ("c", 200)):
        meta_path = Path(cache.entry_dir(name * 16)) / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["last_used"] -= age
        meta["created"] -= 400
        meta_path.write_text(json.dumps(meta))
    result = cache.prune(max_total_bytes=6000)
    assert result["removed"] == 2
    assert [entry["key"] for entry in cache.list()] == ["a" * 16]


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
    assert _core.ModuleCache(str(root)).root == root


def test_new_root_is_private(tmp_path: Path) -> None:
    root = tmp_path / "fresh" / "cache"
    _core.ModuleCache(str(root))
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert (root / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_root_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    with pytest.raises(opweave.CacheError, match="owned by uid 65534"):
        _core.ModuleCache(str(root))


def test_default_root_follows_xdg(isolated_cache: Path) -> None:
    assert _core.ModuleCache.default_root() == isolated_cache
    assert opweave.config.compiledir == str(isolated_cache)


def test_cache_keeps_working_after_its_root_is_deleted(tmp_path: Path) -> None:
    import shutil

    cache = _core.ModuleCache(str(tmp_path / "cache"))
    cache.get_or_build("a" * 16, write_payload(1))
    shutil.rmtree(tmp_path / "cache")
    entry, outcome = cache.get_or_build("b" * 16, write_payload(1))
    assert outcome == "built"
    assert (Path(entry) / "payload").exists()

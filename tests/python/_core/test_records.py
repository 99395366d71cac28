"""The cache's records (ModuleCache.read_record and its kin): small pieces of
derived state (graph records, -march=native expansions) that the core keeps
beside its entries, with the checks of its own files, so that Python never
opens a path below a cache root."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from opweave import _core

NAME = "abcdef0123456789"


def record_path(root: Path, kind: str = "graphs", name: str = NAME) -> Path:
    return root / "v2" / "records" / kind / name[:2] / name


def test_a_record_is_written_whole_private_and_read_back(tmp_path: Path) -> None:
    cache = _core.ModuleCache(tmp_path)
    assert cache.read_record("graphs", NAME) is None
    assert cache.write_record("graphs", NAME, b"data\x00\xff")
    assert cache.read_record("graphs", NAME) == b"data\x00\xff"
    assert cache.record_names("graphs") == [NAME] and cache.record_names("march") == []
    path = record_path(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert cache.write_record("graphs", NAME, b"newer")  # the last writer wins
    assert cache.read_record("graphs", NAME) == b"newer"
    assert cache.remove_record("graphs", NAME) and not cache.remove_record("graphs", NAME)
    assert cache.read_record("graphs", NAME) is None


@pytest.mark.parametrize(
    ("kind", "name"),
    [("Graphs", NAME), ("gr/aphs", NAME), ("", NAME), ("graphs", "../../etc"), ("graphs", "a")],
)
def test_a_bad_kind_or_name_is_a_value_error(tmp_path: Path, kind: str, name: str) -> None:
    cache = _core.ModuleCache(tmp_path)
    for call in (
        lambda: cache.read_record(kind, name),
        lambda: cache.write_record(kind, name, b""),
        lambda: cache.remove_record(kind, name),
    ):
        with pytest.raises(ValueError, match="invalid record"):
            call()


@pytest.mark.parametrize("damage", ["truncated", "appended", "garbage", "empty"])
def test_a_damaged_record_is_a_miss_and_removed(tmp_path: Path, damage: str) -> None:
    cache = _core.ModuleCache(tmp_path)
    cache.write_record("graphs", NAME, b"the record's data")
    path = record_path(tmp_path)
    sealed = path.read_bytes()
    changed = {
        "truncated": sealed[:-3],
        "appended": sealed + b"x",
        "garbage": os.urandom(len(sealed)),
        "empty": b"",
    }[damage]
    path.write_bytes(changed)
    assert cache.read_record("graphs", NAME) is None
    assert not path.exists()


def test_an_untrusted_record_is_a_miss_and_left_alone(tmp_path: Path) -> None:
    cache = _core.ModuleCache(tmp_path)
    cache.write_record("graphs", NAME, b"data")
    path = record_path(tmp_path)
    path.chmod(0o666)
    assert cache.read_record("graphs", NAME) is None and path.exists()
    path.chmod(0o600)
    path.parent.chmod(0o777)
    assert cache.read_record("graphs", NAME) is None
    path.parent.chmod(0o700)
    assert cache.read_record("graphs", NAME) == b"data"


def test_a_symlink_or_a_fifo_in_place_of_a_record_is_never_followed(tmp_path: Path) -> None:
    cache = _core.ModuleCache(tmp_path)
    cache.write_record("graphs", NAME, b"data")
    path = record_path(tmp_path)
    target = tmp_path / "elsewhere"
    target.write_bytes(path.read_bytes())
    target.chmod(0o600)
    path.unlink()
    path.symlink_to(target)
    assert cache.read_record("graphs", NAME) is None
    path.unlink()
    os.mkfifo(path, 0o600)
    start = time.monotonic()
    assert cache.read_record("graphs", NAME) is None  # no open of the FIFO, no wait
    assert time.monotonic() - start < 5
    shard = path.parent
    path.unlink()
    shard.rmdir()
    shard.symlink_to(tmp_path)  # a directory on the way replaced by a link
    assert cache.read_record("graphs", NAME) is None


def test_a_record_of_another_user_is_never_read(
    tmp_path: Path, as_root: None, other_user: tuple[int, int]
) -> None:
    cache = _core.ModuleCache(tmp_path)
    cache.write_record("graphs", NAME, b"data")
    os.chown(record_path(tmp_path), *other_user)
    assert cache.read_record("graphs", NAME) is None


def test_records_are_read_from_read_only_layers_and_never_written_there(tmp_path: Path) -> None:
    shared = _core.ModuleCache(tmp_path / "shared")
    shared.write_record("graphs", NAME, b"from the layer")
    layered = _core.ModuleCache(tmp_path / "own", shared_roots=[str(tmp_path / "shared")])
    assert layered.read_record("graphs", NAME) == b"from the layer"
    assert layered.record_names("graphs") == []  # its own records only
    read_only = _core.ModuleCache(tmp_path / "shared", read_only=True)
    assert read_only.read_record("graphs", NAME) == b"from the layer"
    assert not read_only.write_record("graphs", NAME, b"x")
    assert not read_only.remove_record("graphs", NAME)
    assert shared.read_record("graphs", NAME) == b"from the layer"


def test_clear_removes_the_records_and_sweep_what_killed_writers_left(tmp_path: Path) -> None:
    cache = _core.ModuleCache(tmp_path)
    cache.write_record("graphs", NAME, b"data")
    shard = record_path(tmp_path).parent
    stale, young = shard / f".{NAME}.tmp.old", shard / f".{NAME}.tmp.new"
    for left in (stale, young):
        left.write_text("left by a killed writer")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    cache.sweep()
    assert not stale.exists() and young.exists()
    assert cache.read_record("graphs", NAME) == b"data"
    cache.clear()
    assert cache.record_names("graphs") == [] and cache.read_record("graphs", NAME) is None


def test_the_second_user_is_the_system_user_the_readme_names(other_user: tuple[int, int]) -> None:
    """README: run as root, the suite creates `opweave-other`, a system
    user without a home or a login shell."""
    import pwd

    entry = pwd.getpwuid(other_user[0])
    assert entry.pw_name == "opweave-other" and entry.pw_shell == "/usr/sbin/nologin"
    assert not os.path.isdir(entry.pw_dir) or entry.pw_dir in ("/", "/nonexistent")

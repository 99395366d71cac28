"""Nothing read below a root the core refuses, nothing foreign run: the
-march=native expansion (link/c/_march.py) never comes from a file planted
in a compile dir that others can write, in another user's, in a read-only
layer of an owner nobody named, or behind a symlink below a root; it is
found again in memory, and holds only machine flags. (The audit hook of
conftest.py fails each test if opweave's Python code opens a file below a
cache root at all.)"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import opweave
from opweave import _core
from opweave.configparser import config
from opweave.link.c import _march, cmodule

PLANTED = "-march=x86-64\n-include/tmp/opweave-planted.h\n"


@pytest.fixture(autouse=True)
def fresh_expansion() -> Iterator[None]:
    """Each test finds the flags anew, and leaves no memory of them."""
    _march.expand_native.cache_clear()
    yield
    _march.expand_native.cache_clear()


def record_name() -> str:
    """The name the expansion of this compiler and CPU is kept under."""
    compiler = cmodule.get_compiler()
    named = f"{_march._MEMO_FORMAT}\n{compiler.key_material()}\n{_march._cpu_signature()}"
    return hashlib.sha256(named.encode()).hexdigest()[:32]


def plant(root: Path, name: str) -> None:
    """Files an attacker who can write ``root`` leaves there: the old memo's
    place, and a record in the layout, sealed as the core seals it."""
    (root / "march").mkdir(parents=True, exist_ok=True)
    (root / "march" / name).write_text(PLANTED)
    shard = root / "v2" / "records" / "march" / name[:2]
    shard.mkdir(parents=True, exist_ok=True)
    data = PLANTED.encode()
    seal = f"OPWEAVE-RECORD 1 {hashlib.sha256(data).hexdigest()}\n".encode()
    (shard / name).write_bytes(seal + data)


def expanded(compiledir: Path, **flags: object) -> list[str]:
    with config.change_flags(compiledir=str(compiledir), cmodule__march="native", **flags):
        return _march.march_flags(cmodule.get_compiler())


def assert_machine_flags_only(flags: list[str]) -> None:
    assert flags and flags[0].startswith("-march=") and flags[0] != "-march=native"
    assert all(_march._MACHINE_FLAG.fullmatch(flag) for flag in flags), flags
    assert not any("include" in flag or "planted" in flag for flag in flags)


@pytest.mark.parametrize("open_to_all", ["parent", "root"])
def test_a_compile_dir_others_can_write_is_never_read(tmp_path: Path, open_to_all: str) -> None:
    parent = tmp_path / "shared"
    root = parent / "cache"
    root.mkdir(parents=True)
    plant(root, record_name())
    (parent if open_to_all == "parent" else root).chmod(0o777)  # writable by all, not sticky
    with pytest.raises(opweave.CacheError):
        _core.ModuleCache(str(root))  # the core refuses it
    assert_machine_flags_only(expanded(root))
    assert (root / "v2" / "records" / "march" / record_name()[:2] / record_name()).exists()


def test_another_users_compile_dir_is_never_read(
    tmp_path: Path, as_root: None, other_user: tuple[int, int]
) -> None:
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    plant(root, record_name())
    for path in [root, *root.rglob("*")]:
        os.chown(path, *other_user)
    assert_machine_flags_only(expanded(root))


def test_a_read_only_layer_of_an_unnamed_owner_is_never_read(
    tmp_path: Path, as_root: None, other_user: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    layer = tmp_path / "layer"
    layer.mkdir(mode=0o755)
    plant(layer, record_name())
    for path in [layer, *layer.rglob("*")]:
        os.chown(path, *other_user)
    with caplog.at_level(logging.WARNING, "opweave"):
        flags = expanded(tmp_path / "own", cache__shared_dirs=str(layer))
    assert_machine_flags_only(flags)
    assert any("not using the read-only cache" in r.getMessage() for r in caplog.records)


def test_a_symlink_below_the_root_is_never_followed(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    elsewhere = tmp_path / "elsewhere"
    plant(elsewhere, record_name())
    _core.ModuleCache(str(root))  # a root the core trusts
    records = root / "v2" / "records"
    records.mkdir(parents=True, exist_ok=True)
    (records / "march").symlink_to(elsewhere / "v2" / "records" / "march")
    assert_machine_flags_only(expanded(root))
    shard = elsewhere / "v2" / "records" / "march" / record_name()[:2]
    assert (shard / record_name()).read_text().endswith(PLANTED)  # left as it was


def test_a_planted_record_in_a_trusted_root_holds_no_foreign_flag(tmp_path: Path) -> None:
    """The user's own cache (another process of theirs, a stale format):
    a record with anything but machine flags is ignored and replaced."""
    root = tmp_path / "cache"
    _core.ModuleCache(str(root))
    plant(root, record_name())
    assert_machine_flags_only(expanded(root))
    kept = _core.ModuleCache(str(root)).read_record("march", record_name())
    assert kept is not None and b"include" not in kept

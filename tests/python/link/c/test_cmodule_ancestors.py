"""Whose directories a cache may sit in, through ``opweave.function`` in fresh
processes: every directory above a cache root is checked as ssh's StrictModes
checks a path (owned by this user, root or the shared owner the user named;
writable by others only when sticky), and a read-only cache is trusted when
it belongs to this user, root or that named owner, never to whoever happens
to own it.

Cases with another user's files run as root (the ``other_user`` fixture);
elsewhere they are skipped, or fail if ``OPWEAVE_REQUIRE_SECOND_USER=1`` is
set, as ``.ci/run`` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.helpers import run_graph
from support.second_user import OTHER_USER

import opweave


def warnings_of(report: dict) -> list[str]:
    return [r["message"] for r in report["logs"] if r["level"] == "WARNING"]


def flags(**options: object) -> dict[str, str]:
    return {"OPWEAVE_FLAGS": ",".join(f"{k}={v}" for k, v in options.items())}


def give(path: Path, owner: tuple[int, int]) -> None:
    for item in [path, *path.rglob("*")]:
        os.chown(item, *owner, follow_symlinks=False)


def test_a_root_below_a_directory_others_can_write_is_not_used(tmp_path: Path) -> None:
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)
    root = parent / "mine" / "cache"
    report = run_graph(root, "vtv:1")
    assert report["right"] and report["outcomes"] == ["built"]
    [warning] = warnings_of(report)
    assert "cannot trust the cache directory" in warning
    assert f"{parent} is writable by group or others" in warning
    assert "chmod go-w" in warning and "private directory" in warning
    assert not (root / "v2").exists()  # nothing was built there
    # Sticky, as /tmp is: others cannot rename or remove what is ours.
    parent.chmod(0o1777)
    report = run_graph(root, "vtv:1")
    assert report["outcomes"] == ["built"] and warnings_of(report) == []
    assert run_graph(root, "vtv:1")["outcomes"] == ["hit"]


def test_a_root_below_another_users_directory_needs_them_named(
    tmp_path: Path, other_user: tuple[int, int]
) -> None:
    theirs = tmp_path / "theirs"
    (theirs / "mine").mkdir(parents=True)
    os.chown(theirs, *other_user)
    root = theirs / "mine" / "cache"
    report = run_graph(root, "vtv:1")
    assert report["right"] and report["outcomes"] == ["built"]
    [warning] = warnings_of(report)
    assert f"{theirs} is owned by uid {other_user[0]}" in warning
    assert "cache__shared_owner" in warning
    assert not (root / "v2").exists()
    named = flags(cache__shared_owner=OTHER_USER)
    assert run_graph(root, "vtv:1", env=named)["outcomes"] == ["built"]
    assert run_graph(root, "vtv:1", env=named)["outcomes"] == ["hit"]


def test_a_read_only_cache_is_trusted_only_with_its_owner_named(
    tmp_path: Path, other_user: tuple[int, int]
) -> None:
    shared = tmp_path / "shared"
    run_graph(shared, "vtv:1")
    give(shared, other_user)
    layer = flags(cache__shared_dirs=shared)
    report = run_graph(tmp_path / "a", "vtv:1", env=layer)
    assert report["right"] and report["outcomes"] == ["built"]
    assert any(
        "not using the read-only cache" in w and "cache__shared_owner" in w
        for w in warnings_of(report)
    ), warnings_of(report)
    for owner in (OTHER_USER, str(other_user[0])):
        named = flags(cache__shared_dirs=shared, cache__shared_owner=owner)
        report = run_graph(tmp_path / f"b-{owner}", "vtv:1", env=named)
        assert report["right"] and report["outcomes"] == ["hit"]
        assert warnings_of(report) == []
    # Nobody else: a cache of another user is refused even with one named.
    os.chown(shared, 4242, 4242)
    named = flags(cache__shared_dirs=shared, cache__shared_owner=OTHER_USER)
    assert run_graph(tmp_path / "c", "vtv:1", env=named)["outcomes"] == ["built"]


def test_shared_owner_takes_a_name_or_a_uid() -> None:
    with opweave.config.change_flags(cache__shared_owner="root"):
        assert opweave.config.cache__shared_owner == 0
    with opweave.config.change_flags(cache__shared_owner="1234"):
        assert opweave.config.cache__shared_owner == 1234
    assert opweave.config.cache__shared_owner is None
    with pytest.raises(ValueError, match="no user named"):
        opweave.config.cache__shared_owner = "no-such-user-anywhere"

"""A cache that cannot be turned against its user, through ``opweave.function``
in fresh processes: nothing below the root is followed through a symlink,
nothing another user owns (or could have written) is loaded, nothing outside
the root is ever deleted or written, and modes are exact whatever the umask.

Cases with another user's files run as root (as CI does): they create a
second user and give it files (the ``other_user`` fixture, conftest.py).
Elsewhere they are skipped, or fail if ``OPWEAVE_REQUIRE_SECOND_USER=1`` is
set, as ``.ci/run`` does (support/second_user.py)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import run_graph

from opweave import _core


def give(path: Path, owner: tuple[int, int]) -> None:
    """Makes `path` (and everything below it) belong to `owner`."""
    for item in [path, *path.rglob("*")]:
        os.chown(item, *owner, follow_symlinks=False)


def module_entries(cache: Path) -> dict[str, Path]:
    """The module entries, by label+key length so tests can tell them apart."""
    entries = _core.ModuleCache(str(cache)).list()
    return {e.key: Path(e.dir) for e in entries if e.kind == "module"}


def two_entries(cache: Path) -> tuple[Path, Path]:
    """Builds the one- and two-node graphs; returns their entries."""
    run_graph(cache, "vtv:1")
    before = set(module_entries(cache).values())
    run_graph(cache, "vtv:2")
    [two] = set(module_entries(cache).values()) - before
    [one] = before
    return one, two


def warnings_of(report: dict) -> list[str]:
    return [r["message"] for r in report["logs"] if r["level"] == "WARNING"]


def test_an_entry_replaced_by_a_symlink_to_another_entry(isolated_cache: Path) -> None:
    one, two = two_entries(isolated_cache)
    shutil.rmtree(two)
    two.symlink_to(one)
    report = run_graph(isolated_cache, "vtv:2")
    assert report["right"] and report["outcomes"] == ["built"]
    assert any("symlink" in w and str(two) in w for w in warnings_of(report))
    assert not two.is_symlink() and one.is_dir()
    assert run_graph(isolated_cache, "vtv:1")["outcomes"] == ["hit"]


def test_a_library_replaced_by_a_symlink(isolated_cache: Path) -> None:
    one, two = two_entries(isolated_cache)
    [library] = two.glob("module-*.so")
    [other] = one.glob("module-*.so")
    library.unlink()
    library.symlink_to(other)
    report = run_graph(isolated_cache, "vtv:2")
    assert report["right"] and report["outcomes"] == ["built"]
    assert any("is a symlink" in w for w in warnings_of(report))


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A directory outside the cache, full of files nothing may touch."""
    place = tmp_path / "precious"
    place.mkdir()
    for name in ("data.txt", "key.lock", "aa"):
        (place / name).write_text(name)
    (place / "sub").mkdir()
    (place / "sub" / "more.txt").write_text("more")
    before = sorted(str(p.relative_to(place)) for p in place.rglob("*"))
    yield place
    after = sorted(str(p.relative_to(place)) for p in place.rglob("*"))
    assert after == before, "something outside the cache changed"
    assert (place / "data.txt").read_text() == "data.txt"


@pytest.mark.parametrize("name", ["trash", "tmp", "quarantine", "locks", "failed", "entries"])
def test_layout_directories_replaced_by_symlinks_lead_nowhere(
    isolated_cache: Path, outside: Path, name: str
) -> None:
    _, two = two_entries(isolated_cache)
    (two / "meta.json").write_text("{}")  # a miss that quarantines, builds and sweeps
    layout = isolated_cache / "v2" / name
    shutil.rmtree(layout, ignore_errors=True)
    layout.symlink_to(outside)
    report = run_graph(isolated_cache, "vtv:2")
    assert report["right"]
    assert any(str(layout) in w and "symlink" in w for w in warnings_of(report)), report["logs"]
    assert layout.is_dir() and not layout.is_symlink()
    cache = _core.ModuleCache(str(isolated_cache))
    cache.sweep()
    cache.verify(repair=True)
    cache.prune(max_total_bytes=0)
    cache.clear()
    assert run_graph(isolated_cache, "vtv:3")["right"]


def test_modes_are_exact_whatever_the_umask(isolated_cache: Path) -> None:
    old = os.umask(0)
    try:
        run_graph(isolated_cache, "vtv:1")
    finally:
        os.umask(old)
    wrong = []
    for path in isolated_cache.rglob("*"):
        mode = stat.S_IMODE(path.lstat().st_mode)
        expected = 0o700 if path.is_dir() or path.suffix == ".so" else 0o600
        if path.name == "CACHEDIR.TAG":
            expected = 0o600
        if mode != expected:
            wrong.append(f"{path}: {mode:o}")
    assert wrong == []
    assert any(isolated_cache.rglob("module-*.so"))


def test_a_layout_directory_others_can_write_is_made_private(isolated_cache: Path) -> None:
    run_graph(isolated_cache, "vtv:1")
    entries = isolated_cache / "v2" / "entries"
    entries.chmod(0o777)
    report = run_graph(isolated_cache, "vtv:1")
    assert report["outcomes"] == ["hit"]
    assert any(
        str(entries) in w and "writable by group or others" in w for w in warnings_of(report)
    )
    assert stat.S_IMODE(entries.stat().st_mode) == 0o700


def test_an_entry_symlinked_to_another_users_directory(
    isolated_cache: Path, tmp_path: Path, other_user: tuple[int, int]
) -> None:
    one, two = two_entries(isolated_cache)
    theirs = tmp_path / "theirs"
    shutil.copytree(one, theirs)
    meta = json.loads((theirs / "meta.json").read_text())
    meta["key"] = two.name  # claims to be the entry it replaces
    (theirs / "meta.json").write_text(json.dumps(meta))
    give(theirs, other_user)
    shutil.rmtree(two)
    two.symlink_to(theirs)
    report = run_graph(isolated_cache, "vtv:2")
    assert report["right"] and report["outcomes"] == ["built"]
    assert warnings_of(report)


@pytest.mark.parametrize("where", ["entry", "shard"])
def test_a_module_planted_by_another_user_is_never_loaded(
    isolated_cache: Path, other_user: tuple[int, int], where: str
) -> None:
    one, two = two_entries(isolated_cache)
    isolated_cache.chmod(0o755)  # an accepted root: only its owner writes
    (isolated_cache / "v2" / "entries").chmod(0o777)  # but not below it
    # What another user could do there: an entry of their own at the key of
    # the two-node graph, holding the one-node graph's module, its
    # metadata claiming the right key and matching every hash.
    shutil.rmtree(two)
    planted = two if where == "entry" else two.parent
    if where == "shard":
        shutil.rmtree(two.parent, ignore_errors=True)
    shutil.copytree(one, two)
    meta = json.loads((two / "meta.json").read_text())
    meta["key"] = two.name
    (two / "meta.json").write_text(json.dumps(meta))
    give(planted, other_user)
    report = run_graph(isolated_cache, "vtv:2")
    assert report["right"], report  # not the planted module's result
    warned = warnings_of(report)
    assert any(f"uid {other_user[0]}" in w for w in warned), warned
    assert run_graph(isolated_cache, "vtv:2")["right"]


def test_a_cache_root_of_another_user_falls_back_to_a_private_build(
    isolated_cache: Path, other_user: tuple[int, int]
) -> None:
    run_graph(isolated_cache, "vtv:1")
    give(isolated_cache, other_user)
    report = run_graph(isolated_cache, "vtv:1")
    assert report["right"] and report["outcomes"] == ["built"]
    assert len(warnings_of(report)) == 1, warnings_of(report)
    [warning] = warnings_of(report)
    assert "cannot use the module cache" in warning and f"uid {other_user[0]}" in warning
    assert "private directory" in warning
    assert "OPWEAVE_FLAGS=compiledir=" in warning  # and how to fix it


@pytest.mark.usefixtures("as_root")  # chattr +i
def test_an_entry_that_cannot_be_moved_aside_is_built_privately(isolated_cache: Path) -> None:
    _, two = two_entries(isolated_cache)
    (two / "meta.json").write_text("{}")
    if subprocess.run(["chattr", "+i", str(two)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not supported here")
    try:
        report = run_graph(isolated_cache, "vtv:2")
        assert report["right"] and report["outcomes"] == ["built"]
        assert any("private directory" in w and str(two) in w for w in warnings_of(report))
    finally:
        subprocess.run(["chattr", "-i", str(two)], check=True)

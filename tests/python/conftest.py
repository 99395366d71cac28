"""Shared fixtures: an isolated cache root and isolated compile slots per
test, and (for the tests that need them) root and a second user; see
support/second_user.py for OPWEAVE_REQUIRE_SECOND_USER, which turns their
skips into failures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import cache_opens, second_user
from support.redis_server import redis_server
from support.transfer_archives import Export
from support.transfer_archives import real_export as make_real_export


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Points the default cache (and config.compiledir) at a fresh directory, so
    no test touches the user's real cache. The default compile slots, which
    all of the user's processes share, move to a fresh XDG_RUNTIME_DIR too
    (child processes inherit it), so that tests running at the same time, or
    the user's own builds, neither take a test's slots nor wait for them."""
    import opweave

    xdg = tmp_path / "xdg-cache"
    runtime = tmp_path / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    with opweave.config.change_flags(compiledir=str(xdg / "opweave")):
        yield xdg / "opweave"


@pytest.fixture(autouse=True)
def no_python_open_below_a_cache_root(isolated_cache: Path) -> Iterator[None]:
    """Fails a test in which opweave's Python code opened a file below a
    cache root (support/cache_opens.py): the core alone reads and writes
    what a cache holds."""
    import opweave

    cache_opens.install()
    config = opweave.config
    found = [str(isolated_cache.parent), config.compiledir, *config.cache__shared_dirs]
    cache_opens.roots[:] = [os.path.join(os.path.abspath(root), "") for root in found]
    cache_opens.opened.clear()
    try:
        yield
    finally:
        cache_opens.roots.clear()
    assert not cache_opens.opened, f"opweave's Python code opened cache files: {cache_opens.opened}"


@pytest.fixture
def as_root() -> None:
    """Runs the test only as root: skipped otherwise, or failed if
    OPWEAVE_REQUIRE_SECOND_USER is set."""
    second_user.require_root("the test does what only root may")


@pytest.fixture(scope="session")
def other_user() -> tuple[int, int]:
    """The uid and gid of a second user (created if missing). The test is
    skipped if it cannot have one, or failed if OPWEAVE_REQUIRE_SECOND_USER
    is set."""
    return second_user.other_user_ids()


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """The URL of a real redis-server of this test's own, stopped after it."""
    with redis_server(tmp_path) as url:
        yield url


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Export:
    """The members of a real export file (support/transfer_archives.py)."""
    return make_real_export(tmp_path_factory.mktemp("export"))

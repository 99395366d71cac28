"""Shared fixtures: an isolated cache root, and isolated compile slots, per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


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

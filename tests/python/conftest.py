"""Shared fixtures: an isolated cache root per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Points the default cache (and config.compiledir) at a fresh directory, so
    no test touches the user's real cache."""
    import opweave

    xdg = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    with opweave.config.change_flags(compiledir=str(xdg / "opweave")):
        yield xdg / "opweave"

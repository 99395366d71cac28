"""An audit hook that notes every file opweave's own Python code opens below
a cache root (tests/python/conftest.py installs it for every test, and
fails a test that made any).

Python code never opens a cache's files: entries, records (graph records,
-march=native expansions) and indexes are read and written by the core,
through directories it has checked, and what it hands out (a verified
entry's library) is loaded by the dynamic loader. An open by opweave's
Python code below a root would be a path around those checks (a planted
file, a symlink, a root the core refused)."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["install", "opened", "roots"]

roots: list[str] = []  # the cache roots of the running test, each with a final "/"
# (and whatever compiledir and cache__shared_dirs name when a file is opened)
opened: list[tuple[str, str]] = []  # (path, the opweave module that opened it)
_installed: list[bool] = []


def _opener() -> str | None:
    """The opweave module whose code called open(), or None when the first
    caller outside the standard library is not opweave's."""
    frame = sys._getframe(2)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name == "opweave" or name.startswith("opweave."):
            return name
        top = name.partition(".")[0]
        if top not in sys.stdlib_module_names and not name.startswith("<"):
            return None
        frame = frame.f_back
    return None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not roots or not args or isinstance(args[0], int):
        return
    try:
        path = os.path.abspath(os.fsdecode(os.fspath(args[0])))
    except TypeError:
        return
    if any(path.startswith(root) or path + "/" == root for root in [*roots, *_configured()]):
        opener = _opener()
        if opener is not None:
            opened.append((path, opener))


def _configured() -> list[str]:
    """The cache roots the configuration names now."""
    config = getattr(sys.modules.get("opweave.configparser"), "config", None)
    if config is None:
        return []
    found = [config.compiledir, *config.cache__shared_dirs]
    return [os.path.join(os.path.abspath(root), "") for root in found]


def install() -> None:
    """Adds the hook, once per process (audit hooks cannot be removed)."""
    if not _installed:
        sys.addaudithook(_hook)
        _installed.append(True)

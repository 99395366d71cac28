"""Finding an executable as ``shutil.which`` does, without importing
``shutil`` (it imports the compression modules: about 2 ms of a fresh
process's start)."""

from __future__ import annotations

import os

__all__ = ["on_path"]


def on_path(program: str) -> str | None:
    """The executable ``program`` (a name looked up on ``PATH``, or a path
    with a directory), or None if there is none."""
    places = [""] if os.path.dirname(program) else os.get_exec_path()
    for place in places:
        path = os.path.join(place, program)
        if os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path):
            return path
    return None

"""Which linker links generated modules (``config.cmodule__linker``).

A small module spends about a fifth of its cold compile in GNU ld, most of it
reading libstdc++'s symbol table; gold does the same link in half the time.
With ``auto`` (the default), GCC links with gold when ``ld.gold`` is on the
``PATH`` (GCC finds it there) and the flags do not choose a linker already.
The flag is part of the compile job, and so of the cache key.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from opweave._on_path import on_path
from opweave.configparser import config
from opweave.link.c._flags import group_flags
from opweave.link.c.sanitize import is_clang

__all__ = ["linker_flags"]


def linker_flags(compiler: Any, flags: Sequence[str]) -> list[str]:
    """The ``-fuse-ld=`` flag for ``compiler``, given the job's other
    ``flags``: none when they already choose a linker, or when
    ``config.cmodule__linker`` is ``default``; the configured linker when it
    names one; with ``auto``, gold for GCC when ``ld.gold`` is found."""
    chosen = config.cmodule__linker
    # Options, not the arguments of other options (``-Xclang -fuse-ld=x``).
    options = [group[0] for group in group_flags(flags) if len(group) == 1]
    if chosen == "default" or any(option.startswith("-fuse-ld=") for option in options):
        return []
    if chosen != "auto":
        return [f"-fuse-ld={chosen}"]
    if is_clang(compiler) or not _have("ld.gold"):
        return []
    return ["-fuse-ld=gold"]


@functools.cache
def _have(program: str) -> bool:
    return on_path(program) is not None

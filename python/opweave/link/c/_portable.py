"""Paths and digests that mean the same on every machine, for graph records
(:mod:`._graph_index`) made on one machine and read on another.

A file below an entry of ``sys.path`` (an import root: site-packages, a
source tree on the path, the standard library) is named relative to it,
``@/numpy/core/__init__.py``, and found again as the import system would
find it: below the first root of this process's ``sys.path`` that holds it,
else at the absolute path it had (a root that code adds to ``sys.path``
when it runs, such as a package's vendored directory, is not there yet when
a fresh process checks a record). Any other file keeps its absolute path.
So a record made in a virtual environment at one path is checked against
the same files of another at another path, by their content.

A distribution's ``RECORD`` lists the hashes of what it installed, and
some of that depends on where: console scripts (their ``#!`` line names
the interpreter), headers and data installed outside the root, and the
``dist-info`` files that say how it was installed. :func:`record_digest`
covers the rest: the same release installed anywhere has one digest.
"""

from __future__ import annotations

import os
import sys

from opweave._sha256 import sha256_hex
from opweave.link.c._context import CONTEXT

__all__ = ["is_dist_record", "located", "portable", "record_digest"]

_MARK = "@/"
# dist-info files whose content says how or from where a release was
# installed, not what it is.
_HOW_INSTALLED = ("/RECORD", "/direct_url.json", "/INSTALLER", "/REQUESTED")


def _roots() -> tuple[tuple[str, ...], frozenset[str]]:
    """This process's import roots, in ``sys.path`` order, each with a final
    separator, and as a set; kept per ``sys.path``."""
    key = tuple(sys.path)
    found = CONTEXT.portable_roots.get(key)
    if found is None:
        roots = tuple(dict.fromkeys(os.path.join(os.path.abspath(p or "."), "") for p in key))
        found = CONTEXT.portable_roots[key] = (roots, frozenset(roots))
    return found


def portable(path: str) -> str:
    """``path`` relative to the longest import root it lies below (marked
    ``@/``), else as it is."""
    below = [root for root in _roots()[0] if path.startswith(root)]
    if not below:
        return path
    return _MARK + path[len(max(below, key=len)) :]


def located(path: str, where: str) -> str:
    """The file a :func:`portable` path names here: ``where`` (the absolute
    path it had where the record was made) when that lies below an import
    root here (as it does on the machine that made it), else below the first
    import root that holds it, else ``where``; an absolute path as it is.
    ValueError for a path that is neither."""
    if not path.startswith(_MARK):
        if not path.startswith("/"):
            raise ValueError(f"not a portable path: {path!r}")
        return path
    relative = path[len(_MARK) :]
    if relative.startswith("/") or ".." in relative.split("/"):
        raise ValueError(f"not a portable path: {path!r}")
    roots, known = _roots()
    if where.endswith(relative) and where[: len(where) - len(relative)] in known:
        return where  # where it was, below a root here (its check stats it)
    for root in roots:
        candidate = root + relative
        if os.path.lexists(candidate):
            return candidate
    return where


def is_dist_record(path: str) -> bool:
    """Whether ``path`` is a distribution's ``RECORD``."""
    return path.endswith("/RECORD") and os.path.basename(os.path.dirname(path)).endswith(
        ".dist-info"
    )


def record_digest(text: str) -> str:
    """A digest of a ``RECORD``'s lines that do not depend on where the
    release was installed (see the top)."""
    kept = []
    for line in text.splitlines():
        name = line.partition(",")[0]
        if not name or name.startswith(("../", "/")) or name.endswith(_HOW_INSTALLED):
            continue
        kept.append(line)
    return sha256_hex("\n".join(sorted(kept)).encode())

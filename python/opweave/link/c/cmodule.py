"""Compiling C++ source into Python extension modules through the cache.

This module ties :data:`opweave.config` to the C++ core: it gives the
process-wide :class:`~opweave._core.ModuleCache` and compiler for the current
configuration, the compile job for a Python extension, and a loader that
imports a compiled extension from its cache entry.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from opweave import _core
from opweave.configparser import config
from opweave.errors import OpweaveError

__all__ = [
    "CompiledModule",
    "compile_extension",
    "extension_job",
    "get_compiler",
    "get_module_cache",
    "load_extension",
    "python_abi_key",
]

_log = logging.getLogger(__name__)

_caches: dict[tuple[str, float], _core.ModuleCache] = {}
_compilers: dict[tuple[str, str], _core.SystemCompiler] = {}


def get_module_cache() -> _core.ModuleCache:
    """The module cache at ``config.compiledir`` (one object per setting)."""
    settings = (config.compiledir, config.compile__timeout)
    cache = _caches.get(settings)
    if cache is None:
        cache = _core.ModuleCache(settings[0], lock_timeout=settings[1])
        _caches[settings] = cache
    return cache


def get_compiler() -> _core.SystemCompiler:
    """The compiler named by ``config.cxx`` and ``config.cxx_launcher``.

    Raises OpweaveError when there is no compiler (``config.cxx`` is empty).
    """
    settings = (config.cxx, config.cxx_launcher)
    compiler = _compilers.get(settings)
    if compiler is None:
        if not settings[0]:
            raise OpweaveError(
                "no C++ compiler found: install g++ or clang++, or name one with "
                "OPWEAVE_FLAGS=cxx=/path/to/compiler (or $CXX)"
            )
        compiler = _core.SystemCompiler(settings[0], launcher=settings[1])
        _compilers[settings] = compiler
    return compiler


def python_abi_key() -> str:
    """Text naming the Python ABI that compiled extensions depend on."""
    soabi = sysconfig.get_config_var("SOABI") or ""
    return f"python={sys.implementation.cache_tag};soabi={soabi};hexversion={sys.hexversion:x}"


def extension_job(
    include_dirs: Sequence[str] = (),
    flags: Sequence[str] = (),
    lib_dirs: Sequence[str] = (),
    libraries: Sequence[str] = (),
    opt_level: _core.OptLevel = _core.OptLevel.O2,
    debug_info: _core.DebugInfo = _core.DebugInfo.NO,
) -> _core.CompileJob:
    """A compile job for a Python extension module: the given settings plus the
    Python headers. Extension modules on Linux do not link libpython."""
    job = _core.CompileJob()
    python_include = sysconfig.get_paths()["include"]
    job.include_dirs = [*include_dirs, python_include]
    job.flags = list(flags)
    job.lib_dirs = list(lib_dirs)
    job.libraries = list(libraries)
    job.opt_level = opt_level
    job.debug_info = debug_info
    return job


@dataclass(frozen=True)
class CompiledModule:
    """A compiled extension: the imported module and where it came from.
    ``outcome`` is "hit", "built" or "built_by_other"."""

    module: ModuleType
    library: Path
    source: Path
    outcome: str


def load_extension(library: str | Path, name: str) -> ModuleType:
    """Imports the extension module ``name`` (its ``PyInit_<name>``) from the
    shared library at ``library``, without registering it in ``sys.modules``."""
    loader = importlib.machinery.ExtensionFileLoader(name, str(library))
    spec = importlib.util.spec_from_file_location(name, str(library), loader=loader)
    if spec is None:
        raise ImportError(f"cannot load extension {name} from {library}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def compile_extension(
    source: str, name: str, job: _core.CompileJob | None = None
) -> CompiledModule:
    """Compiles ``source`` (defining ``PyInit_<name>``) through the cache, or
    finds it there, and imports it. Raises CompileError on a failed compile.

    An entry that cannot be loaded (damaged on disk, or deleted by a
    concurrent prune) is moved aside and built again, once; a second failure
    is raised."""
    if job is None:
        job = extension_job()
    cache, compiler, abi = get_module_cache(), get_compiler(), python_abi_key()
    built = _core.build_module(cache, source, compiler, job, abi)
    try:
        module = load_extension(built["library"], name)
    except (ImportError, OSError) as error:
        _log.warning("cache entry %s cannot be loaded (%s); rebuilding it", built["dir"], error)
        cache.evict(Path(built["dir"]).name)
        built = _core.build_module(cache, source, compiler, job, abi)
        module = load_extension(built["library"], name)
    return CompiledModule(module, built["library"], built["source"], built["outcome"])

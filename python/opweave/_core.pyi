# The stub of opweave._core (the C++ bindings), for type checkers and editors.
# Generated from the built module: pybind11-stubgen opweave._core -o python
# tests/python/_core/test_stub.py checks that it names everything the module has.
# Written by hand, to keep when regenerating: the Function, StepRunner and CellCall
# classes, RemoteStorage's get and put (their types), and the CodeOrigin,
# CodeFragment, Step and LineRange named tuples (and the plain tuples that convert
# to them, in the assembler's parameter types).
# It imports nothing of opweave: it is the lowest layer.
"""
opweave's C++ core: content hash, file locks, module cache and compiler driver,
graph module assembly and the compiled-function runtime.
"""
from __future__ import annotations
import builtins
import collections.abc
import os
import pathlib
import typing
__all__: list[str] = ['AssembledModule', 'AssembledUnit', 'BuiltModule', 'BuiltUnit', 'CACHE_FORMAT_VERSION', 'CacheCounters', 'CacheEvent', 'CacheResult', 'CacheStats', 'CellCall', 'CodeFragment', 'CodeOrigin', 'CompileJob', 'CompileSlot', 'Compiler', 'DEFAULT_LOCK_TIMEOUT', 'DebugInfo', 'DepWindow', 'Entry', 'EntryFile', 'FileLock', 'FileLockReuseError', 'Function', 'GRAPH_LAYOUT_VERSION', 'GRAPH_MODULE_NAME', 'GraphExport', 'HeaderRecord', 'KeyHasher', 'LineRange', 'MODULE_LAYOUT_VERSION', 'ModuleCache', 'ModuleRequest', 'ModuleSpec', 'OptLevel', 'PYTHON_PRELUDE', 'PreludeRequest', 'PruneResult', 'RemoteStorage', 'Step', 'StepRunner', 'SystemCompiler', 'TranslationUnit', 'UnitSpec', 'VerifyProblem', 'VerifyReport', 'Watch', 'assemble_module', 'build_module', 'build_prelude', 'cancel_builds', 'code_started', 'compile_jobs', 'files_changed', 'filesystem_now_ns', 'find_compiler', 'headers_changed', 'namespace_digest', 'pause_dep_windows', 'prelude_key', 'prelude_text_of', 'record_files', 'request_key', 'same_values', 'sha256_hex', 'supports_prelude', 'take_values', 'unit_keys', 'values_digest', 'values_of', 'zstd_compress', 'zstd_decompress']
class CodeOrigin(typing.NamedTuple):
    """
    Where a fragment of generated code came from: `what` ("node 0 MyOp c_code"),
    the `file` its text was read from ("": none) and the `line` of that file it
    starts at. Any (str, str, int) tuple converts.
    """
    what: str
    file: str
    line: int
class CodeFragment(typing.NamedTuple):
    """
    A piece of code and the index of its CodeOrigin in ModuleSpec.origins (-1:
    written by opweave itself). Any (str, int) tuple converts.
    """
    text: str
    origin: int
class Step(typing.NamedTuple):
    """
    One step of the module's init or run: a positive `id` unique among the
    module's steps (what a failure reports), the names of its `run` and `undo`
    functions ("": none) and the `args` they get. Any (int, str, str, [int])
    tuple converts.
    """
    id: int
    run: str
    undo: str
    args: list[int]
class LineRange(typing.NamedTuple):
    """
    Lines `first` to `last` (1-based, inclusive) of an assembled text, and the
    index of the origin of their code (-1: none).
    """
    first: int
    last: int
    origin: int
class AssembledModule:
    """
    A laid-out module: its `text`, `content_key` (SHA-256 of the
    text), `line_map` (LineRange, sorted), `units`, and with units its
    `body` (see module_source.hpp).
    """
    def origin_of_line(self, line: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int] | None:
        """
        (origin index, line of that origin's code, 1-based) of generated line `line`,
        or None for a line opweave wrote.
        """
    @property
    def body(self) -> AssembledUnit:
        ...
    @property
    def content_key(self) -> str:
        ...
    @property
    def line_map(self) -> list[LineRange]:
        ...
    @property
    def text(self) -> str:
        ...
    @property
    def units(self) -> list[AssembledUnit]:
        ...
class AssembledUnit:
    """
    The text of one compile unit of a module.
    """
    def origin_of_line(self, line: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int] | None:
        """
        (origin index, line of that origin's code, 1-based) of generated line `line`,
        or None for a line opweave wrote.
        """
    @property
    def init_function(self) -> str:
        ...
    @property
    def line_map(self) -> list[LineRange]:
        ...
    @property
    def text(self) -> str:
        ...
class GraphExport:
    """
    A graph the module exports besides its own: the graph of one node,
    under the `key` of that node's code. Its `definitions` define the
    opweave_graph_abi `table` (graph_abi.h).
    """
    key: str
    table: str
    def __init__(self, *, key: str, table: str, definitions: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]] = []) -> None:
        ...
    @property
    def definitions(self) -> list[list[CodeFragment]]:
        ...
    @definitions.setter
    def definitions(self, arg0: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]]) -> None:
        ...
class ModuleSpec:
    """
    The parts of a graph module (see module_source.hpp), for assemble_module.
    Every part is a keyword; fields read as copies: assign a whole field to
    change it, or copy() the spec.
    """
    source_name: str
    def __init__(self, *, origins: collections.abc.Sequence[CodeOrigin | tuple[str, str, int]] = [], headers: collections.abc.Sequence[str] = [], support_code: collections.abc.Sequence[CodeFragment | tuple[str, int]] = [], definitions: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]] = [], members: collections.abc.Sequence[CodeFragment | tuple[str, int]] = [], step_functions: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]] = [], init_steps: collections.abc.Sequence[Step | tuple[int, str, str, list[int]]] = [], run_steps: collections.abc.Sequence[Step | tuple[int, str, str, list[int]]] = [], init_code: collections.abc.Sequence[CodeFragment | tuple[str, int]] = [], init_code_apply: collections.abc.Sequence[CodeFragment | tuple[str, int]] = [], units: collections.abc.Sequence[UnitSpec] = [], unit_names: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]] = [], exports: collections.abc.Sequence[GraphExport] = [], n_inputs: typing.SupportsInt | typing.SupportsIndex = 0, n_outputs: typing.SupportsInt | typing.SupportsIndex = 0, n_orphans: typing.SupportsInt | typing.SupportsIndex = 0, source_name: str = 'module.cpp') -> None:
        ...
    def copy(self) -> ModuleSpec:
        """
        A copy of this spec.
        """
    @property
    def definitions(self) -> list[list[CodeFragment]]:
        ...
    @definitions.setter
    def definitions(self, arg0: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]]) -> None:
        ...
    @property
    def exports(self) -> list[GraphExport]:
        ...
    @exports.setter
    def exports(self, arg0: collections.abc.Sequence[GraphExport]) -> None:
        ...
    @property
    def headers(self) -> list[str]:
        ...
    @headers.setter
    def headers(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def init_code(self) -> list[CodeFragment]:
        ...
    @init_code.setter
    def init_code(self, arg0: collections.abc.Sequence[CodeFragment | tuple[str, int]]) -> None:
        ...
    @property
    def init_code_apply(self) -> list[CodeFragment]:
        ...
    @init_code_apply.setter
    def init_code_apply(self, arg0: collections.abc.Sequence[CodeFragment | tuple[str, int]]) -> None:
        ...
    @property
    def init_steps(self) -> list[Step]:
        ...
    @init_steps.setter
    def init_steps(self, arg0: collections.abc.Sequence[Step | tuple[int, str, str, list[int]]]) -> None:
        ...
    @property
    def members(self) -> list[CodeFragment]:
        ...
    @members.setter
    def members(self, arg0: collections.abc.Sequence[CodeFragment | tuple[str, int]]) -> None:
        ...
    @property
    def n_inputs(self) -> int:
        ...
    @n_inputs.setter
    def n_inputs(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def n_orphans(self) -> int:
        ...
    @n_orphans.setter
    def n_orphans(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def n_outputs(self) -> int:
        ...
    @n_outputs.setter
    def n_outputs(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def origins(self) -> list[CodeOrigin]:
        ...
    @origins.setter
    def origins(self, arg0: collections.abc.Sequence[CodeOrigin | tuple[str, str, int]]) -> None:
        ...
    @property
    def run_steps(self) -> list[Step]:
        ...
    @run_steps.setter
    def run_steps(self, arg0: collections.abc.Sequence[Step | tuple[int, str, str, list[int]]]) -> None:
        ...
    @property
    def step_functions(self) -> list[list[CodeFragment]]:
        ...
    @step_functions.setter
    def step_functions(self, arg0: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]]) -> None:
        ...
    @property
    def support_code(self) -> list[CodeFragment]:
        ...
    @support_code.setter
    def support_code(self, arg0: collections.abc.Sequence[CodeFragment | tuple[str, int]]) -> None:
        ...
    @property
    def units(self) -> list[UnitSpec]:
        ...
    @units.setter
    def units(self, arg0: collections.abc.Sequence[UnitSpec]) -> None:
        ...
    @property
    def unit_names(self) -> list[list[CodeFragment]]:
        ...
    @unit_names.setter
    def unit_names(self, arg0: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]]) -> None:
        ...
class UnitSpec:
    """
    A compile unit of a module (see module_source.hpp): code compiled on
    its own and linked with the module. Fields read as copies: assign a
    whole field to change it.
    """
    def __init__(self, *, headers: collections.abc.Sequence[str] = [], support_code: collections.abc.Sequence[CodeFragment | tuple[str, int]] = [], definitions: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]] = [], init_code: collections.abc.Sequence[CodeFragment | tuple[str, int]] = [], init_code_apply: collections.abc.Sequence[CodeFragment | tuple[str, int]] = [], text: str = '', init_function: str = '') -> None:
        ...
    text: str
    init_function: str
    @property
    def definitions(self) -> list[list[CodeFragment]]:
        ...
    @definitions.setter
    def definitions(self, arg0: collections.abc.Sequence[collections.abc.Sequence[CodeFragment | tuple[str, int]]]) -> None:
        ...
    @property
    def headers(self) -> list[str]:
        ...
    @headers.setter
    def headers(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def init_code(self) -> list[CodeFragment]:
        ...
    @init_code.setter
    def init_code(self, arg0: collections.abc.Sequence[CodeFragment | tuple[str, int]]) -> None:
        ...
    @property
    def init_code_apply(self) -> list[CodeFragment]:
        ...
    @init_code_apply.setter
    def init_code_apply(self, arg0: collections.abc.Sequence[CodeFragment | tuple[str, int]]) -> None:
        ...
    @property
    def support_code(self) -> list[CodeFragment]:
        ...
    @support_code.setter
    def support_code(self, arg0: collections.abc.Sequence[CodeFragment | tuple[str, int]]) -> None:
        ...
class KeyHasher:
    """
    Builds a cache key from typed, length-prefixed fields, so that
    ('-I', '-O2') and ('-I-O2') give different keys.
    """
    def __init__(self) -> None:
        ...
    def add_int(self, number: typing.SupportsInt | typing.SupportsIndex) -> KeyHasher:
        """
        Appends a 64-bit integer field.
        """
    def add_list(self, items: collections.abc.Sequence[str]) -> KeyHasher:
        """
        Appends a list of strings as one field.
        """
    def add_named(self, name: str, value: str) -> KeyHasher:
        """
        Appends a named string field.
        """
    def add_text(self, text: str) -> KeyHasher:
        """
        Appends a string field.
        """
    @property
    def text(self) -> str:
        """
        The 'name: value' lines of the named fields so far.
        """
    def hex_digest(self) -> str:
        """
        The digest of all fields so far (64 hex characters); resets the hasher.
        """
class FileLockReuseError(RuntimeError):
    pass
class FileLock:
    """
    An exclusive flock(2) lock on a file, released by the kernel if
    the holder dies. Use acquire()/release() or a `with` block. Not
    re-entrant: acquiring it again while held raises RuntimeError.
    """
    @staticmethod
    def read_holder_pid(path: os.PathLike | str | bytes) -> int:
        """
        The pid recorded in a lock file, or 0.
        """
    def __enter__(self) -> FileLock:
        ...
    def __exit__(self, *args) -> None:
        ...
    def __init__(self, path: os.PathLike | str | bytes) -> None:
        ...
    def acquire(self, timeout: typing.SupportsFloat | typing.SupportsIndex = -1.0) -> None:
        """
        Waits up to `timeout` seconds (negative: forever); raises LockTimeout.
        Ctrl-C (any signal handler that raises) interrupts the wait.
        """
    def release(self) -> None:
        """
        Releases the lock if held.
        """
    def release_and_remove(self) -> None:
        """
        Removes the lock file, then releases the lock.
        """
    def try_acquire(self) -> bool:
        """
        Takes the lock only if it is free now; returns whether it is held.
        """
    @property
    def held(self) -> bool:
        ...
    @property
    def path(self) -> pathlib.Path:
        ...
class EntryFile:
    """
    A file of a cache entry, as recorded at publish.
    """
    @property
    def name(self) -> str:
        ...
    @property
    def sha256(self) -> str:
        ...
    @property
    def size(self) -> int:
        ...
class HeaderRecord:
    """
    A header a build read, as recorded after the compile.
    """
    @property
    def ctime_ns(self) -> int:
        ...
    @property
    def mtime_ns(self) -> int:
        ...
    @property
    def path(self) -> str:
        ...
    @property
    def sha256(self) -> str:
        ...
    @property
    def size(self) -> int:
        ...
class DepWindow:
    """
    While open, gathers the code objects that start running and the
    files Python code opens (see _dep_window.py).
    """
    def __init__(self) -> None:
        ...
    def close(self) -> tuple[list[typing.Any], list[tuple[str, str]], list[dict[str, typing.Any]]]:
        """
        Stops gathering; returns (code objects, [(path, opened for writing), ...],
        [namespace of a module loaded at open() that changed meanwhile, ...]).
        """
    def open(self) -> None:
        """
        Starts gathering (on Python < 3.12 with a frame evaluation function).
        """
    @property
    def is_open(self) -> bool:
        ...
class Watch:
    """
    Whether module namespaces (dicts) or classes changed since it was
    taken, without reading them: dict and type watchers (Python >= 3.12),
    else their version tags.
    """
    def __init__(self, dicts: list[typing.Any], types: list[typing.Any]) -> None:
        ...
    def __len__(self) -> int:
        ...
    def changed(self) -> bool:
        """
        Whether one of them changed since the watch was taken or refreshed.
        """
    def refresh(self) -> None:
        """
        Counts changes from now on.
        """
class Entry:
    """
    A published cache entry, as its metadata describes it.
    """
    def file_ending(self, suffix: str) -> str:
        """
        The path (a str) of the first file whose name ends with `suffix`, or ''.
        """
    @property
    def command(self) -> str:
        ...
    @property
    def compile_seconds(self) -> float:
        ...
    @property
    def created(self) -> float:
        ...
    @property
    def dir(self) -> pathlib.Path:
        ...
    @property
    def files(self) -> list[EntryFile]:
        ...
    @property
    def headers(self) -> list[HeaderRecord]:
        ...
    @property
    def key(self) -> str:
        ...
    @property
    def key_material(self) -> str:
        ...
    @property
    def environment(self) -> str:
        ...
    @property
    def exports(self) -> list[str]:
        """
        The node keys whose functions the entry exports (find_export finds
        it by them); empty for entries without any.
        """
    @property
    def kind(self) -> str:
        ...
    @property
    def label(self) -> str:
        ...
    @property
    def last_used(self) -> float:
        ...
    @property
    def size_bytes(self) -> int:
        ...
class CacheEvent:
    """
    Something the cache did besides building, and why.
    kind: 'quarantined', 'repaired', 'stale', 'unusable' (an entry of a
    read-only cache that does not verify, left as it is), 'fetched' (from
    the remote storage) or 'remote_failed' (the remote storage failed, or
    its entry does not verify: `problem` says which).
    """
    def __repr__(self) -> str:
        ...
    @property
    def kind(self) -> str:
        ...
    @property
    def path(self) -> pathlib.Path:
        ...
    @property
    def problem(self) -> str:
        ...
class CacheResult:
    """
    What get_or_build found or built.
    """
    @property
    def entry(self) -> Entry:
        ...
    @property
    def events(self) -> list[CacheEvent]:
        ...
    @property
    def outcome(self) -> str:
        ...
class CacheCounters:
    """
    Counters kept on disk across processes.
    """
    @property
    def builds(self) -> int:
        ...
    @property
    def compile_seconds(self) -> float:
        ...
    @property
    def evictions(self) -> int:
        ...
    @property
    def hits(self) -> int:
        ...
    @property
    def misses(self) -> int:
        ...
    @property
    def quarantines(self) -> int:
        ...
    @property
    def saved_seconds(self) -> float:
        ...
class CacheStats:
    """
    What the cache holds, and its counters.
    """
    @property
    def builds_in_flight(self) -> int:
        ...
    @property
    def failed_sources(self) -> int:
        ...
    @property
    def counters(self) -> CacheCounters:
        ...
    @property
    def entries(self) -> int:
        ...
    @property
    def newest_use(self) -> float:
        ...
    @property
    def oldest_use(self) -> float:
        ...
    @property
    def total_bytes(self) -> int:
        ...
class VerifyProblem:
    """
    One bad (or stale) entry found by verify().
    """
    @property
    def path(self) -> pathlib.Path:
        ...
    @property
    def problem(self) -> str:
        ...
    @property
    def repaired(self) -> bool:
        ...
class VerifyReport:
    """
    What verify() checked and found.
    """
    @property
    def entries_checked(self) -> int:
        ...
    @property
    def problems(self) -> list[VerifyProblem]:
        ...
    @property
    def stale(self) -> list[VerifyProblem]:
        ...
class PruneResult:
    """
    What prune() removed.
    """
    @property
    def freed_bytes(self) -> int:
        ...
    @property
    def removed(self) -> int:
        ...
class ModuleCache:
    """
    The on-disk, content-addressed cache of compiled modules.
    Lookups take no lock and verify entries; builds take a per-key lock.
    """
    @staticmethod
    def check_key(key: str) -> None:
        ...
    @staticmethod
    def default_root() -> pathlib.Path:
        ...
    def __init__(self, root: os.PathLike | str | bytes | None = None, lock_timeout: typing.SupportsFloat | typing.SupportsIndex = 1800.0, max_total_bytes: typing.SupportsInt | typing.SupportsIndex | None = None, compile_jobs: typing.SupportsInt | typing.SupportsIndex = 0, read_only: bool = False, shared_roots: collections.abc.Sequence[os.PathLike | str | bytes] = [], shared_owner: typing.SupportsInt | typing.SupportsIndex | None = None, slot_dir: os.PathLike | str | bytes | None = None) -> None:
        """
        Opens the cache at `root` (created if needed). read_only: use its entries and
        never write there. shared_roots: read-only caches looked up first.
        shared_owner: a uid trusted besides this user and root, as the owner of
        read-only caches and of the directories above a root. slot_dir: where the
        compile slots live (None: this user's machine-wide default).
        """
    def adopt(self, key: str, pack: bytes) -> CacheResult:
        """
        Publishes the pack of an entry of another cache (export_entry) once it
        verifies as a local entry would: CacheError says what does not. Returns a
        CacheResult.
        """
    def export_entry(self, key: str) -> bytes | None:
        """
        The verified entry of `key` as bytes (a pack: its metadata and files, for
        adopt), or None when there is no valid one. The one way entries leave a cache.
        """
    def clear(self) -> int:
        """
        Removes every entry and resets the counters; returns how many entries.
        """
    def entry_dir(self, key: str) -> pathlib.Path:
        ...
    def evict(self, key: str) -> bool:
        """
        Removes one entry; returns whether it existed.
        """
    def find_export(self, node_key: str) -> Entry | None:
        """
        The verified entry that exports the node `node_key`, found through the
        node index (then the shared read-only caches), or None. An index file
        that names no such entry is removed. ValueError for a bad key.
        """
    def flush_counters(self) -> None:
        """
        Writes the counters this object gathered to disk now.
        """
    def get_or_build(self, key: str, build: collections.abc.Callable) -> CacheResult:
        """
        Returns a CacheResult. On a miss, calls build(staging_dir) with the key's
        lock held; it writes the entry's files and returns None or a dict with
        kind, label, environment, key_material, command, compile_seconds and
        exports (node keys, indexed for find_export).
        """
    def keep_failed_source(self, key: str, source: str) -> pathlib.Path:
        ...
    def keep_file_digests(self) -> None:
        """
        Makes this cache's records the machine's memo of the hashes of source
        files (headers, the files a graph's code came from), as ccache's inode
        cache: a file whose times changed but not its content is hashed once
        per machine. Nothing for a read-only cache.
        """
    def list(self) -> list[Entry]:
        """
        Every entry (metadata only, not verified), sorted by key.
        """
    def lookup(self, key: str, events: builtins.list | None = None) -> Entry | None:
        """
        The verified entry, or None (a damaged one is quarantined). Takes no lock.
        events: a list that gets what the lookup did (CacheEvent), e.g. a quarantine.
        """
    def note_hit(self, saved_seconds: typing.SupportsFloat = 0.0) -> None:
        """
        Counts a hit served from lookup() (an index of the caller's named it),
        and the seconds it saved.
        """
    def read_entry_file(
        self, key: str, name: str, events: builtins.list | None = None
    ) -> bytes | None:
        """
        The bytes of the file `name` of the verified entry of `key` (this cache's,
        else a shared read-only cache's), if they have the size and SHA-256 its
        metadata records; else None. events: a list that gets what the lookup did.
        """
    def replace(
        self, key: str, files: collections.abc.Mapping[str, bytes], record: dict
    ) -> CacheResult:
        """
        Publishes an entry of `files` (name -> bytes, plain names) described by
        `record` (kind, label, environment, key_material, compile_seconds), in
        place of this cache's entry of `key`, valid or not (the shared read-only
        caches are not asked), under the key's lock. Returns a CacheResult.
        """
    def read_record(self, kind: str, name: str) -> bytes | None:
        """
        The data of the record `name` of `kind` (derived state kept beside the
        entries), or None: none, not trusted, or damaged (then removed). The
        shared read-only caches are asked after this one. ValueError for a bad
        kind (1 to 16 of [a-z]) or name (a key).
        """
    def record_names(self, kind: str) -> builtins.list[str]:
        """
        The names of this cache's records of `kind`, sorted.
        """
    def remove_record(self, kind: str, name: str) -> bool:
        """
        Removes the record; returns whether there was one.
        """
    def write_record(self, kind: str, name: str, data: bytes) -> bool:
        """
        Publishes the record (one rename, mode 0600); False when it cannot be
        written (a read-only cache, an unusable directory).
        """
    def prune(self, max_total_bytes: typing.SupportsInt | typing.SupportsIndex | None = None, older_than: typing.SupportsFloat | typing.SupportsIndex | None = None, keep: str = '') -> PruneResult:
        """
        Removes entries unused for `older_than` seconds, then least recently
        used ones until the total is at most `max_total_bytes`.
        """
    def quarantine(self, key: str, problem: str, holding: str = '') -> bool:
        """
        Moves the entry aside (it failed to load), only if it still holds the file
        `holding` (when given); returns whether it was moved.
        """
    def stats(self) -> CacheStats:
        """
        Entry count, total size, builds in flight, last-use range and counters.
        """
    def sweep(self) -> int:
        """
        Removes what killed builds left behind; returns how many directories.
        """
    def verify(self, repair: bool = False) -> VerifyReport:
        """
        Checks every entry (files, hashes, metadata, owners, modes); with repair,
        quarantines the bad ones. Returns a VerifyReport.
        """
    @property
    def compile_jobs(self) -> int:
        """
        Compiler processes at once across this user's processes (0: the CPUs usable).
        """
    @property
    def max_total_bytes(self) -> int | None:
        ...
    @property
    def read_only(self) -> bool:
        ...
    @property
    def root(self) -> pathlib.Path:
        ...
    @property
    def shared_owner(self) -> builtins.int | None:
        ...
    @property
    def shared_roots(self) -> builtins.list[pathlib.Path]:
        ...
    @property
    def slot_dir(self) -> pathlib.Path | None:
        """
        The configured compile slot directory, or None (the machine-wide default).
        """
class CompileSlot:
    """
    One of the compile slots that bound this user's compilers on the
    machine, held until release() or the end of a with block. Builds
    hold one around each compiler run.
    """
    def __enter__(self) -> CompileSlot:
        ...
    def __exit__(self, *args) -> None:
        ...
    def __init__(self, cache: ModuleCache) -> None:
        """
        Waits for a free slot of cache.compile_jobs in the cache's slot directory, at
        most its lock timeout (then LockTimeout); Ctrl-C stops the wait.
        """
    def release(self) -> None:
        """
        Frees the slot now, if held.
        """
    @property
    def index(self) -> int:
        """
        The slot's number.
        """
    @property
    def path(self) -> pathlib.Path:
        """
        The slot's lock file.
        """
class OptLevel:
    """
    Optimisation level: -O0 to -O3.
    
    Members:
    
      O0
    
      O1
    
      O2
    
      O3
    """
    O0: typing.ClassVar[OptLevel]
    O1: typing.ClassVar[OptLevel]
    O2: typing.ClassVar[OptLevel]
    O3: typing.ClassVar[OptLevel]
    __members__: typing.ClassVar[dict[str, OptLevel]]
    @typing.overload
    def __eq__(self, other: OptLevel) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: OptLevel) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class DebugInfo:
    """
    Whether to emit debug information (-g).
    
    Members:
    
      NO
    
      YES
    """
    NO: typing.ClassVar[DebugInfo]
    YES: typing.ClassVar[DebugInfo]
    __members__: typing.ClassVar[dict[str, DebugInfo]]
    @typing.overload
    def __eq__(self, other: DebugInfo) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: DebugInfo) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class CompileJob:
    """
    One source file to compile into a shared library.
    """
    debug_info: DebugInfo
    opt_level: OptLevel
    def __init__(self) -> None:
        ...
    @property
    def depfile(self) -> pathlib.Path:
        """
        Where the compile step writes the files it read (-MD -MF), or empty.
        """
    @depfile.setter
    def depfile(self, arg0: os.PathLike | str | bytes) -> None:
        ...
    @property
    def flags(self) -> list[str]:
        ...
    @flags.setter
    def flags(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def include_dirs(self) -> list[str]:
        ...
    @include_dirs.setter
    def include_dirs(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def lib_dirs(self) -> list[str]:
        ...
    @lib_dirs.setter
    def lib_dirs(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def libraries(self) -> list[str]:
        ...
    @libraries.setter
    def libraries(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def output(self) -> pathlib.Path:
        ...
    @output.setter
    def output(self, arg0: os.PathLike | str | bytes) -> None:
        ...
    @property
    def source(self) -> pathlib.Path:
        ...
    @source.setter
    def source(self, arg0: os.PathLike | str | bytes) -> None:
        ...
    @property
    def unkeyed_flags(self) -> list[str]:
        """
        Flags for the compile step that no cache key covers (a prelude).
        """
    @unkeyed_flags.setter
    def unkeyed_flags(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
class Compiler:
    """
    The compiler interface.
    """
class RemoteStorage:
    """
    A store of whole cache entries that machines share, for build_module's
    `remote`. Subclasses implement get(key) -> bytes | None (the pack stored
    under the key, or None) and put(key, pack: bytes) -> None. build_module
    calls get on a local miss, with the key's lock held, and verifies what it
    returns as a local entry; it calls put after it publishes a module it
    built. Both are called with the GIL, from the thread that called
    build_module, and must end within a deadline of their own. An Exception
    they raise is a failure of the storage (a 'remote_failed' CacheEvent):
    the module is compiled here.
    """
    def __init__(self) -> None:
        ...
    def get(self, key: str) -> bytes | None:
        """
        The pack stored under `key`, or None (for subclasses to implement).
        """
    def put(self, key: str, pack: bytes) -> None:
        """
        Stores `pack` under `key`, or gives up (for subclasses to implement).
        """
class SystemCompiler(Compiler):
    """
    A real g++ or clang++, run with posix_spawnp.
    """
    def __init__(self, cxx: str = '', launcher: str = '', timeout: typing.SupportsFloat | typing.SupportsIndex = 600.0, version_records: ModuleCache | None = None) -> None:
        ...
    def command_lines(self, job: CompileJob) -> list[list[str]]:
        """
        The command line(s) compile() would run.
        """
    def compile(self, job: CompileJob) -> dict:
        """
        Compiles; raises CompileError on failure.
        """
    def compile_header(self, job: CompileJob) -> dict:
        """
        Compiles the header job.source into the precompiled header job.output;
        raises CompileError on failure.
        """
    def header_command_line(self, job: CompileJob) -> list[str]:
        """
        The command line compile_header() would run.
        """
    def key_material(self) -> str:
        """
        The compiler identity as stable text, for cache keys.
        """
    @property
    def identity(self) -> dict:
        """
        dict(path, version, launcher): what about the compiler enters keys.
        """
class PreludeRequest:
    """
    A precompiled header a module may be compiled with.
    """
    extra: str
    header_text: str
    def __init__(self, header_text: str, extra: str = '') -> None:
        ...
class TranslationUnit:
    """
    A unit compiled on its own (a cache entry) and linked into a module.
    """
    label: str
    source: str
    exports: list[str]
    def __init__(self, source: str, label: str = '', exports: collections.abc.Sequence[str] = []) -> None:
        ...
class BuiltUnit:
    """
    What became of one unit while a module was built.
    """
    @property
    def compile_seconds(self) -> float:
        ...
    @property
    def key(self) -> str:
        ...
    @property
    def label(self) -> str:
        ...
    @property
    def outcome(self) -> str:
        ...
class ModuleRequest:
    """
    Everything build_module needs to know about one module.
    """
    job: CompileJob
    prelude: PreludeRequest | None
    source: str
    def copy(self) -> ModuleRequest:
        """
        A copy that shares no object with this one (for another thread).
        """
    def __init__(self) -> None:
        ...
    shared_code: list[str]
    """With units: the support code several of them may hold; a name defined
    in several units by one piece of it is merged at the link."""
    @property
    def covered_header_dirs(self) -> list[str]:
        """
        Header directories the key covers (not tracked).
        """
    @covered_header_dirs.setter
    def covered_header_dirs(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def environment(self) -> str:
        """
        Recorded in the entries it builds (exports compare it).
        """
    @environment.setter
    def environment(self, arg0: str) -> None:
        ...
    @property
    def exports(self) -> list[str]:
        """
        The node keys whose functions the module exports: recorded in its
        entry for ModuleCache.find_export (not part of the key). ValueError
        from build_module for one that is not a key.
        """
    @exports.setter
    def exports(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def extra(self) -> str:
        """
        Key material beyond the job.
        """
    @extra.setter
    def extra(self, arg0: str) -> None:
        ...
    @property
    def label(self) -> str:
        """
        What it is (op names), for listings.
        """
    @label.setter
    def label(self, arg0: str) -> None:
        ...
    @property
    def units(self) -> list[TranslationUnit]:
        """
        More translation units, compiled on their own and linked with source.
        """
    @units.setter
    def units(self, arg0: collections.abc.Sequence[TranslationUnit]) -> None:
        ...
class BuiltModule:
    """
    A verified module in the cache.
    """
    @property
    def compile_seconds(self) -> float:
        ...
    @property
    def dir(self) -> pathlib.Path:
        ...
    @property
    def events(self) -> list[CacheEvent]:
        ...
    @property
    def headers(self) -> list[HeaderRecord]:
        """
        The headers the entry was compiled with (HeaderRecord).
        """
    @property
    def key(self) -> str:
        ...
    @property
    def library(self) -> pathlib.Path:
        ...
    @property
    def library_file(self) -> str:
        """
        `library` as a str (what a cache hit uses: no pathlib.Path made).
        """
    @property
    def outcome(self) -> str:
        ...
    @property
    def source(self) -> pathlib.Path:
        ...
    @property
    def source_file(self) -> str:
        """
        `source` as a str.
        """
    @property
    def units(self) -> list[BuiltUnit]:
        """
        Each unit, when the module was built here from units.
        """
class Function:
    """
    Function(*, module, orphans=(), unpack_single=True, fallback=None), or
    Function(*, impl, unpack_single=True)

    A compiled function. With module=, calls run the graph module's struct (created now
    from the orphan values); with impl=, calls run that Python callable. A graph call
    returns the single output (unpack_single) or the list of outputs. On a failed
    call, a keyword call or a wrong argument count, fallback(args, kwargs, error,
    failed_block) is called and its result returned.
    """
    # Written by hand (the type is not a pybind11 class; keep this when
    # regenerating): its two constructors and its methods. The attributes
    # opweave stores in an instance's __dict__ are declared once, in
    # opweave.compile.function.Function.
    @typing.overload
    def __new__(
        cls,
        *,
        module: typing.Any,
        orphans: collections.abc.Sequence[typing.Any] = (),
        unpack_single: bool = True,
        fallback: collections.abc.Callable[..., typing.Any] | None = None,
    ) -> Function:
        """
        A compiled graph: calls run the graph module's struct, created now from the
        orphan values (module.abi, the module's graph ABI capsule, names it).
        """
    @typing.overload
    def __new__(
        cls,
        *,
        impl: collections.abc.Callable[..., typing.Any],
        unpack_single: bool = True,
    ) -> Function:
        """
        A function run by a Python callable: calls run impl(*args).
        """
    def call_exact(self, *inputs: typing.Any) -> typing.Any:
        """
        call_exact(*inputs): runs the function on inputs that are already exact values of the
        input types, without converting them or calling the fallback.
        """
    def free(self) -> None:
        """
        free(): releases what the compiled graph keeps between calls (its intermediate
        results), by replacing its instance with a new one made from the same constants.
        """
    def call_with_outputs(
        self, inputs: collections.abc.Sequence[typing.Any], outputs: collections.abc.Sequence[typing.Any]
    ) -> typing.Any:
        """
        call_with_outputs(inputs, outputs): call_exact(*inputs), offering each object of
        outputs (None: nothing) as that output's storage. A compiled op may write its result
        into the object it is offered (a preallocated output) or replace it.
        """
    def __call__(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        Call self as a function.
        """
    @property
    def trust_input(self) -> bool:
        """
        When true, a failed input check raises at once instead of converting the inputs with
        Type.filter and retrying.
        """
    @trust_input.setter
    def trust_input(self, value: bool) -> None:
        ...
    @property
    def is_compiled(self) -> bool:
        """
        True when a compiled graph module runs the calls.
        """
class CellCall:
    """
    CellCall(function, inputs, outputs, updates=())

    function bound to storage cells (tuples of one-element lists): a call, with no
    arguments, passes the input cells' values to function, writes each value of the
    list it returns into the matching output cell, then each (input, output) pair of
    updates' output value into that input cell, and returns that list. When
    function raises an exception with an int failed_node, position_of_error is set
    to it (else it is -1). Instances take attributes.
    """
    # Written by hand (not a pybind11 class). opweave.pytensor sets these:
    nodes: list[typing.Any]
    thunks: list[typing.Any]
    storage_map: dict[typing.Any, list[typing.Any]]
    allow_gc: bool
    need_update_inputs: bool
    time_thunks: bool
    lazy: bool
    position_of_error: int
    def __init__(
        self,
        function: collections.abc.Callable[..., list[typing.Any]],
        inputs: tuple[list[typing.Any], ...],
        outputs: tuple[list[typing.Any], ...],
        updates: tuple[tuple[int, int], ...] = (),
    ) -> None: ...
    def __call__(self) -> list[typing.Any]: ...
    @property
    def function(self) -> collections.abc.Callable[..., list[typing.Any]]: ...
    @property
    def inputs(self) -> tuple[list[typing.Any], ...]: ...
    @property
    def outputs(self) -> tuple[list[typing.Any], ...]: ...
    @property
    def updates(self) -> tuple[tuple[int, int], ...]: ...
class StepRunner:
    """
    StepRunner(n_inputs, n_slots, steps, outputs, *, constants=(), filtered=(), filter=None,
               gc=None, keep=(), on_error=None, unpack_single=True, on_reenter=None)

    Runs a graph as a table of steps that pass values through n_slots slots; a call's
    arguments fill slots 0..n_inputs-1. A step is (0, abi, owner, orphans, inputs,
    outputs, offer), a compiled graph module's instance (created now from the orphans;
    owner is kept alive as long as the runner; offer[j] hands the slot's current value
    to run() as output j's storage), or (1, callable, inputs, outputs), where
    callable(list of input values) returns one value per output. inputs and outputs
    are slot indices. A call returns the outputs' slots as a list (or the single
    output, with unpack_single). gc[k] lists the slots emptied after step k; the slots
    in keep keep their values between calls, and constants' (slot, value) pairs stay;
    every other slot is emptied at the end of every call. Before the steps, each
    argument position in filtered is replaced by filter(position, value). A call with
    keywords or a wrong argument count returns on_error(args, kwargs, None, -1, 0); a
    failed step k returns on_error(args, None, error, k, failed_block) (k is -1 when
    the filter failed), or raises without on_error. A call made while the runner runs
    (from a Python step) returns on_reenter(*args, **kwargs), or raises RuntimeError
    without it.
    """
    # Written by hand (the type is not a pybind11 class; keep this when regenerating).
    def __new__(
        cls,
        n_inputs: int,
        n_slots: int,
        steps: collections.abc.Sequence[tuple[typing.Any, ...]],
        outputs: collections.abc.Sequence[int],
        *,
        constants: collections.abc.Sequence[tuple[int, typing.Any]] = (),
        filtered: collections.abc.Sequence[int] = (),
        filter: collections.abc.Callable[[int, typing.Any], typing.Any] | None = None,
        gc: collections.abc.Sequence[collections.abc.Sequence[int]] | None = None,
        keep: collections.abc.Sequence[int] = (),
        on_error: collections.abc.Callable[..., typing.Any] | None = None,
        unpack_single: bool = True,
        on_reenter: collections.abc.Callable[..., typing.Any] | None = None,
    ) -> StepRunner:
        """
        Create and return a new object.  See help(type) for accurate signature.
        """
    def call_exact(self, *args: typing.Any) -> typing.Any:
        """
        call_exact(*args): runs the steps on exactly n_inputs arguments (the filtered ones
        through filter), never calling on_error: a failure raises its exception.
        """
    def __call__(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        Call self as a function.
        """
    @property
    def n_inputs(self) -> int:
        """
        The number of arguments a call takes.
        """
    @property
    def n_steps(self) -> int:
        """
        The number of steps.
        """
def assemble_module(spec: ModuleSpec) -> AssembledModule:
    """
    Lays out a graph module from its parts (see module_source.hpp). Raises
    ValueError for an inconsistent spec (a step id that is not positive or not
    unique, a step without a run function, a function name that is not an
    identifier, an origin index out of range, a negative count).
    """
def build_module(cache: ModuleCache, compiler: Compiler, request: ModuleRequest, on_prelude_missing: typing.Any = None, remote: RemoteStorage | None = None) -> BuiltModule:
    """
    The verified BuiltModule for `request`, compiled into the cache on a miss.
    Calls on_prelude_missing(request) (if given) when a compile could use
    request.prelude, which is not built yet: before it, or with units that
    take every compile job, once they are compiled. With a `remote`
    RemoteStorage, a miss first asks it for the entry (one that verifies is
    a hit, with a 'fetched' event), and a module built here is put there.
    Raises CompileError on a failed compile, LockTimeout, CacheError, and
    KeyboardInterrupt (or whatever a signal handler raises) when interrupted.
    """
def build_prelude(cache: ModuleCache, compiler: Compiler, request: ModuleRequest) -> CacheResult:
    """
    Returns the CacheResult of request.prelude's entry, building it on a miss.
    Raises CompileError if the header does not compile.
    """
def cancel_builds() -> None:
    """
    Makes every compile and lock wait in progress or to come in this process stop
    (raising Interrupted): for an interpreter that exits after an interrupt.
    """
def code_started(code: typing.Any, offset: typing.Any) -> typing.Any:
    """
    sys.monitoring's PY_START callback of the dependency windows: notes the
    code in every open window, and returns DISABLE.
    """
def files_changed(files: collections.abc.Sequence[tuple[str, int, int, int, str]]) -> str:
    """
    Empty when every file of `files` (record_files' tuples) has its recorded
    content, else why not. One stat(2) each; a hash only where the stat differs.
    """
def filesystem_now_ns() -> int:
    """
    The filesystem clock now, in ns since the epoch (for record_files).
    """
def find_compiler(cxx: str = '') -> str:
    """
    The absolute path of the C++ compiler: `cxx`, else $CXX, else the
    first of c++, g++, clang++ on PATH. Raises OpweaveError if none.
    """
@typing.overload
def headers_changed(origin: BuiltModule) -> str:
    """
    '' when every header `origin` (a BuiltModule or Entry) was compiled with
    still has its recorded content; otherwise why not. A module loaded from
    it earlier in the process passes this before it is used again.
    """
@typing.overload
def headers_changed(origin: Entry) -> str:
    """
    '' when every header `origin` (a BuiltModule or Entry) was compiled with
    still has its recorded content; otherwise why not. A module loaded from
    it earlier in the process passes this before it is used again.
    """
def namespace_digest(namespace: typing.Any, names: tuple[str, ...], other: collections.abc.Callable[[typing.Any], str]) -> str:
    """
    values_digest of the values the tuple `names` holds in `namespace` (a module's
    globals or a class) now; a name it does not have counts as missing.
    """
def pause_dep_windows(pause: bool) -> None:
    """
    Stops noting anything in the open DepWindows (True) until as many calls
    with False: the work of recording itself is no dependency.
    """
def record_files(paths: collections.abc.Sequence[str], since_ns: typing.SupportsInt | typing.SupportsIndex) -> list[tuple[str, int, int, int, str]]:
    """
    (path, size, mtime_ns, ctime_ns, sha256) of each of the files `paths`
    (absolute), read by a step that began at `since_ns`; no hash ("") when a
    file changed since then or is not a regular file (files_changed then finds
    it changed).
    """
def request_key(compiler: Compiler, request: ModuleRequest) -> str:
    """
    The key build_module looks up for `request` (its units' keys included).
    """
def compile_jobs(requested: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    The compiles a build runs at once for compile_jobs=`requested`: itself, or
    when 0, the CPUs this process may use (its affinity and cgroup limit).
    """
def unit_keys(compiler: Compiler, request: ModuleRequest) -> list[str]:
    """
    The keys build_module files the units of `request` under, in order.
    """
def prelude_key(compiler: Compiler, job: CompileJob, header_text: str, extra: str = '') -> str:
    """
    The cache key of the prelude `header_text` for modules compiled with `job`.
    """
def prelude_text_of(sources: list[str]) -> str:
    """
    The prelude of `sources`: the lines every one that includes Python.h
    starts its includes with (standard and NumPy headers only); empty when
    none includes it. A source compiles with a prelude only when its includes
    start with the prelude's text.
    """
def same_values(namespace: typing.Any, names: tuple[str, ...], values: tuple[typing.Any, ...]) -> bool:
    """
    Whether each of `names` of `namespace` still holds the very object of
    `values` (take_values).
    """
def sha256_hex(data: bytes) -> str:
    """
    SHA-256 of `data` (bytes), as 64 lower-case hex characters.
    """
def supports_prelude(compiler: Compiler) -> bool:
    """
    Whether modules compiled by `compiler` can use a precompiled prelude
    (GCC without a launcher).
    """
def take_values(namespace: typing.Any, names: set[str]) -> tuple[tuple[str, ...], tuple[typing.Any, ...]]:
    """
    (names, values): the names of `namespace` (a module's globals, or a class)
    that are in the set `names`, sorted, and the objects they hold.
    """
CACHE_FORMAT_VERSION: int = 2
DEFAULT_LOCK_TIMEOUT: float  # CacheOptions::lock_timeout_seconds
GRAPH_LAYOUT_VERSION: int = 2
GRAPH_MODULE_NAME: str = 'opweave_graph'
PYTHON_PRELUDE: str  # the first lines of every module
MODULE_LAYOUT_VERSION: int = 2
__version__: str  # include/opweave/version.hpp
def values_of(namespace: typing.Any, names: tuple[str, ...]) -> tuple[typing.Any, ...] | None:
    """
    The objects the names (a tuple) hold in `namespace` (a module's globals, or
    a class), or None when one is missing.
    """
def values_digest(names: tuple[str, ...], values: tuple[typing.Any, ...], other: collections.abc.Callable[[typing.Any], str]) -> str:
    """
    A digest of `values`, the objects the tuple `names` holds: numbers, strings
    and None by value, tuples and frozensets by their items, functions, classes
    and modules by module and qualified name; other(value) gives the text of any
    other value (see _dep_digest.py).
    """
def zstd_decompress(frame: bytes, max_bytes: int) -> bytes | None:
    """
    The content of one Zstandard frame (how precompiled preludes are kept),
    or None if it is damaged, has no recorded size, is over `max_bytes`, or
    libzstd.so.1 cannot be loaded.
    """
def zstd_compress(data: bytes, level: int = 3) -> bytes | None:
    """
    `data` as one Zstandard frame that records its size, or None if
    libzstd.so.1 cannot be loaded.
    """

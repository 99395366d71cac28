"""This process's state of the C back end, in one object: :data:`CONTEXT`.

Every memo, registry, choice, connection and background build of
``opweave.link.c`` that outlives a call is a field of :class:`Context`, and
the modules reach it as ``CONTEXT.<field>``: no other module of the package
keeps state at module level (``tests/python/test_layering.py`` checks it).
So what a process remembers is listed in one place, and so is what a forked
child keeps of it.

Fork (:meth:`Context.after_fork_in_child`, the one rule): a child runs the
same files, modules and caches as its parent, so it keeps the memos, the
registries and the choices; it drops what it cannot share or does not have:
the remote tier's connections (a socket shared with the parent would mix
replies), the background prelude builds (their threads are the parent's),
every lock (another thread may have held one at the fork), and the
recordings that other threads had open (closed, and marked incomplete, by
the rule :mod:`._dep_window` adds to :attr:`Context.fork_rules`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CONTEXT", "Context"]


class Context:
    """The state of the C back end in one process (see the module). A plain
    class with slots: a fresh process creates it at import, on the path of
    every hit."""

    __slots__ = (
        "caches",
        "class_texts",
        "code_names",
        "compile_jobs",
        "compilers",
        "dist_maps",
        "exports",
        "file_records",
        "fork_rules",
        "graphs",
        "hook_signatures",
        "kernel_answers",
        "kernel_providers",
        "kernels_declined",
        "loaded_infos",
        "loaded_modules",
        "memo_snapshots",
        "method_digests",
        "module_files",
        "module_infos",
        "module_texts",
        "modules_watch",
        "node_blocks",
        "node_codes",
        "path_roots",
        "portable_roots",
        "prelude_builds",
        "prelude_exit_hook",
        "prelude_failed",
        "prelude_interrupted",
        "prelude_lock",
        "private_cache",
        "process_started",
        "props_texts",
        "record_digests",
        "remote_clients",
        "remote_down_until",
        "remote_warned",
        "value_texts",
        "window_lock",
        "windows",
        "windows_paused",
    )

    def __init__(self) -> None:
        self._choices_and_registries()
        self._memos()
        self._in_progress()

    def _choices_and_registries(self) -> None:
        # --- Choices: the caches and compilers that configurations resolve to.
        # cache settings -> the ModuleCache opened for them (:mod:`._cache_choice`)
        self.caches: dict[tuple[object, ...], Any] = {}
        # the fallback private cache, once made (at most one item)
        self.private_cache: list[Any] = []
        # (cxx, launcher) -> the SystemCompiler found for them (:mod:`._compiler_choice`)
        self.compilers: dict[tuple[str, str], Any] = {}
        # compile__jobs -> the compiles a build runs at once (:mod:`._units`)
        self.compile_jobs: dict[int, int] = {}

        # --- Registries: what code registers with opweave.
        # op class -> the provider of its C code (:mod:`.kernels`)
        self.kernel_providers: dict[type, Callable[[Any], Any]] = {}
        # the kernels that declined a node, logged once each
        self.kernels_declined: set[Any] = set()
        # a provider's answers, one object per equal answer
        self.kernel_answers: dict[Any, Any] = {}
        # functions whose values are part of every memo key beside opweave's own
        # configuration: other libraries' settings their ops' hooks read (:mod:`._node_keys`)
        self.memo_snapshots: list[Callable[[], Any]] = []

    def _memos(self) -> None:
        # --- Memos: what was found or computed once and holds while its inputs do.
        # graph memo key -> (compiled graph, its module, its dependencies),
        # oldest first, bounded (:mod:`._graph_memo`)
        self.graphs: dict[Any, tuple[Any, Any, Any]] = {}
        # node codes by signature, oldest first, bounded (:mod:`._node_memo`)
        self.node_codes: dict[Any, Any] = {}
        # node code key -> (entry key, library) of the module last found
        # exporting it (:mod:`._export_lookup`)
        self.exports: dict[str, tuple[str, str]] = {}
        # imported graph modules, by library path (:mod:`.cmodule`)
        self.loaded_modules: dict[str, Any] = {}
        # stable texts (:mod:`._stable_text`): of classes, of their methods'
        # bytecode, of props objects (id -> (object, text), oldest first), of
        # values, of modules (by name)
        self.class_texts: dict[type, str] = {}
        self.method_digests: dict[type, str] = {}
        self.props_texts: dict[int, tuple[Any, str]] = {}
        self.value_texts: dict[Any, str] = {}
        self.module_texts: dict[str, str] = {}
        # function -> (accepts **kwargs, its keyword-capable parameters) (:mod:`.hooks`)
        self.hook_signatures: dict[Any, tuple[bool, frozenset[str]]] = {}
        # the names code objects name, by the set of their ids: the windows of a
        # graph's nodes run the same hooks again and again (:mod:`._dep_collect`)
        self.code_names: dict[frozenset[int], tuple[list[Any], set[str]]] = {}
        # (path, size, mtime_ns) of a RECORD -> its digest (:mod:`._dep_list`)
        self.record_digests: dict[tuple[str, int, int], str] = {}
        # modules (:mod:`._dep_modules`): name -> (the module, its info); a
        # module's file -> its name; the last loaded_modules() (at most one
        # item) and the watch of sys.modules it holds for (at most one); file ->
        # its record; when this process started, in ns (at most one item)
        self.module_infos: dict[str, tuple[Any, Any]] = {}
        self.module_files: dict[str, str] = {}
        self.loaded_infos: list[Any] = []
        self.modules_watch: list[Any] = []
        self.file_records: dict[str, Any] = {}
        self.process_started: list[int] = []
        # import root -> top-level name -> its distribution (:mod:`._dists`)
        self.dist_maps: dict[str, dict[str, Any]] = {}
        # sys.path -> its import roots, longest first (:mod:`._dists`)
        self.path_roots: dict[tuple[str, ...], tuple[str, ...]] = {}
        # sys.path -> (its roots, their names) (:mod:`._portable`)
        self.portable_roots: dict[tuple[str, ...], tuple[tuple[str, ...], frozenset[str]]] = {}

    def _in_progress(self) -> None:
        # --- Recordings open now (:mod:`._dep_window`, :mod:`._node_memo`).
        self.window_lock: threading.Lock = threading.Lock()
        # the dependency recordings open now, in any thread
        self.windows: list[Any] = []
        # how deep recording is paused
        self.windows_paused: int = 0
        # the node-code blocks open now (computed_together)
        self.node_blocks: list[Any] = []

        # --- Connections and background work.
        # (url, timeout, pid) -> its Redis client (:mod:`._remote`)
        self.remote_clients: dict[tuple[str, float, int], Any] = {}
        # until when (time.monotonic()) the remote tier is not asked again
        self.remote_down_until: float = 0.0
        # the kinds of once-per-process warnings given about it
        self.remote_warned: set[str] = set()
        # guards prelude_builds and prelude_failed (:mod:`._prelude`)
        self.prelude_lock: threading.Lock = threading.Lock()
        # (cache root, prelude key) -> its build's thread, while it runs
        self.prelude_builds: dict[tuple[str, str], threading.Thread] = {}
        # the prelude builds that failed in this process
        self.prelude_failed: set[tuple[str, str]] = set()
        # whether the exit hook that waits for them is registered
        self.prelude_exit_hook: bool = False
        # whether a compile of this process was interrupted (exit waits for none)
        self.prelude_interrupted: bool = False

        # what else a forked child must do, run by after_fork_in_child
        self.fork_rules: list[Callable[[], None]] = []

    def after_fork_in_child(self) -> None:
        """The fork rule (see the module): new locks, no connections and no
        background builds of the parent's, then :attr:`fork_rules`."""
        self.window_lock = threading.Lock()
        self.prelude_lock = threading.Lock()
        self.prelude_builds.clear()
        for client in self.remote_clients.values():
            client.close()
        self.remote_clients.clear()
        for rule in self.fork_rules:
            rule()


#: This process's context.
CONTEXT = Context()

os.register_at_fork(after_in_child=CONTEXT.after_fork_in_child)

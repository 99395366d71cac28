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
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CONTEXT", "Context"]


@dataclass(eq=False)
class Context:
    """The state of the C back end in one process (see the module)."""

    # --- Choices: the caches and compilers that configurations resolve to.
    #: cache settings -> the ModuleCache opened for them (:mod:`._cache_choice`)
    caches: dict[tuple[object, ...], Any] = field(default_factory=dict)
    #: the fallback private cache, once made (at most one item)
    private_cache: list[Any] = field(default_factory=list)
    #: (cxx, launcher) -> the SystemCompiler found for them (:mod:`._compiler_choice`)
    compilers: dict[tuple[str, str], Any] = field(default_factory=dict)

    # --- Registries: what code registers with opweave.
    #: op class -> the provider of its C code (:mod:`.kernels`)
    kernel_providers: dict[type, Callable[[Any], Any]] = field(default_factory=dict)
    #: the kernels that declined a node, logged once each
    kernels_declined: set[Any] = field(default_factory=set)
    #: a provider's answers, one object per equal answer
    kernel_answers: dict[Any, Any] = field(default_factory=dict)
    #: functions whose values are part of every memo key beside opweave's own
    #: configuration: other libraries' settings their ops' hooks read (:mod:`._node_keys`)
    memo_snapshots: list[Callable[[], Any]] = field(default_factory=list)

    # --- Memos: what was found or computed once and holds while its inputs do.
    #: graph memo key -> (compiled graph, its module, its dependencies),
    #: oldest first, bounded (:mod:`._graph_memo`)
    graphs: dict[Any, tuple[Any, Any, Any]] = field(default_factory=dict)
    #: node codes by signature, oldest first, bounded (:mod:`._node_memo`)
    node_codes: dict[Any, Any] = field(default_factory=dict)
    #: node code key -> (entry key, library) of the module last found
    #: exporting it (:mod:`._export_lookup`)
    exports: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: imported graph modules, by library path (:mod:`.cmodule`)
    loaded_modules: dict[str, Any] = field(default_factory=dict)
    #: stable texts (:mod:`._stable_text`): of classes, of their methods'
    #: bytecode, of props objects (id -> (object, text), oldest first), of
    #: values, of modules (by name)
    class_texts: dict[type, str] = field(default_factory=dict)
    method_digests: dict[type, str] = field(default_factory=dict)
    props_texts: dict[int, tuple[Any, str]] = field(default_factory=dict)
    value_texts: dict[Any, str] = field(default_factory=dict)
    module_texts: dict[str, str] = field(default_factory=dict)
    #: function -> (accepts **kwargs, its keyword-capable parameters) (:mod:`.hooks`)
    hook_signatures: dict[Any, tuple[bool, frozenset[str]]] = field(default_factory=dict)
    #: the names code objects name, by the set of their ids: the windows of a
    #: graph's nodes run the same hooks again and again (:mod:`._dep_collect`)
    code_names: dict[frozenset[int], tuple[list[Any], set[str]]] = field(default_factory=dict)
    #: (path, size, mtime_ns) of a RECORD -> its digest (:mod:`._dep_list`)
    record_digests: dict[tuple[str, int, int], str] = field(default_factory=dict)
    #: modules (:mod:`._dep_modules`): name -> (the module, its info); a
    #: module's file -> its name; the last loaded_modules() (at most one
    #: item) and the watch of sys.modules it holds for (at most one); file ->
    #: its record; when this process started, in ns (at most one item)
    module_infos: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    module_files: dict[str, str] = field(default_factory=dict)
    loaded_infos: list[Any] = field(default_factory=list)
    modules_watch: list[Any] = field(default_factory=list)
    file_records: dict[str, Any] = field(default_factory=dict)
    process_started: list[int] = field(default_factory=list)
    #: import root -> top-level name -> its distribution (:mod:`._dists`)
    dist_maps: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: sys.path -> its import roots, longest first (:mod:`._dists`)
    path_roots: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    #: sys.path -> (its roots, their names) (:mod:`._portable`)
    portable_roots: dict[tuple[str, ...], tuple[tuple[str, ...], frozenset[str]]] = field(
        default_factory=dict
    )

    # --- Recordings open now (:mod:`._dep_window`, :mod:`._node_memo`).
    window_lock: threading.Lock = field(default_factory=threading.Lock)
    #: the dependency recordings open now, in any thread
    windows: list[Any] = field(default_factory=list)
    #: how deep recording is paused
    windows_paused: int = 0
    #: the node-code blocks open now (computed_together)
    node_blocks: list[Any] = field(default_factory=list)

    # --- Connections and background work.
    #: (url, timeout, pid) -> its Redis client (:mod:`._remote`)
    remote_clients: dict[tuple[str, float, int], Any] = field(default_factory=dict)
    #: until when (time.monotonic()) the remote tier is not asked again
    remote_down_until: float = 0.0
    #: the kinds of once-per-process warnings given about it
    remote_warned: set[str] = field(default_factory=set)
    #: guards prelude_builds and prelude_failed (:mod:`._prelude`)
    prelude_lock: threading.Lock = field(default_factory=threading.Lock)
    #: (cache root, prelude key) -> its build's thread, while it runs
    prelude_builds: dict[tuple[str, str], threading.Thread] = field(default_factory=dict)
    #: the prelude builds that failed in this process
    prelude_failed: set[tuple[str, str]] = field(default_factory=set)
    #: whether the exit hook that waits for them is registered
    prelude_exit_hook: bool = False
    #: whether a compile of this process was interrupted (exit waits for none)
    prelude_interrupted: bool = False

    #: what else a forked child must do, run by after_fork_in_child
    fork_rules: list[Callable[[], None]] = field(default_factory=list)

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

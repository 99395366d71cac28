"""Recording what ops and types read while they write a graph's C code.

``with recording() as found:`` around the calls that ask ops and types for
their code (their hooks) gathers, in ``found``:

- ``codes``: every code object that started running (on Python >= 3.12
  through ``sys.monitoring``, each code object once per window; before that
  through a frame evaluation function of the core: see
  cpp/bindings/bind_deps.cpp);
- ``opened``: every file Python code opened, for reading (``"r"``) or
  writing (``"w"``), and every directory it listed (``"l"``: ``os.listdir``,
  ``os.scandir``, ``glob``), as ``(how, path)`` (the audit events);
- ``changed``: the globals of the modules loaded when it opened that changed
  while it was open (the ops' code keeps state there);
- ``env``: every environment variable read through ``os.environ`` or
  ``os.getenv``, with its value, or None when it was not set;
- ``included``: the dependencies of code served from a memo inside the
  window (a node's code), which the caller adds to its own.

Windows nest (a node's code computed while a graph's is): what happens in
an inner window is seen by every open one. Outside a window, nothing is
recorded and nothing costs: the audit hook returns at once, ``os.environ``
is its own class again and no event is monitored. :mod:`._dep_list` turns a
recording into a dependency list.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from opweave import _core
from opweave.link.c._context import CONTEXT

__all__ = ["Recording", "include", "paused", "recording"]


class Recording:
    """What one window saw (see the top)."""

    __slots__ = (
        "changed",
        "codes",
        "complete",
        "env",
        "included",
        "opened",
        "start_ns",
        "thread",
        "window",
    )

    def __init__(self) -> None:
        self.window = _core.DepWindow()
        self.codes: list[Any] = []
        self.opened: list[tuple[str, str]] = []  # (how, path)
        self.changed: list[dict[str, Any]] = []  # module namespaces changed meanwhile
        self.env: dict[str, str | None] = {}
        self.included: list[Any] = []
        self.start_ns = 0
        self.thread = threading.get_ident()
        # False when the code that ran could not be seen (another tool holds
        # every sys.monitoring slot): then nothing may be memoised from it.
        self.complete = True


class _RecordingEnviron(os._Environ):  # type: ignore[name-defined,misc]
    """``os.environ``'s class while a window is open: each read is noted in
    every open recording (``get``, ``in`` and ``os.getenv`` read through
    ``__getitem__``)."""

    def __getitem__(self, key: str) -> str:
        try:
            value: str = super().__getitem__(key)
        except KeyError:
            _note_env(key, None)
            raise
        _note_env(key, value)
        return value


def _note_env(key: Any, value: str | None) -> None:
    if CONTEXT.windows_paused:
        return
    for found in list(CONTEXT.windows):
        found.env.setdefault(str(key), value)


class _Monitoring:
    """sys.monitoring's PY_START events, for the windows (Python >= 3.12)."""

    tool: int | None = None

    @classmethod
    def start(cls, first: bool) -> bool:
        monitoring: Any = getattr(sys, "monitoring", None)
        if monitoring is None:
            return True  # the core's frame evaluation function sees the code
        if cls.tool is None:
            cls.tool = cls._claim(monitoring)
            if cls.tool is None:
                return False
        if first:
            monitoring.set_events(cls.tool, monitoring.events.PY_START)
        monitoring.restart_events()  # what earlier windows disabled runs again
        return True

    @classmethod
    def stop(cls) -> None:
        monitoring: Any = getattr(sys, "monitoring", None)
        if monitoring is not None and cls.tool is not None:
            monitoring.set_events(cls.tool, monitoring.events.NO_EVENTS)

    @staticmethod
    def _claim(monitoring: Any) -> int | None:
        for tool in (4, 3, 5, 2, 1, 0):  # the least likely taken first
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "opweave dependencies")
                monitoring.register_callback(tool, monitoring.events.PY_START, _core.code_started)
                return tool
        return None


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """A window (see the top): what the block's code ran, opened and read."""
    found = Recording()
    with CONTEXT.window_lock:
        first = not CONTEXT.windows
        if first:
            os.environ.__class__ = _RecordingEnviron
        found.complete = _Monitoring.start(first)
        found.start_ns = _core.filesystem_now_ns()
        found.window.open()
        CONTEXT.windows.append(found)
    try:
        yield found
    finally:
        with CONTEXT.window_lock:
            if found in CONTEXT.windows:  # a forked child may have closed it
                _close(found)


def _close(found: Recording) -> None:
    CONTEXT.windows.remove(found)
    found.codes, found.opened, found.changed = found.window.close()
    if not CONTEXT.windows:
        os.environ.__class__ = os._Environ  # type: ignore[attr-defined]
        _Monitoring.stop()


def _close_other_threads_windows() -> None:
    """A forked child has only the thread that forked: the windows of the
    others will never close, so they are closed now (the fork rule of
    :class:`._context.Context`)."""
    here = threading.get_ident()
    for found in [found for found in CONTEXT.windows if found.thread != here]:
        _close(found)
        found.complete = False


CONTEXT.fork_rules.append(_close_other_threads_windows)


def include(dependencies: Any) -> None:
    """Adds ``dependencies`` (of code served from a memo) to every open
    recording."""
    for found in list(CONTEXT.windows):
        found.included.append(dependencies)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Nothing the block does is noted in the open recordings (the work of
    turning a recording into a dependency list, inside an outer window)."""
    _core.pause_dep_windows(True)
    CONTEXT.windows_paused += 1
    try:
        yield
    finally:
        CONTEXT.windows_paused -= 1
        _core.pause_dep_windows(False)

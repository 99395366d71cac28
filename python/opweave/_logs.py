"""opweave's loggers, which import :mod:`logging` only when a record could
go somewhere.

Importing :mod:`logging` (and ``threading``, ``string`` and more with it)
costs a fresh process about 2 ms, a tenth of opweave's share of a cache hit
(docs/cache.md, "Where a fresh process's milliseconds go"). A record is
handled by the handlers someone configured, which takes importing
:mod:`logging`; until anyone has, a DEBUG or INFO record has nowhere to go,
and only WARNING and above reach logging's last resort (standard error).
So a :class:`Logger` forwards everything to ``logging.getLogger(name)`` once
:mod:`logging` is imported, by anyone; before that, it drops DEBUG and INFO
records and imports :mod:`logging` for the others. What is emitted is
exactly what ``logging.getLogger(name)`` would emit, with the caller's file
and line.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["DEBUG", "ERROR", "INFO", "WARNING", "Logger", "get_logger"]

DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40


class Logger:
    """The logger ``name`` of :mod:`logging`, imported when a record of
    some level could be handled (see the top). The methods are those of
    ``logging.Logger`` that opweave uses."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _target(self, level: int) -> Any:
        """``logging.getLogger(name)``, or None when a record of ``level``
        would go nowhere (logging not imported, below WARNING)."""
        if level < WARNING and "logging" not in sys.modules:
            return None
        import logging

        return logging.getLogger(self.name)

    def isEnabledFor(self, level: int) -> bool:
        """Whether a record of ``level`` would be handled."""
        target = self._target(level)
        return target is not None and bool(target.isEnabledFor(level))

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        """Logs ``msg % args`` at ``level``, as ``logging.Logger.log``."""
        self._emit(level, msg, args, kwargs)

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        """Logs at DEBUG."""
        self._emit(DEBUG, msg, args, kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        """Logs at INFO."""
        self._emit(INFO, msg, args, kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        """Logs at WARNING."""
        self._emit(WARNING, msg, args, kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        """Logs at ERROR."""
        self._emit(ERROR, msg, args, kwargs)

    def _emit(self, level: int, msg: object, args: tuple[object, ...], kwargs: Any) -> None:
        target = self._target(level)
        if target is not None:  # its log() checks the level
            # The record names the caller of debug(), info()...: two frames up.
            kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 2
            target.log(level, msg, *args, **kwargs)


def get_logger(name: str) -> Logger:
    """opweave's logger ``name`` (see :class:`Logger`)."""
    return Logger(name)

"""The exceptions opweave raises.

Every exception derives from :class:`OpweaveError`. Errors raised by the C++
core (``opweave._core``) are mapped to these classes with their data kept as
attributes, so callers can inspect the command, the diagnostics or the lock
path instead of parsing messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "BuildInterrupted",
    "CacheError",
    "CompileError",
    "LockTimeout",
    "MissingGXX",
    "OpweaveError",
]

_MAX_SHOWN_DIAGNOSTIC_LINES = 12
_ERROR_LINE = re.compile(r"(?:^|:\s*)(?:fatal )?error\b", re.IGNORECASE)


class OpweaveError(Exception):
    """Base class of every error opweave raises."""


class CacheError(OpweaveError):
    """The module cache cannot be used: bad root directory, bad permissions, or a
    failed filesystem operation. ``path`` names the file or directory involved."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class LockTimeout(CacheError, TimeoutError):
    """A lock was not acquired in time. ``lock_path`` names the lock file,
    ``holder_pid`` the process holding it (0 if unknown), and ``waited_seconds``
    how long this process waited."""

    def __init__(
        self,
        message: str,
        lock_path: str = "",
        waited_seconds: float = 0.0,
        holder_pid: int = 0,
    ) -> None:
        super().__init__(message, lock_path)
        self.lock_path = lock_path
        self.waited_seconds = waited_seconds
        self.holder_pid = holder_pid


class BuildInterrupted(OpweaveError):
    """A compile or a lock wait was stopped: the interpreter is exiting after
    an interrupt (in the main thread, the interrupt's own exception, such as
    KeyboardInterrupt, is raised instead). Nothing was published."""


class CompileError(OpweaveError):
    """A C/C++ compilation failed.

    Attributes: ``command`` (the argv that failed), ``diagnostics`` (the
    compiler's full output), ``source`` (the path of the source it compiled,
    kept on disk), and ``exit_status`` (-1 if the compiler did not exit
    normally). ``str()`` shows the first error first, in a few lines.
    """

    def __init__(
        self,
        summary: str,
        command: Sequence[str] = (),
        diagnostics: str = "",
        source: str = "",
        exit_status: int = -1,
    ) -> None:
        super().__init__(summary)
        self.summary = summary
        self.command = list(command)
        self.diagnostics = diagnostics
        self.source = source
        self.exit_status = exit_status

    @property
    def first_error(self) -> str:
        """The compiler's first error line, verbatim, or "" if there is none."""
        for line in self.diagnostics.splitlines():
            if _ERROR_LINE.search(line):
                return line.strip()
        return ""

    def __str__(self) -> str:
        lines = self.diagnostics.splitlines()
        start = 0
        for index, line in enumerate(lines):
            if _ERROR_LINE.search(line):
                start = index
                break
        shown = lines[start : start + _MAX_SHOWN_DIAGNOSTIC_LINES]
        parts = [self.summary]
        if shown:
            parts.append("")
            parts.extend(shown)
            hidden = len(lines) - len(shown)
            if hidden > 0:
                parts.append(f"... ({hidden} more lines in .diagnostics)")
        if self.source:
            parts.append(f"source: {self.source}")
        if self.command:
            parts.append("command: " + " ".join(self.command))
        return "\n".join(parts)


class MissingGXX(OpweaveError):
    """No C++ compiler is configured (``config.cxx`` is empty), so C code
    cannot be compiled. PyTensor's name for it."""

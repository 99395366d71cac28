r"""opweave's configuration: typed options read from ``OPWEAVE_FLAGS``.

``OPWEAVE_FLAGS`` holds comma-separated ``name=value`` pairs, for example
``OPWEAVE_FLAGS="compiledir=/tmp/ow,cxx=clang++"``; a comma inside a value is
written ``\,`` (``cmodule__sanitize=address\,undefined``). A flag that cannot
be used (no ``=``, an unknown name, a bad value) is ignored with a warning, so
a typo never breaks ``import opweave``. Options are read as
attributes of :data:`opweave.config` and may be set at run time, or changed
for a block with :meth:`OpweaveConfig.change_flags`.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Iterator
from typing import Any

from opweave._config_options import ALIASES, OPTIONS, ConfigOption
from opweave._config_parse import MODE_NAMES, SANITIZERS, parse_sanitize, parse_size

__all__ = [
    "MODE_NAMES",
    "SANITIZERS",
    "ConfigOption",
    "OpweaveConfig",
    "Snapshot",
    "config",
    "parse_sanitize",
    "parse_size",
]


# Options that say where caches live, how they are shared and how compilers
# are launched, never what code is generated nor how it is compiled: a
# graph record's name (link/c/_graph_index.py) leaves them out, so that a
# record made on one machine is found on another.
_WHERE_ONLY = frozenset({"compiledir", "compile__slot_dir", "cxx_launcher"})


class Snapshot(tuple):
    """Every option and its value (:meth:`OpweaveConfig.snapshot`)."""

    __slots__ = ()

    def code_options(self) -> tuple[tuple[str, str], ...]:
        """The options that can change generated code or how it is compiled:
        all but where caches live and how they are shared (``cache__*``,
        ``compiledir``, ``compile__slot_dir``, ``cxx_launcher``)."""
        return tuple(
            item
            for item in self
            if item[0] not in _WHERE_ONLY and not item[0].startswith("cache__")
        )


class OpweaveConfig:
    """The configuration object. Options are attributes; unknown names raise
    AttributeError, and values are checked as they are set. An option's
    other name (PyTensor's ``compile__timeout`` for ``cache__lock_timeout``)
    reads and sets the same option, with a FutureWarning once per process;
    an error about its value names it as the user wrote it."""

    def __init__(self, flags: str = "") -> None:
        object.__setattr__(self, "_options", {option.name: option for option in OPTIONS})
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_given", set())  # names given in the flags or set
        object.__setattr__(self, "_snapshot", None)
        for given, text in _split_flags(flags):
            name = ALIASES.get(given, given)
            if name not in self._options:
                _warn(
                    f"unknown option {given!r} ignored; known options: "
                    + ", ".join(sorted(self._options))
                )
                continue
            _warn_old_spelling(given)
            try:
                self._values[name] = self._parse(given, text)
                self._given.add(name)
            except ValueError as error:
                _warn(f"{error}; the option keeps its default")

    def _parse(self, typed: str, value: Any) -> Any:
        """``value`` parsed for the option ``typed`` names; the error names
        ``typed``, the name the user wrote (and the option, for another
        name of one)."""
        name = ALIASES.get(typed, typed)
        option = self._options[name]
        if isinstance(value, (list, tuple)):  # a list of paths
            value = ":".join(str(item) for item in value)
        elif not isinstance(value, str):
            value = str(value)
        try:
            return option.parse(value)
        except ValueError as error:
            shown = typed if typed == name else f"{typed} (the old spelling of {name})"
            raise ValueError(f"opweave option {shown}: {error}") from None

    def _known(self, name: str) -> str:
        """The option ``name`` names (itself, or the option it is another
        name of); AttributeError if none."""
        known = ALIASES.get(name, name)
        if known not in object.__getattribute__(self, "_options"):
            raise AttributeError(f"opweave has no configuration option {name!r}")
        return known

    def __getattr__(self, name: str) -> Any:
        known = self._known(name)
        if known != name:  # an old spelling (no call on the common path)
            _warn_old_spelling(name)
        options = object.__getattribute__(self, "_options")
        values = object.__getattribute__(self, "_values")
        if known not in values:
            values[known] = options[known].default_value()
        return values[known]

    def __setattr__(self, name: str, value: Any) -> None:
        known = self._known(name)
        if known != name:
            _warn_old_spelling(name)
        self._values[known] = self._parse(name, value)
        self._given.add(known)
        object.__setattr__(self, "_snapshot", None)

    def is_set(self, name: str) -> bool:
        """Whether option ``name`` was given (in ``OPWEAVE_FLAGS`` or set),
        rather than left at its default."""
        return self._known(name) in self._given

    def options(self) -> dict[str, ConfigOption]:
        """Every option, by name."""
        return dict(self._options)

    def snapshot(self) -> Snapshot:
        """Every option and its value, as a hashable value: equal snapshots
        mean the same configuration. Kept until an option is set."""
        found = object.__getattribute__(self, "_snapshot")
        if found is None:
            found = Snapshot((name, repr(getattr(self, name))) for name in sorted(self._options))
            object.__setattr__(self, "_snapshot", found)
        return found

    @contextlib.contextmanager
    def change_flags(self, **changes: Any) -> Iterator[None]:
        """Sets options for the duration of a ``with`` block, then restores them."""
        missing = object()
        known = {self._known(name): name for name in changes}  # option -> as typed
        saved = {name: self._values.get(name, missing) for name in known}
        given = {name for name in known if name in self._given}
        try:
            for typed in known.values():
                setattr(self, typed, changes[typed])
            yield
        finally:
            for name, value in saved.items():
                if value is missing:
                    self._values.pop(name, None)
                else:
                    self._values[name] = value
                if name not in given:
                    self._given.discard(name)
            object.__setattr__(self, "_snapshot", None)


def _warn(message: str) -> None:
    warnings.warn(f"OPWEAVE_FLAGS: {message}", stacklevel=3)


_warned_spellings: set[str] = set()


def _warn_old_spelling(typed: str) -> None:
    """Warns, once per process and spelling, that ``typed`` is another
    name of an option (PyTensor's ``compile__timeout``)."""
    name = ALIASES.get(typed)
    if name is None or typed in _warned_spellings:
        return
    _warned_spellings.add(typed)
    warnings.warn(
        f"opweave option {typed} is the old spelling of {name}; write {name}",
        FutureWarning,
        stacklevel=3,
    )


def _split_flags(flags: str) -> list[tuple[str, str]]:
    """The ``name=value`` pairs of ``flags``: split at every comma except
    an escaped one (``\\,``, which becomes a comma in the value). An item
    without ``=`` is ignored with a warning."""
    pairs = []
    for item in re.split(r"(?<!\\),", flags):
        item = item.replace("\\,", ",").strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            _warn(
                f"expected name=value, got {item!r} (ignored); write a comma inside a value as \\,"
            )
            continue
        pairs.append((name.strip(), value.strip()))
    return pairs


config = OpweaveConfig(os.environ.get("OPWEAVE_FLAGS", ""))

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
from collections.abc import Callable, Iterator
from typing import Any

from opweave._namedtuple import NamedTuple

__all__ = [
    "SANITIZERS",
    "ConfigOption",
    "OpweaveConfig",
    "config",
    "parse_sanitize",
    "parse_size",
]


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (true/false), got {text!r}")


def _parse_positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise ValueError(f"expected a positive number, got {text!r}")
    return value


def _parse_count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"expected a count (0 or more), got {text!r}")
    return value


def _parse_float_dtype(text: str) -> str:
    value = text.strip()
    if value not in ("float64", "float32", "float16"):
        raise ValueError(f"expected float64, float32 or float16, got {text!r}")
    return value


def _parse_linker(text: str) -> str:
    value = text.strip()
    if value in ("", "auto"):
        return "auto"
    if not value.replace("-", "").replace(".", "").isalnum():
        raise ValueError(f"expected auto, default or a linker name (gold, lld, bfd), got {text!r}")
    return value


# The names opweave.compile.mode knows (checked by a test; listed here
# because the configuration is parsed before that module can be imported).
MODE_NAMES = (
    "C",
    "c",
    "FAST_RUN",
    "py",
    "PY",
    "FAST_COMPILE",
    "c|py",
    "CVM",
    "cvm",
    "C_VM",
    "vm",
    "DebugMode",
    "DEBUG_MODE",
)


def _parse_mode(text: str) -> str:
    value = text.strip()
    if value not in MODE_NAMES:
        raise ValueError(f"unknown mode {text!r}; expected one of {', '.join(MODE_NAMES)}")
    return value


def _parse_unused_input(text: str) -> str:
    value = text.strip()
    if value not in ("raise", "warn", "ignore"):
        raise ValueError(f"expected raise, warn or ignore, got {text!r}")
    return value


def parse_size(text: str) -> int:
    """Bytes in a size such as ``500M``, ``2G``, ``1.5GiB`` or ``4096`` (K, M
    and G are powers of 1024). Raises ValueError for anything else."""
    units = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    cleaned = text.strip().upper().removesuffix("IB").removesuffix("B")
    suffix = cleaned[-1:] if cleaned[-1:] in ("K", "M", "G", "T") else ""
    number = cleaned[: len(cleaned) - len(suffix)]
    try:
        value = float(number) * units[suffix]
    except ValueError:
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2G)") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2G)")
    return int(value)


SANITIZERS = ("address", "undefined")


def parse_sanitize(text: str) -> str:
    """A list of sanitizers (separated by commas, ``+`` or spaces) as the
    ``-fsanitize=`` value, e.g. ``"address,undefined"``; empty for none."""
    names = [n for n in text.replace("+", ",").replace(" ", ",").split(",") if n]
    for name in names:
        if name not in SANITIZERS:
            raise ValueError(
                f"unknown sanitizer {name!r}; expected some of {', '.join(SANITIZERS)}"
            )
    return ",".join(dict.fromkeys(names))


def _parse_paths(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(":") if part.strip())


def _parse_owner(text: str) -> int | None:
    """A user name or a uid; empty: none."""
    text = text.strip()
    if not text:
        return None
    if text.isdigit():
        return int(text)
    import pwd

    try:
        return pwd.getpwnam(text).pw_uid
    except KeyError:
        raise ValueError(f"no user named {text!r} on this machine") from None


def _parse_remote(text: str) -> str:
    text = text.strip()
    if text and not text.startswith(("redis://", "rediss://", "unix://")):
        shown = text.partition(":")[0][:20]  # never the rest: it may hold a password
        raise ValueError(f"not a remote cache URL: {shown!r}:... (expected redis://host:port/db)")
    return text


def _parse_optional_size(text: str) -> int | None:
    return None if text.strip().lower() in ("", "none", "0") else parse_size(text)


def _default_compiledir() -> str:
    from opweave import _core

    return str(_core.ModuleCache.default_root())


def _default_cxx() -> str:
    from opweave import _core
    from opweave.errors import OpweaveError

    try:
        return str(_core.find_compiler(""))
    except OpweaveError:
        return ""


class ConfigOption(NamedTuple):
    """One option: its name, how to parse it from text, its default (a value or
    a function computing it on first use), and its documentation."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default


_OPTIONS = (
    ConfigOption(
        "compiledir",
        str,
        _default_compiledir,
        "Root of the module cache. Default: $XDG_CACHE_HOME/opweave, else ~/.cache/opweave.",
    ),
    ConfigOption(
        "cxx",
        str,
        _default_cxx,
        "The C++ compiler. Default: $CXX, else c++, g++ or clang++ on PATH. "
        "Empty means no compiler.",
    ),
    ConfigOption(
        "cxx_launcher",
        str,
        "",
        "A compiler launcher such as ccache or sccache, prefixed to compile commands.",
    ),
    ConfigOption(
        "compile__timeout",
        _parse_positive_float,
        1800.0,
        "Seconds a build waits for another process building the same module.",
    ),
    ConfigOption(
        "compile__jobs",
        _parse_count,
        0,
        "How many compiler processes run at once, at most, across all of your processes "
        "on this machine, whatever their compiledir (the units of a large graph compile "
        "in parallel). 0: the number of CPUs this process may use (its CPU affinity, "
        "limited by a cgroup CPU quota such as docker --cpus).",
    ),
    ConfigOption(
        "compile__slot_dir",
        str,
        "",
        "Where the compile slots (lock files that bound compile__jobs) live; processes "
        "that share it share the limit. Empty: $XDG_RUNTIME_DIR/opweave, else "
        "/tmp/opweave-<uid> (each used only if private to you), else the compiledir.",
    ),
    ConfigOption(
        "cmodule__unit_threshold",
        _parse_count,
        24,
        "A graph with at least this many distinct node codes is compiled as several "
        "units, each cached on its own and compiled in parallel, then linked: an edit "
        "recompiles only the units it touches. 0: always one unit.",
    ),
    ConfigOption(
        "cache__max_size",
        _parse_optional_size,
        None,
        "Largest size of the module cache, e.g. 2G; after each build the least recently "
        "used entries are evicted down to it. Empty, none or 0: no limit.",
    ),
    ConfigOption(
        "cache__readonly",
        _parse_bool,
        False,
        "Use the entries in compiledir and never write there (a cache on a shared "
        "filesystem, filled by someone else). A miss is built in your own default "
        "cache, or in a temporary directory when compiledir is that.",
    ),
    ConfigOption(
        "cache__shared_dirs",
        _parse_paths,
        (),
        "Read-only caches looked up before compiledir, separated by ':' (e.g. one an "
        "administrator filled on a shared filesystem).",
    ),
    ConfigOption(
        "cache__shared_owner",
        _parse_owner,
        None,
        "A user (name or uid) trusted besides you and root: read-only caches "
        "(cache__shared_dirs, cache__readonly) may belong to them, and so may the "
        "directories above any cache root. Empty: only you and root.",
    ),
    ConfigOption(
        "cache__remote",
        _parse_remote,
        "",
        "A remote tier for whole cache entries, redis://host:port/db (needs the "
        "opweave[redis] extra): a local miss is fetched from it before compiling, and "
        "a local build is stored there. Empty: none.",
    ),
    ConfigOption(
        "cache__remote_secret",
        str,
        "",
        "The secret that signs (HMAC-SHA256) entries stored in cache__remote and "
        "export files, and without which fetched or imported entries are refused; or "
        "file:/path of a file holding it. Empty: the remote tier is not used unless "
        "cache__remote_trust_unsigned is set.",
    ),
    ConfigOption(
        "cache__remote_secret_previous",
        str,
        "",
        "A second secret (or file:/path) that remote entries may also be signed with, "
        "while rotating cache__remote_secret; entries are signed with cache__remote_secret.",
    ),
    ConfigOption(
        "cache__remote_trust_unsigned",
        _parse_bool,
        False,
        "Fetch and load unsigned entries from cache__remote (and store unsigned ones "
        "without a secret): anyone who can write to the server can then run code in "
        "every process that reads it.",
    ),
    ConfigOption(
        "cache__remote_max_entry",
        parse_size,
        256 * 1024**2,
        "The largest remote entry fetched (e.g. 256M); a larger one is refused from its "
        "length, unread.",
    ),
    ConfigOption(
        "cache__remote_timeout",
        _parse_positive_float,
        1.0,
        "Seconds for a whole request to the remote tier (connecting, sending and "
        "reading the answer).",
    ),
    ConfigOption(
        "gcc__cxxflags",
        str,
        "",
        "Extra flags for every generated module, space-separated (e.g. '-march=native').",
    ),
    ConfigOption(
        "cmodule__linker",
        _parse_linker,
        "auto",
        "The linker of generated modules: auto (gold for GCC when ld.gold is on the "
        "PATH, else the compiler's default), default, or a name given to -fuse-ld= "
        "(gold, lld, bfd, mold). Flags that choose a linker already win. Part of the "
        "cache key.",
    ),
    ConfigOption(
        "cmodule__march",
        str,
        "",
        "The machine flags of generated modules: empty (none: modules run on any CPU of "
        "the architecture, and shared caches keep their hits), 'native' (expanded once "
        "per compiler and CPU into explicit flags, which are part of the cache key), or "
        "a CPU name passed as -march=<name>. opweave.pytensor sets 'native', as "
        "PyTensor does, unless it is set.",
    ),
    ConfigOption(
        "cmodule__remove_gxx_opt",
        _parse_bool,
        False,
        "Compile generated modules with -O0 -g instead of -O3, for debugging them in GDB.",
    ),
    ConfigOption(
        "cmodule__debug",
        _parse_bool,
        False,
        "Define DEBUG in generated modules (-DDEBUG), and give each EnumType a C "
        "function <prefix>_enum_to_string_<cname>(value, char* out) that writes a "
        "constant's name (for messages while debugging). Part of the cache key.",
    ),
    ConfigOption(
        "cmodule__precompiled_header",
        _parse_bool,
        True,
        "Compile generated modules with a precompiled header of Python.h and NumPy's "
        "headers (GCC only). The first compile that could use it builds it in the "
        "background; later compiles are several times faster. Modules are the same "
        "with or without it.",
    ),
    ConfigOption(
        "cmodule__sanitize",
        parse_sanitize,
        "",
        "Compile generated modules with sanitizers: address, undefined, or both "
        "(address,undefined; in OPWEAVE_FLAGS write address\\,undefined or "
        "address+undefined). Part of the cache key. ASan needs its runtime preloaded: "
        "see `python -m opweave sanitize-env`.",
    ),
    ConfigOption(
        "check_input",
        _parse_bool,
        True,
        "Generated C code checks its inputs (types' c_extract checks and the "
        "dtype_<name> typedefs). Ops may override it with a check_input attribute.",
    ),
    ConfigOption(
        "mode",
        _parse_mode,
        "FAST_RUN",
        "The mode of opweave.function when none is given: FAST_RUN or C (one compiled "
        "module per graph; nodes without C code then run in Python), c|py (CVM), py "
        "(FAST_COMPILE) or DebugMode.",
    ),
    ConfigOption(
        "on_unused_input",
        _parse_unused_input,
        "raise",
        "What opweave.function does with an input no output or update uses: raise "
        "(an UnusedInputError), warn or ignore.",
    ),
    ConfigOption(
        "floatX",
        _parse_float_dtype,
        "float64",
        "The default float dtype of tensor constructors such as vector().",
    ),
)


class OpweaveConfig:
    """The configuration object. Options are attributes; unknown names raise
    AttributeError, and values are checked as they are set."""

    def __init__(self, flags: str = "") -> None:
        object.__setattr__(self, "_options", {option.name: option for option in _OPTIONS})
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_given", set())  # names given in the flags or set
        object.__setattr__(self, "_snapshot", None)
        for name, text in _split_flags(flags):
            if name not in self._options:
                _warn(
                    f"unknown option {name!r} ignored; known options: "
                    + ", ".join(sorted(self._options))
                )
                continue
            try:
                self._values[name] = self._parse(name, text)
                self._given.add(name)
            except ValueError as error:
                _warn(f"{error}; the option keeps its default")

    def _parse(self, name: str, value: Any) -> Any:
        option = self._options[name]
        if isinstance(value, (list, tuple)):  # a list of paths
            value = ":".join(str(item) for item in value)
        elif not isinstance(value, str):
            value = str(value)
        try:
            return option.parse(value)
        except ValueError as error:
            raise ValueError(f"opweave option {name}: {error}") from None

    def __getattr__(self, name: str) -> Any:
        options = object.__getattribute__(self, "_options")
        if name not in options:
            raise AttributeError(f"opweave has no configuration option {name!r}")
        values = object.__getattribute__(self, "_values")
        if name not in values:
            values[name] = options[name].default_value()
        return values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._options:
            raise AttributeError(f"opweave has no configuration option {name!r}")
        self._values[name] = self._parse(name, value)
        self._given.add(name)
        object.__setattr__(self, "_snapshot", None)

    def is_set(self, name: str) -> bool:
        """Whether option ``name`` was given (in ``OPWEAVE_FLAGS`` or set),
        rather than left at its default."""
        if name not in self._options:
            raise AttributeError(f"opweave has no configuration option {name!r}")
        return name in self._given

    def options(self) -> dict[str, ConfigOption]:
        """Every option, by name."""
        return dict(self._options)

    def snapshot(self) -> tuple[tuple[str, str], ...]:
        """Every option and its value, as a hashable value: equal snapshots
        mean the same configuration. Kept until an option is set."""
        found = object.__getattribute__(self, "_snapshot")
        if found is None:
            found = tuple((name, repr(getattr(self, name))) for name in sorted(self._options))
            object.__setattr__(self, "_snapshot", found)
        return found

    @contextlib.contextmanager
    def change_flags(self, **changes: Any) -> Iterator[None]:
        """Sets options for the duration of a ``with`` block, then restores them."""
        missing = object()
        saved = {name: self._values.get(name, missing) for name in changes}
        given = {name for name in changes if name in self._given}
        try:
            for name, value in changes.items():
                setattr(self, name, value)
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

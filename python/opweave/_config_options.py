"""The options of opweave's configuration (:mod:`opweave.configparser`):
each one's name, parser (:mod:`opweave._config_parse`), default and
documentation, and the other names options may be given by."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opweave._config_parse import (
    parse_bool,
    parse_count,
    parse_float_dtype,
    parse_linker,
    parse_mode,
    parse_optional_size,
    parse_owner,
    parse_paths,
    parse_positive_float,
    parse_remote,
    parse_sanitize,
    parse_size,
    parse_unused_input,
)
from opweave._namedtuple import NamedTuple

__all__ = ["ALIASES", "DEFAULT_MAX_SIZE", "OPTIONS", "ConfigOption"]

# cache__max_size's default: 5 GiB, ccache's. A user's cache of a few dozen
# modules is tens of MiB (most of it precompiled preludes, ~21 MiB each).
DEFAULT_MAX_SIZE = 5 << 30


def _default_compiledir() -> str:
    from opweave import _core

    return str(_core.ModuleCache.default_root())


def _default_lock_timeout() -> float:
    from opweave import _core

    return float(_core.DEFAULT_LOCK_TIMEOUT)


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


OPTIONS = (
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
        "cache__lock_timeout",
        parse_positive_float,
        _default_lock_timeout,
        "Seconds a build waits for the lock of a module another process is building "
        "(the old spelling, PyTensor's compile__timeout, works and warns once). Default: "
        "the core's, opweave._core.DEFAULT_LOCK_TIMEOUT.",
    ),
    ConfigOption(
        "compile__jobs",
        parse_count,
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
        parse_count,
        24,
        "A graph with at least this many distinct node codes is compiled as several "
        "units, each cached on its own and compiled in parallel, then linked: an edit "
        "recompiles only the units it touches. With compile__jobs of 2 or more, so is a "
        "graph whose node code weighs 16 KB or more, whatever its count (its module's "
        "body and its node code then compile side by side). 0: always one unit.",
    ),
    ConfigOption(
        "cache__max_size",
        parse_optional_size,
        DEFAULT_MAX_SIZE,
        "Largest size of the module cache, e.g. 2G (5G by default, as ccache's); after a "
        "build the least recently used entries are evicted down to it. Empty, none or 0: "
        "no limit.",
    ),
    ConfigOption(
        "cache__readonly",
        parse_bool,
        False,
        "Use the entries in compiledir and never write there (a cache on a shared "
        "filesystem, filled by someone else). A miss is built in your own default "
        "cache, or in a temporary directory when compiledir is that.",
    ),
    ConfigOption(
        "cache__shared_dirs",
        parse_paths,
        (),
        "Read-only caches looked up before compiledir, separated by ':' (e.g. one an "
        "administrator filled on a shared filesystem).",
    ),
    ConfigOption(
        "cache__shared_owner",
        parse_owner,
        None,
        "A user (name or uid) trusted besides you and root: read-only caches "
        "(cache__shared_dirs, cache__readonly) may belong to them, and so may the "
        "directories above any cache root. Empty: only you and root.",
    ),
    ConfigOption(
        "cache__remote",
        parse_remote,
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
        parse_bool,
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
        parse_positive_float,
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
        parse_linker,
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
        "cmodule__fastmath",
        parse_bool,
        False,
        "Compile generated modules with the flags closest to Numba's fastmath "
        "(-fno-trapping-math -fno-signed-zeros -fassociative-math -freciprocal-math "
        "-ffp-contract=fast), without -ffinite-math-only, so infinities and NaNs still "
        "compare and survive. Part of the cache key. Off: IEEE results.",
    ),
    ConfigOption(
        "cmodule__remove_gxx_opt",
        parse_bool,
        False,
        "Compile generated modules with -O0 -g instead of -O3, for debugging them in GDB.",
    ),
    ConfigOption(
        "cmodule__debug",
        parse_bool,
        False,
        "Define DEBUG in generated modules (-DDEBUG), and give each EnumType a C "
        "function <prefix>_enum_to_string_<cname>(value, char* out) that writes a "
        "constant's name (for messages while debugging). Part of the cache key.",
    ),
    ConfigOption(
        "cmodule__precompiled_header",
        parse_bool,
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
        parse_bool,
        True,
        "Generated C code checks its inputs (types' c_extract checks and the "
        "dtype_<name> typedefs). Ops may override it with a check_input attribute.",
    ),
    ConfigOption(
        "mode",
        parse_mode,
        "FAST_RUN",
        "The mode of opweave.function when none is given: FAST_RUN (one compiled module "
        "per graph; nodes without C code run in Python), C (one compiled module, all C: a "
        "node without C code is an error), c|py (CVM), py (FAST_COMPILE) or DebugMode.",
    ),
    ConfigOption(
        "on_unused_input",
        parse_unused_input,
        "raise",
        "What opweave.function does with an input no output or update uses: raise "
        "(an UnusedInputError), warn or ignore.",
    ),
    ConfigOption(
        "floatX",
        parse_float_dtype,
        "float64",
        "The default float dtype of tensor constructors such as vector().",
    ),
)

# Other names of options: PyTensor's spellings, accepted silently.
ALIASES = {"compile__timeout": "cache__lock_timeout"}

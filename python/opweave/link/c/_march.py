"""``cmodule__march``: the machine flags of generated modules.

``native`` is expanded into the explicit flags the compiler picks for this
CPU (``-march=<cpu>`` and the ``-m`` feature flags that go with it), so that
they are part of every module's compile job, and so of its cache key: a
module built for one CPU is never loaded on another, from any cache (local,
shared, read-only or remote). The expansion runs the compiler once per
compiler and CPU; it is kept on disk, under the compile directory, and shown
by ``opweave cache fingerprint``. Another value is passed as ``-march=<value>``.

The expansion is kept as a record of the module cache (``ModuleCache.read_record``:
verified by the core like the cache's own files, in directories only this
user can change), never read from a path by this module; when the cache's
root is refused, it is found again in memory. Every flag must match
``-m[a-z0-9][a-z0-9._=+-]*``, in a record or from the compiler, so that
``-include``, ``-B``, ``-fplugin`` or ``-wrapper`` can never come from it: a
record with another line is ignored (and replaced).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from opweave import _core
from opweave._logs import get_logger
from opweave._sha256 import sha256_hex
from opweave.configparser import config
from opweave.errors import OpweaveError
from opweave.link.c._cache_choice import get_module_cache

__all__ = ["expand_native", "march_flags"]

_log = get_logger(__name__)
_CPUINFO = "/proc/cpuinfo"
_MEMO_FORMAT = 4  # a flag per line, kept as a cache record (4: clang's flags checked)
_RECORD_KIND = "march"
# What a machine flag looks like; nothing else is ever passed on from a record.
_MACHINE_FLAG = re.compile(r"-m[a-z0-9][a-z0-9._=+-]*")


def march_flags(compiler: Any) -> list[str]:
    """The machine flags of ``config.cmodule__march`` for ``compiler`` (a
    :class:`opweave._core.SystemCompiler`): none when unset."""
    value = config.cmodule__march.strip()
    if not value:
        return []
    if value != "native":
        return [f"-march={value}"]
    return list(expand_native(compiler.identity["path"], compiler.key_material()))


def _cpu_signature() -> str:
    """What names this CPU: its model and feature lines."""
    try:
        with open(_CPUINFO, errors="replace") as cpuinfo:
            text = cpuinfo.read()
    except OSError:
        return os.uname().machine
    wanted = ("model name", "flags", "vendor_id", "cpu family", "model\t")
    lines = sorted({line for line in text.splitlines() if line.startswith(wanted)})
    return "\n".join(lines)


@functools.cache
def expand_native(cxx: str, compiler_material: str) -> tuple[str, ...]:
    """``-march=native`` as the explicit flags ``cxx`` picks for this CPU:
    from the cache's record of them (a flag per line: reading it is a
    split, where shlex took 2 ms), or found by running the compiler once."""
    named = f"{_MEMO_FORMAT}\n{compiler_material}\n{_cpu_signature()}"
    name = sha256_hex(named.encode())[:32]
    cache = _writable_cache()
    if cache is not None:
        kept = _machine_flags(cache.read_record(_RECORD_KIND, name))
        if kept is not None:
            return kept
    flags = tuple(_ask_compiler(cxx))
    if cache is not None and not cache.write_record(
        _RECORD_KIND, name, "".join(f"{flag}\n" for flag in flags).encode()
    ):
        _log.debug("cannot keep the -march=native flags in %s", cache.root)
    return flags


def _writable_cache() -> _core.ModuleCache | None:
    """The cache modules are built in, or None when its root is refused."""
    try:
        return get_module_cache()
    except OpweaveError as error:
        _log.debug("-march=native is expanded in memory: %s", error)
        return None


def _machine_flags(data: bytes | None) -> tuple[str, ...] | None:
    """The flags of a record, or None when there is none or a line of it
    is not a machine flag (then the record is found again)."""
    if data is None:
        return None
    try:
        flags = tuple(data.decode("ascii").splitlines())
    except UnicodeDecodeError:
        flags = ("",)
    if not flags or not all(_MACHINE_FLAG.fullmatch(flag) for flag in flags):
        _log.warning("ignoring a -march=native record that holds something else than -m flags")
        return None
    return flags


def _ask_compiler(cxx: str) -> list[str]:
    """The flags ``cxx -march=native`` stands for (GCC's cc1plus line, or
    clang's target CPU and features)."""
    import shlex  # imported when a compiler is run: not on a hit's path
    import subprocess

    command = [cxx, "-march=native", "-E", "-v", "-x", "c++", "/dev/null", "-o", "/dev/null"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        raise OpweaveError(f"cannot expand -march=native with {cxx}: {error}") from error
    for line in done.stderr.splitlines():
        words = shlex.split(line) if " -march=" in line or "-target-cpu" in line else []
        if "-target-cpu" in words:  # clang: -target-cpu X -target-feature +f ...
            features = [words[k + 1] for k, w in enumerate(words) if w == "-target-feature"]
            cpu = words[words.index("-target-cpu") + 1]
            found = [f"-march={cpu}", *(_clang_feature(f) for f in features)]
            return _accepted(cxx, [flag for flag in found if _MACHINE_FLAG.fullmatch(flag)])
        if any(w.startswith("-march=") for w in words) and "cc1plus" in line:
            return [w for w in words if _MACHINE_FLAG.fullmatch(w) and w != "-m64"]
    raise OpweaveError(
        f"cannot expand -march=native with {cxx}: its -v output names no target "
        f"(exit status {done.returncode}): {done.stderr.strip()[-500:]}"
    )


def _accepted(cxx: str, flags: list[str]) -> list[str]:
    """``flags`` less those ``cxx``'s driver rejects: some of clang's target
    features (``+64bit``, ``+cx8``, ``+cmov``) have no ``-m`` option."""
    import subprocess  # as above

    command = [cxx, *flags, "-E", "-x", "c++", "/dev/null", "-o", "/dev/null"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        raise OpweaveError(f"cannot check the -march=native flags of {cxx}: {error}") from error
    rejected = set(re.findall(r"unknown argument: '([^']+)'", done.stderr))
    return [flag for flag in flags if flag not in rejected]


def _clang_feature(feature: str) -> str:
    """clang's ``+avx2`` as ``-mavx2`` and ``-avx512f`` as ``-mno-avx512f``."""
    if not feature or feature[0] not in "+-":
        return ""
    return f"-m{feature[1:]}" if feature[0] == "+" else f"-mno-{feature[1:]}"

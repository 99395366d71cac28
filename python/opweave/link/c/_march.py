"""``cmodule__march``: the machine flags of generated modules.

``native`` is expanded into the explicit flags the compiler picks for this
CPU (``-march=<cpu>`` and the ``-m`` feature flags that go with it), so that
they are part of every module's compile job, and so of its cache key: a
module built for one CPU is never loaded on another, from any cache (local,
shared, read-only or remote). The expansion runs the compiler once per
compiler and CPU; it is kept on disk, under the compile directory, and shown
by ``opweave cache fingerprint``. Another value is passed as ``-march=<value>``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from opweave.configparser import config
from opweave.errors import OpweaveError

__all__ = ["expand_native", "march_flags"]

_log = logging.getLogger(__name__)
_CPUINFO = "/proc/cpuinfo"
_MEMO_FORMAT = 2  # a flag per line


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
        text = Path(_CPUINFO).read_text(errors="replace")
    except OSError:
        return os.uname().machine
    wanted = ("model name", "flags", "vendor_id", "cpu family", "model\t")
    lines = sorted({line for line in text.splitlines() if line.startswith(wanted)})
    return "\n".join(lines)


@functools.cache
def expand_native(cxx: str, compiler_material: str) -> tuple[str, ...]:
    """``-march=native`` as the explicit flags ``cxx`` picks for this CPU,
    read from the disk memo (a flag per line: reading it is a split, where
    shlex took 2 ms), or found by running the compiler once."""
    named = f"{_MEMO_FORMAT}\n{compiler_material}\n{_cpu_signature()}"
    name = hashlib.sha256(named.encode()).hexdigest()[:32]
    memo = Path(config.compiledir) / "march" / name
    try:
        return tuple(memo.read_text().splitlines())
    except OSError:
        pass
    flags = _ask_compiler(cxx)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        staging = memo.with_name(f"{name}.{os.getpid()}.tmp")
        staging.write_text("".join(f"{flag}\n" for flag in flags))
        os.replace(staging, memo)
    except OSError as error:  # a read-only compile dir: found again next time
        _log.debug("cannot keep the -march=native flags in %s: %s", memo, error)
    return tuple(flags)


def _ask_compiler(cxx: str) -> list[str]:
    """The flags ``cxx -march=native`` stands for (GCC's cc1plus line, or
    clang's target CPU and features)."""
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
            return [f"-march={cpu}", *(_clang_feature(f) for f in features if _clang_feature(f))]
        if any(w.startswith("-march=") for w in words) and "cc1plus" in line:
            return [w for w in words if re.match(r"-m(arch|tune|[a-z0-9-]+)=?", w) and w != "-m64"]
    raise OpweaveError(
        f"cannot expand -march=native with {cxx}: its -v output names no target "
        f"(exit status {done.returncode}): {done.stderr.strip()[-500:]}"
    )


def _clang_feature(feature: str) -> str:
    """clang's ``+avx2`` as ``-mavx2`` and ``-avx512f`` as ``-mno-avx512f``."""
    if not feature or feature[0] not in "+-":
        return ""
    return f"-m{feature[1:]}" if feature[0] == "+" else f"-mno-{feature[1:]}"

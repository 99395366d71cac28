"""Sanitizer builds of generated modules (``config.cmodule__sanitize``).

With ``cmodule__sanitize=address``, ``undefined`` or both, every generated
module is compiled with the matching ``-fsanitize=`` flags, frame pointers
and debug information (so that reports name files and lines). The flags are
part of the compile job, and so of the cache key: sanitized and plain modules
never mix.

AddressSanitizer's runtime must be loaded before anything else in the
process, and Python is not built with it, so Python has to be started with
the runtime preloaded. :func:`sanitizer_environment` says how; ``python -m
opweave sanitize-env`` prints it for a shell.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from opweave.configparser import config, parse_sanitize
from opweave.errors import OpweaveError

__all__ = ["is_clang", "sanitizer_environment", "sanitizer_flags"]


def is_clang(compiler: Any) -> bool:
    """True if ``compiler`` (a SystemCompiler) is clang."""
    return "clang" in str(compiler.identity.get("version", ""))


def sanitizer_flags(compiler: Any, sanitize: str | None = None) -> list[str]:
    """The compile flags of ``sanitize`` (default: ``config.cmodule__sanitize``)
    for ``compiler``; empty when no sanitizer is on. Clang links its runtime
    into shared objects only with ``-shared-libsan``."""
    chosen = parse_sanitize(config.cmodule__sanitize if sanitize is None else sanitize)
    if not chosen:
        return []
    flags = [f"-fsanitize={chosen}", "-fno-omit-frame-pointer", "-g"]
    if is_clang(compiler):
        # The module needs clang's runtime as a shared library, found where
        # clang keeps it (not on the loader's default path).
        runtime = _file_of(str(compiler.identity["path"]), "libclang_rt.ubsan_standalone-x86_64.so")
        flags += ["-shared-libsan", f"-Wl,-rpath,{os.path.dirname(runtime)}"]
    return flags


@functools.cache
def _file_of(compiler_path: str, name: str) -> str:
    """``<compiler> -print-file-name=<name>``, checked to exist."""
    import subprocess  # here: every compile imports this module, few need it

    try:
        found = subprocess.run(
            [compiler_path, f"-print-file-name={name}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as error:
        raise OpweaveError(f"cannot ask {compiler_path} where {name} is: {error}") from error
    if not os.path.isabs(found) or not os.path.exists(found):
        raise OpweaveError(
            f"{compiler_path} does not know {name} (it printed {found!r}); install the "
            "sanitizer runtime (Debian: libasan8 for g++ 12, libclang-rt-dev or "
            "libclang-common-<n>-dev for clang)"
        )
    return found


def sanitizer_environment(sanitize: str | None = None, compiler: Any = None) -> dict[str, str]:
    """The environment variables to start Python with so that modules built
    with ``sanitize`` (default: ``config.cmodule__sanitize``, else
    ``address``) run: ``OPWEAVE_FLAGS`` asking for them and, for
    AddressSanitizer, ``LD_PRELOAD`` of its runtime followed by
    ``libstdc++.so`` (without it, the first C++ exception thrown inside
    ``opweave._core`` aborts in ASan's ``__cxa_throw`` interceptor) and
    ``ASAN_OPTIONS=detect_leaks=0`` (the interpreter's own allocations are
    not leaks to report)."""
    from opweave.link.c import cmodule

    chosen = parse_sanitize(sanitize or config.cmodule__sanitize or "address")
    compiler = compiler or cmodule.get_compiler()
    path = str(compiler.identity["path"])
    flags = os.environ.get("OPWEAVE_FLAGS", "")
    own = "cmodule__sanitize=" + chosen.replace(",", "\\,")
    env = {"OPWEAVE_FLAGS": f"{flags},{own}" if flags else own}
    names = chosen.split(",")
    if "undefined" in names:
        env["UBSAN_OPTIONS"] = "print_stacktrace=1"
    if "address" in names:
        runtime = "libclang_rt.asan-x86_64.so" if is_clang(compiler) else "libasan.so"
        env["LD_PRELOAD"] = f"{_file_of(path, runtime)} {_file_of(path, 'libstdc++.so')}"
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env

"""What a graph's module is compiled with: the compiler its ops and types
ask for, the compile job (flags, directories, libraries) and the key
material beyond the source (ABIs and declared code versions)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import numpy as np

from opweave import _core
from opweave.configparser import config
from opweave.errors import OpweaveError
from opweave.link.c._abi_keys import numpy_abi_key, python_abi_key
from opweave.link.c._compiler_choice import get_compiler
from opweave.link.c._flags import remove_flags, uniq_flags
from opweave.link.c._linker import linker_flags
from opweave.link.c._march import march_flags
from opweave.link.c._requests import extension_job
from opweave.link.c.hooks import call_optional_hook, declares_version
from opweave.link.c.sanitize import sanitizer_flags

__all__ = ["FASTMATH_FLAGS", "chosen_compiler", "compile_job", "key_extra"]

# The flags PyTensor compiles its modules with, minus the optimisation level
# (set from config.cmodule__remove_gxx_opt).
_DEFAULT_FLAGS = (
    "-fno-math-errno",
    "-Wno-unused-label",
    "-Wno-unused-variable",
    "-Wno-write-strings",
    "-DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION",
)

# config.cmodule__fastmath: Numba's fastmath (arcp, contract, reassoc, nsz;
# afn has no GCC flag) without -ffinite-math-only, so that a -inf
# log-density stays -inf.
FASTMATH_FLAGS = (
    "-fno-trapping-math",
    "-fno-signed-zeros",
    "-fassociative-math",
    "-freciprocal-math",
    "-ffp-contract=fast",
)


def _uniq(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def chosen_compiler(objects: Sequence[Any]) -> _core.SystemCompiler:
    """The compiler of a graph of ``objects`` (its ops and types): the one
    they ask for (``c_compiler()``), else ``config.cxx``. Two different
    requests are an error."""
    chosen: Any = None
    for obj in objects:
        wanted = call_optional_hook(obj, "c_compiler")
        if wanted is None:
            continue
        if chosen is not None and wanted != chosen:
            raise OpweaveError(f"ops ask for two different compilers: {chosen!r} and {wanted!r}")
        chosen = wanted
    if chosen is None:
        return get_compiler()
    if isinstance(chosen, _core.SystemCompiler):
        return chosen
    if isinstance(chosen, str):
        return _core.SystemCompiler(chosen, launcher=config.cxx_launcher)
    raise TypeError(f"c_compiler() must return None, a compiler name or path, got {chosen!r}")


def compile_job(objects: Sequence[Any], compiler: Any) -> _core.CompileJob:
    """The compile job: default flags, the ops' and types' flags,
    directories and libraries, then the machine flags
    (``config.cmodule__march``) and ``config.gcc__cxxflags``, minus every
    ``c_no_compile_args`` (an option with its argument is one group, see
    :mod:`._flags`); with ``config.cmodule__sanitize``, the
    sanitizer flags; with ``config.cmodule__fastmath``, FASTMATH_FLAGS; with
    ``config.cmodule__debug``, ``-DDEBUG``; then the
    linker's (``config.cmodule__linker``)."""
    kw = {"c_compiler": compiler}

    def collect(hook: str) -> list[str]:
        found: list[str] = []
        for obj in objects:
            hooked = call_optional_hook(obj, hook, default=[], **kw)
            found.extend(str(item) for item in hooked or [])
        # Flags are de-duplicated as groups (``--param a=1``), not words.
        return uniq_flags(found) if hook.endswith("compile_args") else _uniq(found)

    flags = [
        *_DEFAULT_FLAGS,
        *collect("c_compile_args"),
        *march_flags(compiler),
        *shlex.split(config.gcc__cxxflags),
        *sanitizer_flags(compiler),
        *(FASTMATH_FLAGS if config.cmodule__fastmath else ()),
        *(["-DDEBUG"] if config.cmodule__debug else []),
    ]
    flags = remove_flags(flags, collect("c_no_compile_args"))
    flags += linker_flags(compiler, flags)
    debug = config.cmodule__remove_gxx_opt
    return extension_job(
        include_dirs=[*collect("c_header_dirs"), np.get_include()],
        flags=flags,
        lib_dirs=collect("c_lib_dirs"),
        libraries=collect("c_libraries"),
        opt_level=_core.OptLevel.O0 if debug else _core.OptLevel.O3,
        debug_info=_core.DebugInfo.YES if debug else _core.DebugInfo.NO,
    )


def key_extra(objects: Sequence[Any]) -> str:
    """Key material beyond the source and the compile job: the Python and
    NumPy ABIs and the ops' and types' declared code versions."""
    versions = [
        f"{type(obj).__qualname__}={obj.c_code_cache_version()!r}"
        for obj in objects
        if declares_version(obj)
    ]
    return ";".join([python_abi_key(), numpy_abi_key(), *dict.fromkeys(versions)])

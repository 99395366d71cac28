"""What a module is, as the C++ core takes it: a compile job
(:func:`extension_job`), the prelude it may use (:func:`prelude_request`)
and the whole request (:func:`module_request`) that
:func:`opweave.link.c.cmodule.load_module` compiles."""

from __future__ import annotations

from collections.abc import Sequence

from opweave import _core
from opweave.configparser import config
from opweave.link.c import _prelude
from opweave.link.c._abi_keys import covered_header_dirs, python_abi_key, python_paths

__all__ = ["compiled_texts", "extension_job", "module_request", "prelude_request"]


def extension_job(
    include_dirs: Sequence[str] = (),
    flags: Sequence[str] = (),
    lib_dirs: Sequence[str] = (),
    libraries: Sequence[str] = (),
    opt_level: _core.OptLevel = _core.OptLevel.O2,
    debug_info: _core.DebugInfo = _core.DebugInfo.NO,
) -> _core.CompileJob:
    """A compile job for a Python extension module: the given settings plus the
    Python headers. Extension modules on Linux do not link libpython."""
    job = _core.CompileJob()
    job.include_dirs = [*include_dirs, python_paths()[0]]
    job.flags = list(flags)
    job.lib_dirs = list(lib_dirs)
    job.libraries = list(libraries)
    job.opt_level = opt_level
    job.debug_info = debug_info
    return job


def compiled_texts(assembled: _core.AssembledModule) -> list[str]:
    """The texts a build of ``assembled`` compiles: its own, its units' and
    its body's (empty without units)."""
    texts = [assembled.text, *(unit.text for unit in assembled.units)]
    return [*texts, assembled.body.text] if assembled.units else texts


def prelude_request(sources: Sequence[str], job: _core.CompileJob) -> _core.PreludeRequest | None:
    """The prelude the texts ``sources`` (a module's own, its units' and its
    body's) may compile with: the lines the includes of every one of them
    start with (see :func:`opweave.link.c._prelude.choose`); None when
    ``config.cmodule__precompiled_header`` is off or no source includes
    Python.h as generated modules do (``#define PY_SSIZE_T_CLEAN``, then
    ``#include <Python.h>``)."""
    if not config.cmodule__precompiled_header:
        return None
    return _prelude.choose(sources, job)


def module_request(
    source: str,
    job: _core.CompileJob | None = None,
    extra: str | None = None,
    label: str = "",
    prelude: _core.PreludeRequest | None = None,
    units: Sequence[str] = (),
    unit_exports: Sequence[Sequence[str]] | None = None,
    body: str = "",
) -> _core.ModuleRequest:
    """The description of one module for :func:`load_module`: its source,
    compile job (default :func:`extension_job`), key material beyond the job
    (default the Python ABI), a label for listings and logs, the prelude it
    may be compiled with, and the sources of more translation units, each
    compiled (and cached) on its own and linked with it, and the keys each
    of them exports (``TranslationUnit.exports``); ``body``, when not
    empty, is one more, after them (``AssembledModule.body``)."""
    request = _core.ModuleRequest()
    request.source = source
    exports = unit_exports if unit_exports is not None else [[] for _ in units]
    request.units = [
        *(
            _core.TranslationUnit(text, f"{label} (unit {k + 1}/{len(units)})", list(exported))
            for k, (text, exported) in enumerate(zip(units, exports, strict=True))
        ),
        *([_core.TranslationUnit(body, f"{label} (body)", [])] if body else []),
    ]
    request.job = job if job is not None else extension_job()
    request.extra = extra if extra is not None else python_abi_key()
    request.label = label
    request.covered_header_dirs = covered_header_dirs()
    request.prelude = prelude
    return request

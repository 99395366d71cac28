"""opweave's shared kernels for PyTensor ops: the code that does not depend
on the node (LAPACK calls, advanced-indexing loops), compiled once per
machine through opweave's module cache and imported once per process.

Importing this module compiles ``native/*.cpp`` as one unit (or finds it in the
cache, verified as every entry is) and exposes its table as ``API_v1``, a
capsule. A graph module that uses a shared kernel holds ``API_TEXT`` (the
table's declaration and ``opweave_kernels_import()``) in its support code
and imports the table in its init code (:data:`INIT_CODE`), so a graph
compiles only the few lines of its own node. The library's key covers its
text, the compiler, NumPy's headers and the Python ABI, as any module's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["API_TEXT", "COMPILED", "INIT_CODE", "api", "library_source"]

_NATIVE = Path(__file__).resolve().parent / "native"
_MODULE = "opweave_pytensor_kernels"
_MARK = "// OPWEAVE_KERNEL_API (kernel_api.h's text goes here)\n"

# The table's declaration, as graph modules' support code (no preprocessor line).
API_TEXT = (_NATIVE / "kernel_api.h").read_text()

# A graph module's init code: the table is there before any node runs.
INIT_CODE = "if (opweave_kernels_import() == NULL) {\n    return NULL;\n}\n"


# The library's files, one translation unit in this order (kernels.cpp: the
# includes and what the others share; module.cpp: the table and init).
_PARTS = (
    "kernels.cpp",
    "lapack.cpp",
    "indexing.cpp",
    "numpy_linalg.cpp",
    "blockwise.cpp",
    "module.cpp",
)


def library_source() -> str:
    """The library's C++ text: its files in order, with the table declared."""
    text = "\n".join((_NATIVE / part).read_text() for part in _PARTS)
    if _MARK not in text:
        raise RuntimeError("opweave's native/kernels.cpp lost its API mark")
    return text.replace(_MARK, API_TEXT)


def _load() -> Any:
    import numpy as np

    from opweave.link.c._requests import extension_job
    from opweave.link.c.cmodule import compile_extension

    job = extension_job(include_dirs=[np.get_include()])
    return compile_extension(library_source(), _MODULE, job)


# The compiled library (its outcome: "built" the first time on a machine,
# then "hit") and its table.
COMPILED = _load()
API_v1 = COMPILED.module.API_v1


def api() -> Any:
    """The table's capsule (``opweave.pytensor._kernel_library.API_v1``)."""
    return API_v1

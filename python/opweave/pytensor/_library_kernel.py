# mypy: disable-error-code="import-not-found,import-untyped"
# (SciPy comes with PyTensor, which is optional: opweave[pytensor].)
"""The base of the kernels whose code is in opweave's shared kernel library
(:mod:`opweave.pytensor._kernel_library`): a node's code is a call through
the library's table, which the module imports when it loads."""

from __future__ import annotations

import functools
from typing import Any

from opweave.pytensor._kernel_base import Kernel

__all__ = ["LibraryKernel", "c_string", "lapack_dtype"]


class LibraryKernel(Kernel):
    """A kernel that calls the shared library: its support code declares the
    table, its init code imports it (compiling the library the first time
    on this machine)."""

    def c_support_code(self, **kwargs: Any) -> str:
        """The table's declaration (one text for every such kernel)."""
        from opweave.pytensor._kernel_library import API_TEXT

        return API_TEXT

    def c_init_code(self, **kwargs: Any) -> list[str]:
        """Imports the table when the module loads."""
        from opweave.pytensor._kernel_library import INIT_CODE

        return [INIT_CODE]


@functools.cache
def lapack_dtype(routine: str, dtypes: tuple[str, ...]) -> str | None:
    """The dtype of the LAPACK routine SciPy picks for arrays of ``dtypes``
    (what ``scipy.linalg.get_lapack_funcs`` gives ``perform``), when it is
    float32 or float64; else None."""
    try:
        import numpy as np
        from scipy.linalg import get_lapack_funcs
    except ImportError:
        return None
    arrays = tuple(np.empty((1, 1), dtype=dtype) for dtype in dtypes)
    (function,) = get_lapack_funcs((routine,), arrays)
    dtype = str(function.dtype)
    return dtype if dtype in ("float32", "float64") else None


def c_string(text: str) -> str:
    """``text`` as a C string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'

"""What compiled modules depend on besides their source and flags: the
Python ABI, NumPy's version and C API, the header directories those cover,
and the environment fingerprint that names them with the compiler and the
cache layout (:func:`opweave.link.c.cmodule.environment_fingerprint`)."""

from __future__ import annotations

import functools
import sys
import sysconfig

from opweave import _core

__all__ = ["covered_header_dirs", "fingerprint", "numpy_abi_key", "python_abi_key", "python_paths"]


@functools.cache
def python_paths() -> tuple[str, str]:
    """Python's include directories (sysconfig takes about a millisecond to
    work them out, on every call)."""
    paths = sysconfig.get_paths()
    return paths["include"], paths["platinclude"]


@functools.cache
def python_abi_key() -> str:
    """Text naming the Python ABI that compiled extensions depend on."""
    soabi = sysconfig.get_config_var("SOABI") or ""
    return f"python={sys.implementation.cache_tag};soabi={soabi};hexversion={sys.hexversion:x}"


@functools.cache
def numpy_abi_key() -> str:
    """Text naming the NumPy version and C-API version that modules including
    NumPy's headers depend on."""
    import numpy as np

    # NumPy's C module has no stub; which of the two paths exists depends on
    # the NumPy version.
    try:
        from numpy._core._multiarray_umath import _get_ndarray_c_version  # type: ignore[import-not-found]
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import _get_ndarray_c_version  # type: ignore[import-not-found, no-redef]
    return f"numpy={np.__version__};c_api={_get_ndarray_c_version():x}"


@functools.cache
def fingerprint(compiler_material: str) -> str:
    """The environment fingerprint (cmodule.environment_fingerprint) of a
    compiler of ``compiler_material``."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy_version = numpy.__version__
    else:
        from importlib import metadata

        try:
            numpy_version = metadata.version("numpy")
        except metadata.PackageNotFoundError:
            numpy_version = "none"
    text = "\n".join(
        [
            "opweave-environment 1",
            f"layout {_core.MODULE_LAYOUT_VERSION} {_core.CACHE_FORMAT_VERSION}",
            compiler_material,
            python_abi_key(),
            f"numpy={numpy_version}",
        ]
    )
    return "ow1-" + _core.sha256_hex(text.encode())[:16]


def covered_header_dirs() -> list[str]:
    """The header directories whose content the key already covers (by the
    Python ABI and the NumPy version), so the cache does not track them."""
    import numpy as np

    return list(dict.fromkeys([*python_paths(), np.get_include()]))

"""opweave: weave the C code of graph Ops into one compiled, cached module per graph.

This is the C back end of Theano, Aesara and PyTensor, rebuilt as a standalone
package with a C++ core. Importing opweave is cheap: nothing is compiled and
no compiler is probed until a function needs it.
"""

from __future__ import annotations

from pathlib import Path

from opweave.configparser import config
from opweave.errors import CacheError, CompileError, LockTimeout, OpweaveError

__all__ = [
    "CacheError",
    "CompileError",
    "LockTimeout",
    "Mode",
    "OpweaveError",
    "__version__",
    "config",
    "function",
    "get_cmake_dir",
    "get_include",
]

__version__ = "0.1.0"


_SUBPACKAGES = ("compile", "gof", "graph", "link", "scalar", "tensor")


def __getattr__(name: str) -> object:
    # The graph layer and NumPy load on first use, so that importing opweave
    # for its cache tools stays cheap.
    if name in ("function", "Mode"):
        from opweave import compile as _compile

        return getattr(_compile, name)
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"opweave.{name}")
    raise AttributeError(f"module 'opweave' has no attribute {name!r}")


def _install_dir() -> Path:
    """The directory holding the compiled core and the installed C++ files.

    In an editable install the Python sources and the compiled files live in
    different places; the compiled extension marks the installed side.
    """
    from opweave import _core

    return Path(_core.__file__).resolve().parent


def get_include() -> str:
    """The directory to add with ``-I`` to use opweave's C++ headers."""
    return str(_install_dir() / "include")


def get_cmake_dir() -> str:
    """The directory holding ``opweaveConfig.cmake``: pass it as ``opweave_DIR``
    (or add it to ``CMAKE_PREFIX_PATH``) for ``find_package(opweave CONFIG)``."""
    return str(_install_dir() / "lib" / "cmake" / "opweave")

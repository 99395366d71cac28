"""opweave: weave the C code of graph Ops into one compiled, cached module per graph.

This is the C back end of Theano, Aesara and PyTensor, rebuilt as a standalone
package with a C++ core. Importing opweave is cheap: nothing is compiled and
no compiler is probed until a function needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# First of opweave's modules: when the modules imported after it were read.
from opweave import _import_time  # noqa: F401
from opweave.configparser import config
from opweave.errors import CacheError, CompileError, LockTimeout, OpweaveError

if TYPE_CHECKING:
    from pathlib import Path

    # What __getattr__ below loads on first use, as type checkers and editors
    # see it; nothing here is imported at run time.
    from opweave import compile as compile
    from opweave import gof as gof
    from opweave import graph as graph
    from opweave import link as link
    from opweave import scalar as scalar
    from opweave import tensor as tensor
    from opweave.compile.function import function
    from opweave.compile.io import In, Out
    from opweave.compile.mode import Mode
    from opweave.compile.sharedvalue import shared
    from opweave.graph.basic import Apply, Constant, Variable
    from opweave.graph.op import Op
    from opweave.graph.type import Type

    __version__: str

__all__ = [
    "Apply",
    "CacheError",
    "CompileError",
    "Constant",
    "In",
    "LockTimeout",
    "Mode",
    "Op",
    "OpweaveError",
    "Out",
    "Type",
    "Variable",
    "__version__",
    "config",
    "function",
    "get_cmake_dir",
    "get_include",
    "shared",
]


_SUBPACKAGES = ("compile", "gof", "graph", "link", "scalar", "tensor")
# Names importable from the top level (``from opweave import Op``, as
# ``from theano import Op`` was), and the module defining each.
_LAZY = {
    "function": "opweave.compile",
    "Mode": "opweave.compile",
    "In": "opweave.compile.io",
    "Out": "opweave.compile.io",
    "shared": "opweave.compile.sharedvalue",
    "Op": "opweave.graph.op",
    "Apply": "opweave.graph.basic",
    "Constant": "opweave.graph.basic",
    "Variable": "opweave.graph.basic",
    "Type": "opweave.graph.type",
}


def __getattr__(name: str) -> object:
    # The graph layer and NumPy load on first use, so that importing opweave
    # for its cache tools stays cheap.
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "__version__":  # written once, in include/opweave/version.hpp
        return importlib.import_module("opweave._core").__version__
    if name in _SUBPACKAGES:
        return importlib.import_module(f"opweave.{name}")
    raise AttributeError(f"module 'opweave' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The names loaded on first use are listed too (dir() and completion).
    return sorted({*globals(), *__all__, *_SUBPACKAGES})


def _install_dir() -> Path:
    """The directory holding the compiled core and the installed C++ files.

    In an editable install the Python sources and the compiled files live in
    different places; the compiled extension marks the installed side.
    """
    from pathlib import Path  # only for the CMake and include paths

    from opweave import _core

    return Path(_core.__file__).resolve().parent


def get_include() -> str:
    """The directory to add with ``-I`` to use opweave's C++ headers."""
    return str(_install_dir() / "include")


def get_cmake_dir() -> str:
    """The directory holding ``opweaveConfig.cmake``: pass it as ``opweave_DIR``
    (or add it to ``CMAKE_PREFIX_PATH``) for ``find_package(opweave CONFIG)``."""
    return str(_install_dir() / "lib" / "cmake" / "opweave")

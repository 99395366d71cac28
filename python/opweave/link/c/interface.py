"""The C interfaces of ops and types: every hook the C linker may call, with
its default.

The collectors (``c_headers``, ``c_libraries``, ``c_compile_args``, ...) may
be defined with or without a ``c_compiler`` keyword; the linker calls them
either way (see :func:`opweave.link.c.hooks.call_hook`).
"""

from __future__ import annotations

import warnings
from typing import Any

from opweave.graph.utils import MethodNotDefined

__all__ = ["CLinkerObject", "CLinkerOp", "CLinkerType", "HideC"]


class CLinkerObject:
    """What both ops and types may give the C linker. Every hook defaults to
    nothing."""

    def c_headers(self, **kwargs: Any) -> list[str]:
        """Headers to include: ``"<math.h>"``, ``'"mine.h"'`` or ``"mine.h"``."""
        return []

    def c_header_dirs(self, **kwargs: Any) -> list[str]:
        """Directories to search for headers (``-I``)."""
        return []

    def c_libraries(self, **kwargs: Any) -> list[str]:
        """Libraries to link (``-l``), without the ``-l``."""
        return []

    def c_lib_dirs(self, **kwargs: Any) -> list[str]:
        """Directories to search for libraries (``-L``)."""
        return []

    def c_compile_args(self, **kwargs: Any) -> list[str]:
        """Extra compiler flags."""
        return []

    def c_no_compile_args(self, **kwargs: Any) -> list[str]:
        """Flags that must not be passed to the compiler."""
        return []

    def c_support_code(self, **kwargs: Any) -> str | list[str]:
        """Global-scope helper code, emitted once per module however many
        nodes ask for the same text."""
        return ""

    def c_init_code(self, **kwargs: Any) -> list[str]:
        """Code run once when the module is loaded (e.g. ``import_array();``)."""
        return []

    def c_compiler(self) -> Any:
        """The compiler to use, or None for the configured one
        (``config.cxx``). A compiler path or name, or a
        :class:`opweave._core.SystemCompiler`."""
        return None

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """A version for this object's C code. opweave keys its cache on the
        full source text, so a changed code always recompiles; the version
        still enters the key. ``()`` means unversioned."""
        warnings.warn(
            f"{type(self).__name__} specifies no C code cache version", UserWarning, stacklevel=2
        )
        return ()


class CLinkerOp(CLinkerObject):
    """The C hooks of an op (see the seed tutorials for their contracts)."""

    params_type: Any = None

    def c_code(
        self, node: Any, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        """C code computing the outputs from the inputs. ``sub["fail"]`` is
        the statement to run (after setting a Python exception) on error."""
        raise NotImplementedError(f"{type(self).__name__} has no c_code")

    def c_code_cache_version_apply(self, node: Any) -> tuple[Any, ...]:
        """The version for one apply; defaults to :meth:`c_code_cache_version`."""
        return self.c_code_cache_version()

    def c_code_cleanup(
        self, node: Any, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        """C code freeing what :meth:`c_code` allocated; runs after it, even
        on failure."""
        return ""

    def c_support_code_apply(self, node: Any, name: str) -> str:
        """Global-scope code for one apply; make its symbols unique with ``name``."""
        return ""

    def c_init_code_apply(self, node: Any, name: str) -> str:
        """Code run once at module load for one apply."""
        return ""

    def c_support_code_struct(self, node: Any, name: str) -> str:
        """Member declarations in the graph's struct: state that lives as long
        as the compiled function."""
        return ""

    def c_init_code_struct(self, node: Any, name: str, sub: dict[str, str]) -> str:
        """Code run once when the function is created (``sub["fail"]`` on error)."""
        return ""

    def c_cleanup_code_struct(self, node: Any, name: str) -> str:
        """Code run when the function is deleted. It must accept state left
        zeroed by an init that did not run."""
        return ""

    def get_params(self, node: Any) -> Any:
        """The params value of ``node``, a value of ``params_type`` that C
        code gets as ``sub["params"]``.

        Raises MethodNotDefined when ``params_type`` is None (the op has no
        params). Otherwise the type makes the value (``params_type.params_of(op)``:
        a :class:`~opweave.link.c.params_type.ParamsType` takes every field
        from the op's attribute of that name, AttributeError naming the
        missing ones). A params type without ``params_of`` needs this method
        overridden (MethodNotDefined otherwise)."""
        params_type = self.params_type
        if params_type is None:
            raise MethodNotDefined(f"{type(self).__name__} has no params (params_type is None)")
        params_of = getattr(params_type, "params_of", None)
        if params_of is None:
            raise MethodNotDefined(
                f"{type(self).__name__}.params_type is a {type(params_type).__name__}, which "
                "cannot make a value from an op (no params_of, as ParamsType has): override "
                "get_params(node) to return its value"
            )
        return params_of(self)


class CLinkerType(CLinkerObject):
    """The C hooks of a type. ``name`` is the C variable of one graph
    variable; ``py_<name>`` is its Python object."""

    def c_declare(self, name: str, sub: dict[str, str], check_input: bool = True) -> str:
        """Declares the C variable(s) for ``name``."""
        raise NotImplementedError(f"{type(self).__name__} has no c_declare")

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        """Initialises ``name`` to an empty value (for outputs and temporaries)."""
        raise NotImplementedError(f"{type(self).__name__} has no c_init")

    def c_extract(
        self, name: str, sub: dict[str, str], check_input: bool = True, **kwargs: Any
    ) -> str:
        """Sets ``name`` from the Python object ``py_<name>``, checking it when
        ``check_input`` is true."""
        raise NotImplementedError(f"{type(self).__name__} has no c_extract")

    def c_extract_out(
        self, name: str, sub: dict[str, str], check_input: bool = True, **kwargs: Any
    ) -> str:
        """Like :meth:`c_extract`, for an output's storage, which may hold
        None: then ``name`` is initialised with :meth:`c_init` instead."""
        extract = self.c_extract(name, sub, check_input, **kwargs)
        return f"if (py_{name} == Py_None) {{\n{self.c_init(name, sub)}}}\nelse {{\n{extract}}}\n"

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        """Points ``py_<name>`` at a Python object holding the value of ``name``."""
        raise NotImplementedError(f"{type(self).__name__} has no c_sync")

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        """Releases what ``name`` holds; must accept a value that was only
        declared and initialised."""
        return ""

    def c_element_type(self) -> str:
        """The C type of one element (e.g. ``npy_float64``), or ``""``."""
        return ""

    def c_literal(self, data: Any) -> str | None:
        """A C expression for the constant ``data``, or None/"" if it has none."""
        return None

    def c_is_simple(self) -> bool:
        """Kept for compatibility; unused."""
        return False

    def c_code_cache_version(self) -> tuple[Any, ...]:
        return ()


class HideC(CLinkerOp):
    """Mix in first to hide an inherited C implementation."""

    def __hide(self, *args: Any, **kwargs: Any) -> Any:
        raise MethodNotDefined("C code is hidden by HideC")

    c_code = __hide  # type: ignore[assignment]
    c_code_cleanup = __hide  # type: ignore[assignment]
    c_support_code = __hide  # type: ignore[assignment]
    c_support_code_apply = __hide  # type: ignore[assignment]

    def c_code_cache_version(self) -> tuple[Any, ...]:
        return ()

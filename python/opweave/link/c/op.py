"""Ops with C code: :class:`COp` (C code returned by methods) and
:class:`ExternalCOp` (C code kept in ``.c`` files split into sections)."""

from __future__ import annotations

import inspect
import os
from typing import TYPE_CHECKING, Any

from opweave.configparser import config
from opweave.graph.op import Op
from opweave.link.c import sections as _sections
from opweave.link.c.interface import CLinkerOp

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["COp", "ExternalCOp"]


class COp(Op, CLinkerOp):
    """An :class:`~opweave.graph.op.Op` with a C implementation (``c_code`` and
    the other hooks of :class:`~opweave.link.c.interface.CLinkerOp`)."""

    def make_c_thunk(
        self,
        node: Any,
        storage_map: dict[Any, list[Any]],
        compute_map: dict[Any, list[bool]],
        no_recycling: Any,
    ) -> Any:
        """A thunk running ``node``'s compiled C code (the node's own module,
        shared through the cache by every node applying an equal op to the
        same types); see :meth:`~opweave.graph.op.Op.make_py_thunk` for the
        protocol. MethodNotDefined if the node has no usable C code."""
        from opweave.graph.op import _storage_thunk
        from opweave.graph.utils import MethodNotDefined
        from opweave.link.c.service import node_thunk

        run = node_thunk(node)
        if run is None:
            raise MethodNotDefined(f"{type(self).__name__} has no C code for {node}")
        return _storage_thunk(node, run, storage_map, compute_map)

    def make_thunk(
        self,
        node: Any,
        storage_map: dict[Any, list[Any]],
        compute_map: dict[Any, list[bool]],
        no_recycling: Any,
        impl: str | None = None,
    ) -> Any:
        """A C thunk (:meth:`make_c_thunk`) unless ``impl="py"``; without C
        code, and unless ``impl="c"``, a ``perform`` thunk. An op with
        neither raises MethodNotDefined."""
        from opweave.graph.utils import MethodNotDefined

        self.prepare_node(node, storage_map, compute_map, impl)
        if impl != "py":
            try:
                return self.make_c_thunk(node, storage_map, compute_map, no_recycling)
            except MethodNotDefined:
                if impl == "c":
                    raise
        return self.make_py_thunk(node, storage_map, compute_map, no_recycling)


class ExternalCOp(COp):
    """An op whose C code lives in files split into ``#section <tag>`` blocks.

    ``func_files`` is one path or a list of them; a relative path is taken
    from the folder of the module that defines the subclass. Each tag feeds
    the hook of the same name (``support_code`` feeds ``c_support_code``,
    ``code`` feeds ``c_code``, ...); repeated tags are joined in file order.
    The apply, struct and code sections get the macros ``APPLY_SPECIFIC``,
    ``DTYPE_INPUT_<i>`` (and the other dtype macros), ``FAIL``, ``PARAMS``,
    ``INPUT_<i>`` and ``OUTPUT_<i>`` described in the op-author guide.

    With ``func_name``, ``c_code`` calls
    ``func_name(inputs..., &outputs... [, params])``; a non-zero return is a
    failure. ``_cop_num_inputs`` / ``_cop_num_outputs`` pad missing
    arguments with NULL. Compiler messages point at the ``.c`` files.
    """

    _cop_num_inputs: int | None = None
    _cop_num_outputs: int | None = None

    def __init__(
        self, func_files: str | Path | list[str | Path], func_name: str | None = None
    ) -> None:
        from pathlib import Path  # an op of C files reads them as paths

        if isinstance(func_files, (str, os.PathLike)):
            func_files = [func_files]
        if not func_files:
            raise ValueError(f"{type(self).__name__}: func_files names no C file")
        paths = [self._resolve(Path(f)) for f in func_files]
        self.func_files = paths
        self.func_name = func_name
        self.func_codes, found = _sections.read_files(paths, type(self).__name__)
        self.code_sections: dict[str, list[_sections.Section]] = {}
        for section in found:
            self.code_sections.setdefault(section.tag, []).append(section)
        if func_name is not None and "code" in self.code_sections:
            raise ValueError(
                f"{type(self).__name__}: a func_name ({func_name!r}) and a '#section code' "
                "block both define c_code; keep one"
            )

    @classmethod
    def _resolve(cls, path: Path) -> Path:
        if path.is_absolute():
            return path
        return (cls._defining_folder() / path).resolve()

    @classmethod
    def _defining_folder(cls) -> Path:
        """The folder of the file defining the (most derived) class: from its
        module, else from the code of one of its methods (for a module run
        with exec or loaded without sys.modules), else the working folder."""
        from pathlib import Path

        try:
            return Path(inspect.getfile(cls)).resolve().parent
        except (TypeError, OSError):
            pass
        for value in vars(cls).values():
            code = getattr(value, "__code__", None)
            filename = getattr(code, "co_filename", "")
            if filename and not filename.startswith("<"):
                return Path(filename).resolve().parent
        return Path.cwd()

    # --- helpers -------------------------------------------------------------

    def _text(self, tag: str) -> str:
        return "".join(s.located() for s in self.code_sections.get(tag, []))

    def _check_input(self) -> bool:
        value = getattr(self, "check_input", None)
        return config.check_input if value is None else bool(value)

    def _apply_macros(self, node: Any, name: str, check_input: bool | None = None) -> list:
        check = self._check_input() if check_input is None else check_input
        return _sections.apply_macros(self, node, name, check)

    # --- module-level sections (no macros) -----------------------------------

    def c_support_code(self, **kwargs: Any) -> str:
        """The ``support_code`` sections."""
        return self._text("support_code")

    def c_init_code(self, **kwargs: Any) -> list[str]:
        """The ``init_code`` sections."""
        text = self._text("init_code")
        return [text] if text else []

    # --- apply and struct sections -------------------------------------------

    def c_support_code_apply(self, node: Any, name: str) -> str:
        """The ``support_code_apply`` sections, with the apply macros."""
        return _sections.wrap(self._text("support_code_apply"), self._apply_macros(node, name))

    def c_init_code_apply(self, node: Any, name: str) -> str:
        """The ``init_code_apply`` sections, with the apply macros."""
        return _sections.wrap(self._text("init_code_apply"), self._apply_macros(node, name))

    def c_support_code_struct(self, node: Any, name: str) -> str:
        """The ``support_code_struct`` sections, with the apply macros."""
        return _sections.wrap(self._text("support_code_struct"), self._apply_macros(node, name))

    def c_cleanup_code_struct(self, node: Any, name: str) -> str:
        """The ``cleanup_code_struct`` sections, with the apply macros."""
        return _sections.wrap(self._text("cleanup_code_struct"), self._apply_macros(node, name))

    def c_init_code_struct(self, node: Any, name: str, sub: dict[str, str]) -> str:
        """The ``init_code_struct`` sections, with ``FAIL`` and ``PARAMS`` too."""
        macros = self._apply_macros(node, name) + _sections.sub_macros(sub)
        return _sections.wrap(self._text("init_code_struct"), macros)

    def c_code(
        self, node: Any, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        """A call to ``func_name``, or the ``code`` sections with every macro."""
        if self.func_name is not None:
            return self._call_code(node, name, inputs, outputs, sub)
        if "code" not in self.code_sections:
            raise NotImplementedError(
                f"{type(self).__name__} has no '#section code' block and no func_name"
            )
        return _sections.wrap(
            self._text("code"), self._code_macros(node, name, inputs, outputs, sub)
        )

    def c_code_cleanup(
        self, node: Any, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        """The ``code_cleanup`` sections, with every macro."""
        macros = self._code_macros(node, name, inputs, outputs, sub)
        return _sections.wrap(self._text("code_cleanup"), macros)

    def _code_macros(
        self, node: Any, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> list[tuple[str, str]]:
        return (
            self._apply_macros(node, name)
            + _sections.sub_macros(sub)
            + _sections.io_macros(inputs, outputs)
        )

    def _call_code(
        self, node: Any, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        func_name = self.func_name
        assert func_name is not None  # c_code calls this only with a func_name
        n_in = self._cop_num_inputs if self._cop_num_inputs is not None else len(inputs)
        n_out = self._cop_num_outputs if self._cop_num_outputs is not None else len(outputs)
        if len(inputs) > n_in or len(outputs) > n_out:
            raise ValueError(
                f"{type(self).__name__}: node has {len(inputs)} inputs and {len(outputs)} "
                f"outputs, more than _cop_num_inputs={n_in} / _cop_num_outputs={n_out}"
            )
        args = [*inputs, *["NULL"] * (n_in - len(inputs))]
        args += [f"&{o}" for o in outputs] + ["NULL"] * (n_out - len(outputs))
        if "params" in sub:
            args.append(sub["params"])
        shown = func_name.replace("\\", "\\\\").replace('"', '\\"')
        code = (
            "{\n"
            f"  int __status = {func_name}({', '.join(args)});\n"
            "  if (__status != 0) {\n"
            "    if (!PyErr_Occurred())\n"
            "      PyErr_Format(PyExc_RuntimeError,\n"
            f'        "%s returned %d without setting an exception", "{shown}", __status);\n'
            f"    {sub['fail']}\n"
            "  }\n"
            "}\n"
        )
        return _sections.wrap(code, self._apply_macros(node, name, check_input=False))

    def c_header_dirs(self, **kwargs: Any) -> list[str]:
        """The folders of the C files, so that ``#include "mine.h"`` finds a
        header that sits next to them."""
        return list(dict.fromkeys(str(path.parent) for path in self.func_files))

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """Derived from the contents of the C files, of the headers they
        include from their folders, and the params type's version."""
        version: tuple[Any, ...] = (_sections.version_of(self.func_codes),)
        includes = _sections.local_includes(self.func_files)
        if includes:
            version += (tuple(includes),)
        params_type = getattr(self, "params_type", None)
        if params_type is not None:
            version += (params_type.c_code_cache_version(),)
        return version

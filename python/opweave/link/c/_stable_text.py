"""A text that names a value the same way in every process, or nothing.

The graph index (:mod:`._graph_index`) files a graph under a hash of its
memo key, so that another process finds it without asking any op for code.
An op's code is a function of its class and its props (PyTensor's contract);
so the text of a key names:

- a class by module and qualified name, the modules of the classes in its
  MRO, and the code of the methods that are not their file's (a hook
  patched at run time is another op; an edited file is found by the
  record's dependency list, which holds every class's file by content);
- an object with ``__props__`` (ops, types) by its class and its props; any
  other object by its class and all its attributes;
- an inner graph (a Composite's) node by node, a constant by its data;
- the configuration by the options that can change code (not where caches
  live: :meth:`opweave.configparser.Snapshot.code_options`), the C files
  of an ExternalCOp by their content (:class:`._node_keys.SourceFiles`);
- numbers, strings, tuples, slices, mappings, NumPy dtypes, arrays and
  ufuncs by value, a module-level function by name.

Anything else has no stable text (:class:`Unstable`): an object without
attributes, a class or function defined inside a function (two of them can
share a name), a class of a module without a source file, a variable
outside an inner graph. A graph
with such a part is not indexed, so it is compiled in every process, as
before; it is never filed under a text that says too little.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from opweave._sha256 import Sha256, sha256_hex
from opweave.configparser import Snapshot
from opweave.graph.basic import is_constant
from opweave.link.c._context import CONTEXT
from opweave.link.c._node_keys import SourceFiles

__all__ = ["Unstable", "stable_text", "stable_texts"]

_MAX_DEPTH = 64
_ARRAY_BYTES = 1 << 16
_PROPS_MEMO_SIZE = 4096


class Unstable(Exception):
    """A value with no text that names it in every process."""


def stable_text(value: Any) -> str:
    """The text of ``value`` (see the top); Unstable if it has none."""
    return _Renderer().text(value)


def stable_texts(values: Any) -> list[str]:
    """The texts of ``values`` (hashable), each kept per equal value: the
    same node signature is rendered once per process. (Equal values have
    equal texts: their ops and types compare by props, and constants come
    as typed data.)"""
    renderer = _Renderer()
    texts = []
    for value in values:
        found = CONTEXT.value_texts.get(value)
        if found is None:
            found = CONTEXT.value_texts[value] = renderer.text(value)
            if len(CONTEXT.value_texts) > _PROPS_MEMO_SIZE:
                del CONTEXT.value_texts[next(iter(CONTEXT.value_texts))]
        texts.append(found)
    return texts


class _Renderer:
    """One rendering: ``seen`` holds the text of each tuple already rendered,
    by id (a graph's key repeats the configuration in every node's part)."""

    def __init__(self) -> None:
        # id -> (the tuple, its text): holding the tuple keeps its id its own
        # (a temporary tuple's id is reused once it is freed).
        self.seen: dict[int, tuple[Any, str]] = {}
        self.depth = 0

    def text(self, value: Any) -> str:
        if self.depth > _MAX_DEPTH:
            raise Unstable("too deep")
        self.depth += 1
        try:
            return self._text(value)
        finally:
            self.depth -= 1

    def _text(self, value: Any) -> str:
        if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            return f"{type(value).__name__}:{value!r};"
        if isinstance(value, tuple):
            found = self.seen.get(id(value))
            if found is None or found[0] is not value:
                items = value.code_options() if isinstance(value, Snapshot) else value
                if isinstance(value, SourceFiles):
                    items = value.contents()
                found = self.seen[id(value)] = (value, self.sequence(items))
            return found[1]
        if isinstance(value, list):
            return self.sequence(value)
        if isinstance(value, slice):
            return "slice" + self.text((value.start, value.stop, value.step))
        if value is Ellipsis:
            return "...;"
        if isinstance(value, (set, frozenset)):
            return "{" + "".join(sorted(self.text(item) for item in value)) + "}"
        if isinstance(value, dict):
            return self.mapping_text(value)
        if isinstance(value, type):
            return _class_text(value)
        return self.object_text(value)

    def mapping_text(self, value: Any) -> str:
        items = sorted((self.text(k), self.text(v)) for k, v in value.items())
        return "{" + "".join(f"{k}={v}" for k, v in items) + "}"

    def sequence(self, items: Any) -> str:
        return "(" + "".join(self.text(item) for item in items) + ")"

    def object_text(self, value: Any) -> str:
        if isinstance(value, np.dtype):
            return f"dtype:{value.str};"
        if isinstance(value, np.generic):
            return f"np:{value.dtype.str}:{value.tobytes().hex()};"
        if isinstance(value, np.ndarray):
            return _array_text(value)
        if isinstance(value, np.ufunc):
            return f"ufunc:{value.__name__};"
        if isinstance(value, enum.Enum):
            return f"{_class_text(type(value))}.{value.name};"
        if callable(getattr(value, "toposort", None)) and hasattr(value, "outputs"):
            return self.graph_text(value)
        if _is_function(value):
            return f"fn:{_code_name(value)}@{_module_text(value.__module__)};"
        props = getattr(type(value), "__props__", None)
        if isinstance(props, tuple):
            return _props_text(self, value, props)
        if isinstance(value, Mapping):  # after the props: an ABC check is slow
            return self.mapping_text(value)
        if hasattr(value, "__dict__") and not hasattr(value, "owner"):
            fields = sorted(vars(value).items())
        else:  # a variable, or an object without attributes
            raise Unstable(f"{type(value).__name__} has no stable text")
        return self.fields_text(value, fields)

    def fields_text(self, value: Any, fields: Any) -> str:
        parts = "".join(f"{name}={self.text(field)}" for name, field in fields)
        return f"{_class_text(type(value))}[{parts}]"

    def graph_text(self, graph: Any) -> str:
        """An inner graph: its inputs' types, then each node's op, inputs (by
        where they come from) and outputs' types, then its outputs."""
        where: dict[int, str] = {}
        out = ["graph["]
        for position, variable in enumerate(graph.inputs):
            where[id(variable)] = f"i{position};"
            out.append(self.text(variable.type))

        def source(variable: Any) -> str:
            found = where.get(id(variable))
            if found is not None:
                return found
            if is_constant(variable):
                return "c:" + self.text((variable.type, variable.data))
            raise Unstable("a variable from outside the graph")

        for index, node in enumerate(graph.toposort()):
            out.append("node:" + self.text(node.op))
            out.extend(source(v) for v in node.inputs)
            for position, variable in enumerate(node.outputs):
                where[id(variable)] = f"n{index}.{position};"
                out.append(self.text(variable.type))
        out.append("out:")
        out.extend(source(v) for v in graph.outputs)
        return "".join(out) + "]"


def _props_text(renderer: _Renderer, value: Any, props: tuple[str, ...]) -> str:
    """The text of an object with ``__props__`` (immutable, as ops and types
    are by contract), kept per object: a graph names its ops and types again
    and again. The memo holds the object, so its id stays its own."""
    found = CONTEXT.props_texts.get(id(value))
    if found is not None and found[0] is value:
        return found[1]
    text = renderer.fields_text(value, [(name, getattr(value, name)) for name in props])
    if len(text) > 256:  # a long text is named by its digest
        text = f"#{sha256_hex(text.encode())}"
    CONTEXT.props_texts[id(value)] = (value, text)
    if len(CONTEXT.props_texts) > _PROPS_MEMO_SIZE:
        del CONTEXT.props_texts[next(iter(CONTEXT.props_texts))]
    return text


def _array_text(value: np.ndarray) -> str:
    if value.dtype.hasobject or value.nbytes > _ARRAY_BYTES:
        raise Unstable("an object or large array")
    digest = sha256_hex(np.ascontiguousarray(value).tobytes())
    return f"array:{value.dtype.str}:{value.shape}:{digest};"


def _is_function(value: Any) -> bool:
    return hasattr(value, "__code__") or type(value).__name__ == "builtin_function_or_method"


def _code_name(value: Any) -> str:
    """``module.qualname`` of a class or function defined at module level."""
    qualname = getattr(value, "__qualname__", "")
    module = getattr(value, "__module__", None)
    if not qualname or not module or "<" in qualname:
        raise Unstable(f"{value!r} is not defined at module level")
    return f"{module}.{qualname}"


def _class_text(cls: type) -> str:
    found = CONTEXT.class_texts.get(cls)
    if found is None:
        files = sorted({_module_text(c.__module__) for c in cls.__mro__ if c is not object})
        methods = [_methods_digest(c) for c in cls.__mro__]
        digest = sha256_hex("\n".join([*files, *methods]).encode())[:16]
        found = CONTEXT.class_texts[cls] = f"<{_code_name(cls)}@{digest}>"
    return found


def _methods_digest(cls: type) -> str:
    """A digest of ``cls``'s own functions, at first sight, kept per class
    (the classes of an MRO are shared by many ops). A function defined in
    the class's body (its qualified name says so) is named: its code is the
    file's, which the class text covers. Any other (a hook patched at run
    time, a method borrowed from another class) adds its code, so that it
    makes another class text."""
    found = CONTEXT.method_digests.get(cls)
    if found is None:
        digest = Sha256()
        for name, attribute in sorted(vars(cls).items()):
            function = getattr(attribute, "__func__", attribute)
            code = getattr(function, "__code__", None)
            if code is None:
                continue
            digest.update(name.encode())
            own = function.__qualname__ == f"{cls.__qualname__}.{name}"
            if own and function.__module__ == cls.__module__:
                continue
            digest.update(f"{function.__module__}.{function.__qualname__}".encode())
            for part in _code_parts(code):
                digest.update(part)
        found = CONTEXT.method_digests[cls] = digest.hexdigest()
    return found


def _code_parts(code: Any) -> list[bytes]:
    """The bytecode, names and constants of ``code`` and of the code nested
    in it (not their addresses)."""
    parts = [code.co_code, repr(code.co_names).encode()]
    for constant in code.co_consts:
        if hasattr(constant, "co_code"):
            parts.extend(_code_parts(constant))
        else:
            parts.append(_constant_text(constant).encode())
    return parts


def _constant_text(constant: Any) -> str:
    """A code constant's text; a frozenset's (``x in {"a", "b"}``) sorted,
    since its order changes with the process's string hashing."""
    if isinstance(constant, frozenset):
        return "{" + ",".join(sorted(_constant_text(c) for c in constant)) + "}"
    if isinstance(constant, tuple):
        return "(" + ",".join(_constant_text(c) for c in constant) + ")"
    return repr(constant)


def _module_text(module_name: str) -> str:
    """The module's name; Unstable for a module without a source file (its
    code cannot be checked in another process). What the file holds is not
    part of the text: a graph record's dependency list holds every file of
    the classes and the code that ran, by content, and a record whose file
    changed is not used (and is replaced)."""
    found = CONTEXT.module_texts.get(module_name)
    if found is None:
        module = sys.modules.get(module_name)
        if module_name != "builtins" and (module is None or not getattr(module, "__file__", None)):
            raise Unstable(f"module {module_name} has no source file")
        found = CONTEXT.module_texts[module_name] = module_name
    return found

"""From a compiled graph to a callable :class:`opweave._core.Function`.

One path for every compiled module: the whole-graph linker, each node's own
module in the per-node linker, and DebugMode's C thunks. Inputs that are
already exact values of their types go straight to C, where the types'
``c_extract`` code checks them. When that check fails, the Function calls its
:class:`Fallback`, which binds the arguments to the graph's inputs, converts
them with ``Type.filter`` (or raises a TypeError naming the input) and calls
again.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from opweave import _core
from opweave.graph.basic import Variable
from opweave.link.compiled import module_part, record_compiled

__all__ = ["Fallback", "InputBinding", "add_note", "compiled_function", "note_failed_node"]

_MISSING = object()


def add_note(error: BaseException, note: str) -> None:
    """``error.add_note(note)`` where Python has it (3.11 and later)."""
    if hasattr(error, "add_note"):
        error.add_note(note)


def note_failed_node(error: BaseException, index: int | None, note: str) -> None:
    """Adds ``note`` (naming the node) to ``error`` and sets
    ``error.failed_node`` to the node's index in the graph's order (the
    number the note uses); the last one set wins, so an outer graph's number
    replaces an inner one's."""
    add_note(error, note)
    if index is not None:
        try:
            error.failed_node = index  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # an exception type without attributes
            pass


class InputBinding:
    """Binds call arguments to a graph's input variables and converts them
    with their types' ``filter``. ``label`` names the callable in errors
    (e.g. ``"function 'f'"``)."""

    def __init__(
        self,
        variables: Sequence[Variable],
        label: str,
        allow_downcast: bool | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        self.variables = list(variables)
        self.label = label
        self.allow_downcast = allow_downcast
        self.positions = {v.name: i for i, v in enumerate(self.variables) if v.name}
        # What each input is called in messages, when not ``input <position>``
        # (e.g. for part of a larger graph).
        self.names = list(names) if names is not None else None

    def describe(self, position: int) -> str:
        """``input <n> ('<name>') of type <type>``."""
        variable = self.variables[position]
        named = f" ({variable.name!r})" if variable.name else ""
        what = self.names[position] if self.names is not None else f"input {position}"
        return f"{what}{named} of type {variable.type}"

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any] | None) -> list[Any]:
        """The value of each input, from positional and keyword arguments;
        a TypeError naming the inputs for a wrong call."""
        expected = len(self.variables)
        names = ", ".join(v.name or f"<input {i}>" for i, v in enumerate(self.variables))
        if len(args) > expected:
            raise TypeError(f"{self.label} takes {expected} inputs ({names}), got {len(args)}")
        values: list[Any] = list(args) + [_MISSING] * (expected - len(args))
        for key, value in (kwargs or {}).items():
            position = self.positions.get(key)
            if position is None:
                raise TypeError(f"{self.label} has no input named {key!r}; its inputs: {names}")
            if values[position] is not _MISSING:
                raise TypeError(f"{self.label} got input {key!r} twice")
            values[position] = value
        missing = [self.describe(i) for i, v in enumerate(values) if v is _MISSING]
        if missing:
            raise TypeError(
                f"{self.label} is missing {', '.join(missing)} "
                f"(it takes {expected} inputs: {names})"
            )
        return values

    def filter(self, values: Sequence[Any]) -> list[Any]:
        """Each value converted by its input's type; a TypeError naming the
        input it does not fit."""
        if len(values) != len(self.variables):
            raise ValueError(f"{len(values)} values for {len(self.variables)} inputs")
        return [self.filter_one(position, value) for position, value in enumerate(values)]

    def call_converted(
        self,
        call_exact: Any,
        args: Sequence[Any],
        kwargs: dict[str, Any] | None,
        error: BaseException | None,
    ) -> Any:
        """``call_exact`` on the arguments bound and converted by their
        types; when ``error`` (what the first call raised) is given, an
        error of this call says the inputs had been converted."""
        values = self.filter(self.bind(args, kwargs))
        try:
            return call_exact(*values)
        except Exception as retry_error:
            if error is not None:
                add_note(retry_error, "(the inputs had been converted with Type.filter)")
            raise

    def filter_one(self, position: int, value: Any) -> Any:
        """``value`` converted by the type of input ``position``."""
        variable = self.variables[position]
        try:
            return variable.type.filter(value, strict=False, allow_downcast=self.allow_downcast)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"bad argument for {self.describe(position)} of {self.label}: {error}"
            ) from error


class Fallback:
    """What a compiled Function does with a call its C code did not accept:
    an error raised by a node's code is re-raised with a note naming the
    node and the node's number as ``error.failed_node`` (and, when an
    output's type rejected the value, the position of that output as
    ``error.failed_output``); a call with keywords, a wrong
    count or inexact inputs is bound, converted and run again."""

    def __init__(
        self,
        binding: InputBinding,
        block_names: dict[int, str],
        output_blocks: dict[int, int] | None = None,
        node_blocks: dict[int, int] | None = None,
    ) -> None:
        self.binding = binding
        self.block_names = block_names
        self.output_blocks = output_blocks or {}
        self.node_blocks = node_blocks or {}
        # A weak reference: the Function owns this fallback, and a cycle would
        # delay freeing the compiled struct until the garbage collector runs.
        self.function: Any = lambda: None

    def __call__(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        error: BaseException | None,
        failed_block: int,
    ) -> Any:
        if error is not None and failed_block > len(self.binding.variables):
            where = self.block_names.get(failed_block)
            if where:
                note = f"raised by the C code of {where}"
                note_failed_node(error, self.node_blocks.get(failed_block), note)
            if failed_block in self.output_blocks:
                # The output's type rejected the value its op's code made.
                error.failed_output = self.output_blocks[failed_block]  # type: ignore[attr-defined]
            raise error
        function = self.function()
        if function is None:
            raise ReferenceError("the opweave function was deleted")
        return self.binding.call_converted(function.call_exact, args, kwargs, error)


def compiled_function(compiled: Any, binding: InputBinding, single: bool) -> Any:
    """A :class:`opweave._core.Function` running ``compiled`` (a
    :class:`~opweave.link.c.basic.CompiledGraph`): one instance of its
    struct, the fallback above, and the record of its one module
    (:class:`~opweave.link.compiled.Compiled`)."""
    fallback = Fallback(binding, compiled.block_names, compiled.output_blocks, compiled.node_blocks)
    fn: Any = _core.Function(  # with the attributes compile.function.Function declares
        module=compiled.module, orphans=compiled.orphans, unpack_single=single, fallback=fallback
    )
    fallback.function = weakref.ref(fn)
    return record_compiled(fn, parts=(module_part(compiled),), whole=True)

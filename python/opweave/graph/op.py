"""The :class:`Op` base class: what a graph operation is, in Python."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from opweave.graph.basic import Apply, is_variable
from opweave.graph.utils import MethodNotDefined

__all__ = ["Op", "op_label"]


class Op:
    """A graph operation.

    Subclasses define :meth:`make_node` (or the ``itypes``/``otypes``
    attributes) and :meth:`perform`; ops with C code also define ``c_code``
    and its friends (see :class:`opweave.link.c.op.COp`). Calling an op on
    variables builds an :class:`~opweave.graph.basic.Apply` node and returns
    its output, or the list of its outputs.

    ``__props__`` names the attributes that define the op: two ops of the same
    class with equal props are equal, hash alike and print alike. Without
    ``__props__``, an op is only equal to itself.
    """

    __props__: ClassVar[tuple[str, ...]]
    view_map: ClassVar[dict[int, list[int]]] = {}
    destroy_map: ClassVar[dict[int, list[int]]] = {}
    default_output: ClassVar[int | None] = None
    itypes: Sequence[Any] | None = None
    otypes: Sequence[Any] | None = None

    def make_node(self, *inputs: Any) -> Apply:
        """Builds the Apply node of this op on ``inputs``. The default uses
        ``itypes`` and ``otypes``; other ops must override it."""
        if self.itypes is None or self.otypes is None:
            raise MethodNotDefined(
                f"{type(self).__name__} defines neither make_node nor itypes/otypes"
            )
        if len(inputs) != len(self.itypes):
            raise TypeError(f"{self} takes {len(self.itypes)} inputs, got {len(inputs)}")
        checked = []
        for position, (value, itype) in enumerate(zip(inputs, self.itypes, strict=True)):
            if not is_variable(value) or value.type != itype:
                got = value.type if is_variable(value) else type(value).__name__
                raise TypeError(f"{self}: input {position} must be of type {itype}, got {got}")
            checked.append(value)
        return Apply(self, checked, [otype() for otype in self.otypes])

    def __call__(self, *inputs: Any, return_list: bool = False, **kwargs: Any) -> Any:
        """Applies the op: returns the output variable, or the list of outputs
        when there are several (or when ``return_list`` is true)."""
        node = self.make_node(*inputs, **kwargs)
        if return_list:
            return list(node.outputs)
        if self.default_output is not None:
            return node.outputs[self.default_output]
        if len(node.outputs) == 1:
            return node.outputs[0]
        return list(node.outputs)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        """Computes the outputs in Python: ``output_storage[i][0] = value``."""
        raise MethodNotDefined(f"{type(self).__name__} has no perform (Python implementation)")

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        """Whether :func:`opweave.function` may replace ``node`` by its value
        when all its inputs are constants. Return False for ops with side
        effects or state (e.g. a counter kept in the C struct)."""
        return True

    def python_constant_folding(self, node: Apply) -> bool:
        """Whether constant folding should run ``perform`` rather than
        compile the node's C code (worth it when the C compile costs more
        than the Python computation)."""
        return False

    # --- thunks (PyTensor's per-node protocol) --------------------------------

    def prepare_node(
        self, node: Apply, storage_map: Any, compute_map: Any, impl: str | None
    ) -> None:
        """Called before a thunk is made for ``node`` (``impl``: ``"c"``,
        ``"py"`` or None); ops that need to set something up override it."""

    def make_py_thunk(
        self,
        node: Apply,
        storage_map: dict[Any, list[Any]],
        compute_map: dict[Any, list[bool]],
        no_recycling: Any,
        debug: bool = False,
    ) -> Any:
        """A thunk running ``perform``: ``thunk()`` reads the inputs from
        ``storage_map`` (one-element lists), writes the outputs there, marks
        them computed in ``compute_map`` and returns None. MethodNotDefined
        if the op has no perform."""
        from opweave.graph.perform import has_perform, perform_thunk

        if not has_perform(self):
            raise MethodNotDefined(f"{type(self).__name__} has no perform (Python implementation)")
        return _storage_thunk(node, perform_thunk(node), storage_map, compute_map)

    def make_thunk(
        self,
        node: Apply,
        storage_map: dict[Any, list[Any]],
        compute_map: dict[Any, list[bool]],
        no_recycling: Any,
        impl: str | None = None,
    ) -> Any:
        """A thunk computing ``node`` (see :meth:`make_py_thunk`); an op
        with C code (:class:`~opweave.link.c.op.COp`) gives a C thunk unless
        ``impl="py"``."""
        self.prepare_node(node, storage_map, compute_map, impl)
        return self.make_py_thunk(node, storage_map, compute_map, no_recycling)

    # --- __props__ -----------------------------------------------------------

    def _props(self) -> tuple[Any, ...]:
        """The values of ``__props__``, in order."""
        return tuple(getattr(self, name) for name in type(self).__props__)

    def _props_dict(self) -> dict[str, Any]:
        """``__props__`` as a dict."""
        return {name: getattr(self, name) for name in type(self).__props__}

    def __eq__(self, other: object) -> bool:
        if not hasattr(type(self), "__props__"):
            return self is other
        if type(self) is not type(other):
            return False
        return all(_same(a, b) for a, b in zip(self._props(), other._props(), strict=True))  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        if not hasattr(type(self), "__props__"):
            return object.__hash__(self)
        return hash((type(self), *(_hashable(value) for value in self._props())))

    def __str__(self) -> str:
        if not hasattr(type(self), "__props__") or not type(self).__props__:
            return type(self).__name__
        fields = ", ".join(f"{name}={value!r}" for name, value in self._props_dict().items())
        return f"{type(self).__name__}{{{fields}}}"

    def __repr__(self) -> str:
        return str(self)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b)) and np.asarray(a).dtype == np.asarray(b).dtype
    return bool(a == b)


def _hashable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def _storage_thunk(
    node: Apply,
    run: Any,
    storage_map: dict[Any, list[Any]],
    compute_map: dict[Any, list[bool]],
) -> Any:
    """A PyTensor-style thunk around ``run(values) -> outputs``: it reads the
    node's inputs from their cells in ``storage_map``, stores the outputs
    in theirs, marks them computed and returns None (nothing more needed)."""
    inputs = [storage_map[v] for v in node.inputs]
    outputs = [storage_map[v] for v in node.outputs]
    computed = [compute_map[v] for v in node.outputs if v in compute_map]

    def thunk() -> None:
        values = run([cell[0] for cell in inputs])
        for cell, value in zip(outputs, values, strict=True):
            cell[0] = value
        for flag in computed:
            flag[0] = True

    thunk.inputs = inputs  # type: ignore[attr-defined]
    thunk.outputs = outputs  # type: ignore[attr-defined]
    thunk.lazy = False  # type: ignore[attr-defined]
    return thunk


def op_label(op: Any) -> str:
    """``str(op)`` for messages, or the op's class name when its
    ``__str__`` fails (it may read an attribute the op never set)."""
    try:
        return str(op)
    except Exception:
        return type(op).__name__

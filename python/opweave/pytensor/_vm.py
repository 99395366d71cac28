"""What PyTensor's ``Function`` calls: the compiled graph bound to its input
and output cells (:class:`opweave._core.CellCall`, a call in C), with the
attributes ``Function`` reads from a virtual machine: ``nodes``,
``thunks``, ``position_of_error``, ``storage_map``, ``allow_gc``."""

from __future__ import annotations

from typing import Any

from opweave import _core
from opweave.link.thunk import Thunk

__all__ = ["NodeCells", "StorageMap", "opweave_vm"]


class StorageMap(dict):
    """The graph's ``storage_map`` (variable -> cell). PyTensor's
    ``Function.free()`` empties the cells of its items; reading them through
    :meth:`items` also has the compiled graph release the intermediate
    results it keeps in C between calls (its instance is made anew: nothing
    is lost but preallocated storage)."""

    free: Any = None

    def items(self) -> Any:  # type: ignore[override]
        if self.free is not None:
            self.free()
        return super().items()


class NodeCells:
    """What PyTensor's error report reads of the thunk of a failed node: its
    input and output cells (``inputs``, ``outputs``). Calling it runs the
    whole graph, which is what runs the node."""

    def __init__(self, vm: _core.CellCall, inputs: list[list[Any]], outputs: list[list[Any]]):
        self.vm = vm
        self.inputs = inputs
        self.outputs = outputs

    def __call__(self) -> Any:
        return self.vm()


def opweave_vm(thunk: Thunk, allow_gc: bool) -> _core.CellCall:
    """``thunk``'s function bound to its input and output cells, with the
    attributes PyTensor's ``Function`` reads."""
    if isinstance(thunk.function, _core.Function):
        # PyTensor's Function filtered the inputs already, or trusts them
        # (trust_input): a value the C code refuses raises, never converted.
        thunk.function.trust_input = True
    vm = _core.CellCall(
        thunk.function,
        tuple(c.storage for c in thunk.inputs),
        tuple(c.storage for c in thunk.outputs),
    )
    storage_map = StorageMap(thunk.storage_map)
    storage_map.free = thunk.function.free
    vm.nodes = thunk.nodes
    vm.thunks = [
        NodeCells(
            vm,
            [storage_map.get(v, [None]) for v in node.inputs],
            [storage_map.get(v, [None]) for v in node.outputs],
        )
        for node in thunk.nodes
    ]
    vm.storage_map = storage_map
    vm.allow_gc = allow_gc
    vm.need_update_inputs = True
    vm.time_thunks = False
    vm.lazy = False
    return vm

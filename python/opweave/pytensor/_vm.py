# mypy: disable-error-code="import-not-found"
# (PyTensor is optional: opweave[pytensor]; without it, its modules are Any.)
"""What PyTensor's ``Function`` calls: the compiled graph bound to its input
and output cells (:class:`opweave._core.CellCall`, a call in C), with the
attributes ``Function`` reads from a virtual machine: ``nodes``,
``thunks``, ``position_of_error``, ``storage_map``, ``allow_gc``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from opweave import _core
from opweave._logs import get_logger
from opweave.link.thunk import Thunk

__all__ = ["NodeCells", "ReleasingCell", "opweave_vm"]

_log = get_logger(__name__)


class ReleasingCell(list):
    """The cell of one intermediate result in the ``storage_map``: the
    compiled graph keeps its intermediates in C, not in cells, so
    PyTensor's ``Function.free()``, which empties the cells of the
    intermediates, has the graph release them (``function.free()``: its
    instance is made anew, nothing is lost but preallocated storage) when
    it empties this one. Reading the map, or a cell, frees nothing."""

    def __init__(self, release: Callable[[], Any]) -> None:
        super().__init__([None])
        self.release = release

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        if value is None:
            self.release()


class NodeCells:
    """What PyTensor's error report reads of the thunk of a failed node: its
    input and output cells (``inputs``, ``outputs``). The compiled graph
    keeps intermediate results in C: reading ``inputs`` fills the cells of
    the node's intermediate inputs with their values, computed again in
    Python from the call's inputs, so the report shows their real shapes
    and values. Calling it runs the whole graph, which is what runs the
    node."""

    def __init__(
        self,
        vm: _core.CellCall,
        node: Any,
        cells: tuple[list[list[Any]], list[list[Any]]],
        recompute: Callable[[list[Any]], Sequence[Any] | None],
    ) -> None:
        self.vm = vm
        self.node = node
        self.cells, self.outputs = cells
        self.recompute = recompute

    @property
    def inputs(self) -> list[list[Any]]:
        """The node's input cells, the intermediate ones filled with their
        values for the last call's inputs."""
        missing = [k for k, variable in enumerate(self.node.inputs) if variable.owner is not None]
        if missing:
            values = self.recompute([self.node.inputs[k] for k in missing]) or [None] * len(missing)
            for k, value in zip(missing, values, strict=True):
                self.cells[k] = [value]
        return self.cells

    def __call__(self) -> Any:
        return self.vm()


def _recompute(graph: Any, cells: list[list[Any]]) -> Callable[[list[Any]], Sequence[Any] | None]:
    """``recompute(variables)``: their values for the inputs now in
    ``cells`` (the cells of ``graph``'s inputs), computed by PyTensor's
    Python linker; None when that fails (the report then shows what it
    can)."""

    def recompute(variables: list[Any]) -> Sequence[Any] | None:
        import pytensor
        from pytensor.compile.mode import Mode

        try:
            values = [copy.deepcopy(cell[0]) for cell in cells]  # in-place nodes may run
            again = pytensor.function(
                list(graph.inputs),
                variables,
                mode=Mode(linker="py", optimizer=None),
                on_unused_input="ignore",
                accept_inplace=True,
            )
            return list(again(*values))
        except Exception:
            _log.debug("the failed node's inputs could not be computed again", exc_info=True)
            return None

    return recompute


def opweave_vm(thunk: Thunk, allow_gc: bool, graph: Any, cells: list[list[Any]]) -> _core.CellCall:
    """``thunk``'s function bound to its input and output cells, with the
    attributes PyTensor's ``Function`` reads; ``graph`` is PyTensor's
    graph, ``cells`` the cells of its inputs."""
    if isinstance(thunk.function, _core.Function):
        # PyTensor's Function filtered the inputs already, or trusts them
        # (trust_input): a value the C code refuses raises, never converted.
        thunk.function.trust_input = True
    # The graph's updates (output k feeds input i back) are done by the call
    # itself, as PyTensor's own virtual machines do them: Scan's loop calls
    # its inner function's vm() directly, and Function then leaves them to it.
    mapping = getattr(graph, "update_mapping", None) or {}
    updates = tuple(sorted((int(i), int(k)) for k, i in mapping.items()))
    vm = _core.CellCall(
        thunk.function,
        tuple(c.storage for c in thunk.inputs),
        tuple(c.storage for c in thunk.outputs),
        updates,
    )
    storage_map = dict(thunk.storage_map)
    release = getattr(thunk.function, "free", None)
    outputs = {id(c.storage) for c in thunk.outputs}
    if release is not None:
        for variable, cell in storage_map.items():
            if variable.owner is not None and id(cell) not in outputs:
                storage_map[variable] = ReleasingCell(release)
                break  # one is enough: free() empties them all
    recompute = _recompute(graph, cells)
    vm.nodes = thunk.nodes
    vm.thunks = [
        NodeCells(
            vm,
            node,
            (
                [storage_map.get(v, [None]) for v in node.inputs],
                [storage_map.get(v, [None]) for v in node.outputs],
            ),
            recompute,
        )
        for node in thunk.nodes
    ]
    vm.storage_map = storage_map
    vm.allow_gc = allow_gc
    vm.need_update_inputs = False  # the call does them (above)
    vm.time_thunks = False
    vm.lazy = False
    return vm

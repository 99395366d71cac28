"""PyTensor's per-node virtual machine linker, by its module path:
:class:`VMLinker` is the per-node linker (``mode="c|py"``), which runs the
nodes that have C code in C (consecutive ones as one compiled module) and
the others through ``perform``."""

from __future__ import annotations

from typing import Any

from opweave.link.c.opwise import OpWiseCLinker

__all__ = ["VMLinker"]


class VMLinker(OpWiseCLinker):
    """The per-node linker. PyTensor's options (``use_cloop``, ``lazy``,
    ...) are accepted; the node loop is always the C one of ``mode="c|py"``
    (:class:`opweave._core.StepRunner`, :mod:`opweave.link.c._step_table`);
    with ``allow_gc`` (the default) each value between steps is released
    right after its last reader. Each compiled region keeps its own
    storage, but that in ``no_recycling`` (:class:`~opweave.link.thunk.Linker`)."""

    def __init__(
        self,
        allow_gc: bool | None = None,
        use_cloop: bool = False,
        callback: Any = None,
        lazy: bool | None = None,
        schedule: Any = None,
        c_thunks: bool | None = None,
        allow_partial_eval: bool | None = None,
    ) -> None:
        if callback is not None:
            raise NotImplementedError("VMLinker(callback=...) is not supported by opweave")
        super().__init__(allow_gc, schedule)
        self.use_cloop = use_cloop
        self.c_thunks = c_thunks

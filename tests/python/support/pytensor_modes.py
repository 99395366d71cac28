"""The modes the kernel tests compare (needs PyTensor): opweave's linker,
PyTensor's perform (the py linker) and opweave's DebugMode, all without
rewrites, and ``both``: a graph compiled on the first two."""

from __future__ import annotations

from typing import Any

import pytensor
from pytensor.compile.mode import Mode

from opweave.compile.debugmode import DebugMode
from opweave.pytensor import OpweaveLinker

OPWEAVE = Mode(linker="opweave", optimizer=None)
PERFORM = Mode(linker="py", optimizer=None)
DEBUG = Mode(
    linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
)


def both(inputs: Any, outputs: Any) -> list[Any]:
    """The graph on opweave and on perform (in-place nodes accepted, inputs
    the outputs do not use ignored)."""
    return [
        pytensor.function(inputs, outputs, mode=m, accept_inplace=True, on_unused_input="ignore")
        for m in (OPWEAVE, PERFORM)
    ]

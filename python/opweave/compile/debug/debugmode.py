"""DebugMode under PyTensor's path; see :mod:`opweave.compile.debugmode`."""

from __future__ import annotations

from opweave.compile.debugmode import *  # noqa: F403
from opweave.compile.debugmode import __all__ as __all__

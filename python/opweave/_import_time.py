"""When opweave was first imported, on the filesystem's clock, and the
modules whose import had begun by then: link/c/_dep_modules.py bounds when
a module's file was read by it (a module imported later was read later)."""

from __future__ import annotations

import sys
import time

__all__ = ["BEFORE", "NS"]

# Linux's CLOCK_REALTIME_COARSE, the clock of files' times (Python names no
# constant for it).
CLOCK_REALTIME_COARSE = 5

try:
    NS = time.clock_gettime_ns(CLOCK_REALTIME_COARSE)
except OSError:  # not Linux: the precise clock, a coarse tick earlier
    NS = time.time_ns() - 10_000_000
BEFORE = frozenset(sys.modules)

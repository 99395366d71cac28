"""Precompiled preludes: which one a module may use, and building them in the
background (see :mod:`opweave.link.c.cmodule`).

The C++ core decides whether a compile uses a prelude (it must be built,
verified, and the compiler must be GCC without a launcher); just before a
compile that could have used a prelude not built yet, it calls back
(:func:`starter`), and this module builds that prelude in a daemon thread,
at most one per prelude and process, in parallel with the compile, so that
the compiles after it are faster. At exit the interpreter waits a little for such builds, so that a
short script still leaves the prelude for the next process, unless the exit
follows an interrupt: then the builds are cancelled and their compilers
killed at once.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable, Sequence

from opweave import _core
from opweave._logs import get_logger
from opweave.link.c._abi_keys import numpy_abi_key, python_abi_key
from opweave.link.c._context import CONTEXT

_log = get_logger("opweave")

#: The first lines of every generated module; a prelude starts with them.
PYTHON_PRELUDE: str = _core.PYTHON_PRELUDE

_NUMPY_INCLUDE = "#include <numpy/"

# How long the interpreter waits at exit for prelude builds still running,
# and for cancelled ones to return.
_EXIT_WAIT_SECONDS = 10.0
_CANCELLED_WAIT_SECONDS = 5.0


def choose(sources: Sequence[str], job: _core.CompileJob) -> _core.PreludeRequest | None:
    """The prelude of the texts ``sources`` compiled with ``job``: the lines
    the includes of every one of them start with (``_core.prelude_text_of``:
    Python.h, then standard and NumPy headers), so that compiling a source
    with it compiles the same program, and a module sees no name it did not
    include. NumPy's headers stay out unless the job finds them in the
    imported NumPy's include directory (the key holds that NumPy's ABI).
    None when no source includes Python.h."""
    text = _core.prelude_text_of(list(sources))
    if not text:
        return None
    if _NUMPY_INCLUDE in text:
        import numpy

        if numpy.get_include() in job.include_dirs:
            return _core.PreludeRequest(text, f"{python_abi_key()};{numpy_abi_key()}")
        text = text[: text.index(_NUMPY_INCLUDE)]
    return _core.PreludeRequest(text, python_abi_key())


def starter(
    cache: _core.ModuleCache, compiler: _core.SystemCompiler
) -> Callable[[_core.ModuleRequest], None]:
    """The callback build_module calls just before a compile that could use
    a prelude not built yet: it starts that prelude's build."""
    return lambda request: start_build(cache, compiler, request)


def start_build(
    cache: _core.ModuleCache, compiler: _core.SystemCompiler, request: _core.ModuleRequest
) -> None:
    """Starts building ``request.prelude`` in a daemon thread, unless this
    process already builds it or failed to. Other processes are kept out by
    the key's lock in the cache."""
    prelude = request.prelude
    assert prelude is not None  # build_module calls this for a request with a prelude
    key = _core.prelude_key(compiler, request.job, prelude.header_text, prelude.extra)
    build = (str(cache.root), key)
    with CONTEXT.prelude_lock:
        if build in CONTEXT.prelude_builds or build in CONTEXT.prelude_failed:
            return
        thread = threading.Thread(
            target=_build,
            args=(cache, compiler, request.copy(), build),  # the caller may change its own
            name=f"opweave-prelude-{key[:12]}",
            daemon=True,
        )
        CONTEXT.prelude_builds[build] = thread
        if not CONTEXT.prelude_exit_hook:
            atexit.register(_at_exit)
            CONTEXT.prelude_exit_hook = True
        thread.start()
    _log.debug("building precompiled prelude %s in the background", key[:12])


def wait_for_prelude_builds(timeout: float | None = None) -> bool:
    """Waits for the prelude builds this process started; returns whether
    none is still running (at most ``timeout`` seconds, if given)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with CONTEXT.prelude_lock:
            running = list(CONTEXT.prelude_builds.values())
        if not running:
            return True
        for thread in running:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(left)
            if thread.is_alive():
                return False


def note_interrupt() -> None:
    """Records that a compile of this process was interrupted, so that exit
    does not wait for background builds."""
    CONTEXT.prelude_interrupted = True


def _interrupted() -> bool:
    last = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return CONTEXT.prelude_interrupted or isinstance(last, KeyboardInterrupt)


def _at_exit() -> None:
    if _interrupted():
        # Their compilers are killed at once. The threads are still waited
        # for (briefly) until they are back in Python: a daemon thread that
        # takes the GIL back after the interpreter has begun to finalize is
        # ended by pthread_exit, which inside pybind11's GIL guard (a
        # destructor) aborts the whole process instead of letting it die of
        # its KeyboardInterrupt.
        _core.cancel_builds()
        wait_for_prelude_builds(_CANCELLED_WAIT_SECONDS)
        return
    wait_for_prelude_builds(_EXIT_WAIT_SECONDS)


def _build(
    cache: _core.ModuleCache,
    compiler: _core.SystemCompiler,
    request: _core.ModuleRequest,
    build: tuple[str, str],
) -> None:
    """The background thread's body: builds the prelude (the binding
    releases the GIL); a failure only means that modules compile without it."""
    key = build[1]
    try:
        built = _core.build_prelude(cache, compiler, request)
        _log.info(
            "built precompiled prelude %s (%s) in %.2f s: %s",
            key[:12],
            built.entry.label,
            built.entry.compile_seconds,
            built.outcome,
        )
    except Exception as error:  # any failure only disables the prelude
        _log.info(
            "precompiled prelude %s not built; modules compile without it: %s", key[:12], error
        )
        with CONTEXT.prelude_lock:
            CONTEXT.prelude_failed.add(build)
    finally:
        with CONTEXT.prelude_lock:
            CONTEXT.prelude_builds.pop(build, None)

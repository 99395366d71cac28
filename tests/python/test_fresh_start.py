"""What a fresh process pays to start: the stand-ins for standard modules
whose import is heavy (``hashlib`` loads OpenSSL, ``shutil`` the compression
modules, ``subprocess`` its own, ``logging`` threading and more, ``pathlib``
urllib and ipaddress), and a
fresh process's cache hit, which imports none of them
(benchmarks/bench_fresh.py measures the time)."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import sys
from pathlib import Path

import pytest
from support.helpers import describe, run_command

from opweave import _logs, config
from opweave._on_path import on_path
from opweave._sha256 import Sha256, sha256_hex


@pytest.mark.parametrize(
    "data", [b"", b"abc", "caf\u00e9", bytearray(b"x" * 100_000), memoryview(b"view")]
)
def test_sha256_hex_is_hashlib_s(data: bytes | bytearray | memoryview | str) -> None:
    raw = data.encode() if isinstance(data, str) else bytes(data)
    assert sha256_hex(data) == hashlib.sha256(raw).hexdigest()


def test_an_incremental_sha256_hashes_its_parts_in_order() -> None:
    digest, reference = Sha256(), hashlib.sha256()
    for part in (b"one", b"", b"two" * 1000, b"\0three"):
        digest.update(part)
        reference.update(part)
    assert digest.hexdigest() == reference.hexdigest()
    assert Sha256().hexdigest() == hashlib.sha256().hexdigest()


def test_on_path_finds_what_which_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    plain = tmp_path / "bin" / "plain"
    plain.write_text("not executable")
    (tmp_path / "bin" / "folder").mkdir()
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'nowhere'}{os.pathsep}{tool.parent}")
    for name in ("tool", "plain", "folder", "missing", str(tool), str(plain), "sh"):
        assert on_path(name) == shutil.which(name), name
    assert on_path("tool") == str(tool)


_GRAPH = """
import sys
import numpy  # what NumPy imports itself is not opweave's (NumPy 1.24 imports hashlib)
before = set(sys.modules)
import opweave
from opweave.examples.double_ops import add, double
opweave.config.compiledir = sys.argv[1]
x, y = double("x"), double("y")
f = opweave.function([x, y], add(x, y))
assert f(2.0, 3.0) == 5.0
heavy = ["hashlib", "logging", "pathlib", "shutil", "subprocess", "tempfile"]
found = [name for name in heavy if name in sys.modules and name not in before]
# An inotify queue makes the process's exit slower (cpp/cache/header_watch.hpp).
import os
for fd in os.listdir("/proc/self/fd"):
    try:
        found += ["inotify"] if "inotify" in os.readlink(f"/proc/self/fd/{fd}") else []
    except OSError:
        pass  # the listing's own descriptor, closed since
print(" ".join(found))
"""


@pytest.mark.skipif(not config.cxx, reason="needs a C++ compiler")
def test_a_fresh_process_s_hit_imports_no_heavy_standard_module(isolated_cache: Path) -> None:
    """Nor does it or a cold build make an inotify queue (the header watch's,
    which only a process that sees the same headers dozens of times makes)."""
    command = [sys.executable, "-c", _GRAPH, str(isolated_cache)]
    built = run_command(command, timeout=300)
    assert built.returncode == 0, describe(built)
    assert "inotify" not in built.stdout, describe(built)
    hit = run_command(command, timeout=300)
    assert hit.returncode == 0, describe(hit)
    assert hit.stdout.strip() == "", describe(hit)


def test_a_logger_emits_what_logging_s_would_with_the_caller_s_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = _logs.get_logger("opweave.test_logs")
    with caplog.at_level(logging.INFO, logger="opweave.test_logs"):
        log.debug("hidden %d", 1)
        log.info("shown %d", 2)
        line = sys._getframe().f_lineno - 1
        log.log(_logs.WARNING, "warned %s", "x")
        assert log.isEnabledFor(_logs.INFO) and not log.isEnabledFor(_logs.DEBUG)
    records = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert records == [
        ("opweave.test_logs", logging.INFO, "shown 2"),
        ("opweave.test_logs", logging.WARNING, "warned x"),
    ]
    assert caplog.records[0].pathname == __file__ and caplog.records[0].lineno == line


_NO_LOGGING = """
import sys
from opweave._logs import get_logger
log = get_logger("opweave")
log.info("dropped %d", 1)
assert not log.isEnabledFor(20)
assert "logging" not in sys.modules  # nobody could have configured a handler
log.warning("shown %d", 2)  # logging's last resort: standard error
assert "logging" in sys.modules
"""


def test_before_logging_is_imported_info_goes_nowhere_and_warnings_to_stderr() -> None:
    result = run_command([sys.executable, "-c", _NO_LOGGING], timeout=120)
    assert result.returncode == 0, describe(result)
    assert result.stderr.strip() == "shown 2", describe(result)

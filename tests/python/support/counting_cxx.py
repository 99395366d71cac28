"""A compiler wrapper that counts the compiler's runs (compiles, links),
for the tests of what a build compiles."""

from __future__ import annotations

import stat
from pathlib import Path

import opweave


def counting_compiler(tmp_path: Path) -> tuple[str, Path]:
    """A compiler wrapper that logs each run's arguments, then runs the
    configured compiler."""
    log = tmp_path / "runs.log"
    wrapper = tmp_path / "counting-cxx"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {opweave.config.cxx} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper), log


def runs(log: Path) -> tuple[int, int]:
    """(compiles, links) logged since the last call."""
    lines = log.read_text().splitlines() if log.exists() else []
    log.write_text("")
    compiles = sum(" -c " in f" {line} " for line in lines)
    links = sum(line.startswith("-shared") for line in lines)
    return compiles, links

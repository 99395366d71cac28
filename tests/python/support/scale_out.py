"""What the scale-out tests share: the graph they build, a compiler that logs
its runs, and a "machine" (a cache root used by a fresh process)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

from support.helpers import run_graph

GRAPH = "units:30"  # 30 distinct node codes: compiled as units, then linked


def logging_compiler(tmp_path: Path) -> tuple[str, Path]:
    """A g++ wrapper that logs every run's arguments."""
    log = tmp_path / "compiler-runs.log"
    wrapper = tmp_path / "logging-cxx"
    cxx = shutil.which("g++")
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {cxx} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper), log


def compiles(log: Path) -> list[str]:
    """The logged runs that compiled or linked (all but version queries),
    and the log emptied."""
    lines = log.read_text().splitlines() if log.exists() else []
    log.write_text("")
    return [line for line in lines if line.strip() != "--version"]


def flags(**options: object) -> dict[str, str]:
    text = ",".join(f"{name}={value}" for name, value in options.items())
    return {"OPWEAVE_FLAGS": text}


def machine(root: Path, graph: str = GRAPH, env: dict[str, str] | None = None) -> dict:
    report = run_graph(root, graph, env=env)
    assert report["right"], report
    return report

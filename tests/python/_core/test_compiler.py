"""The compiler driver through the bindings: identity, command lines, a real
compile, the GIL released while compiling, and a launcher."""

from __future__ import annotations

import ctypes
import os
import stat
from pathlib import Path

from support.helpers import ticking_thread

from opweave import _core

ANSWER_SOURCE = 'extern "C" __attribute__((visibility("default"))) int answer() { return 42; }\n'


def make_job(tmp_path: Path) -> _core.CompileJob:
    job = _core.CompileJob()
    job.source = tmp_path / "answer.cpp"
    job.output = tmp_path / "answer.so"
    job.source.write_text(ANSWER_SOURCE)
    return job


def test_identity_names_a_real_compiler() -> None:
    compiler = _core.SystemCompiler()
    identity = compiler.identity
    assert os.path.isabs(identity["path"]) and os.access(identity["path"], os.X_OK)
    assert identity["version"].strip()
    assert identity["launcher"] == []
    assert identity["path"] in compiler.key_material()


def test_compile_produces_a_loadable_library(tmp_path: Path) -> None:
    compiler = _core.SystemCompiler()
    job = make_job(tmp_path)
    job.opt_level = _core.OptLevel.O0
    job.debug_info = _core.DebugInfo.YES
    [command] = compiler.command_lines(job)
    assert "-O0" in command and "-g" in command and "-fvisibility=hidden" in command
    result = compiler.compile(job)
    assert result["commands"] == [command]
    assert result["seconds"] > 0
    assert ctypes.CDLL(str(job.output)).answer() == 42


def test_compiling_releases_the_gil(tmp_path: Path) -> None:
    compiler = _core.SystemCompiler()
    job = make_job(tmp_path)
    job.source.write_text("#include <regex>\n" + ANSWER_SOURCE)  # a compile of ~0.5 s
    with ticking_thread() as ticks:
        before = ticks[0]
        compiler.compile(job)
        during = ticks[0] - before
    assert during > 10  # the thread ran while the main thread compiled


def test_launcher_prefixes_compile_step_only(tmp_path: Path) -> None:
    log = tmp_path / "launcher.log"
    launcher = tmp_path / "fake-ccache"
    launcher.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    compiler = _core.SystemCompiler(launcher=str(launcher))
    assert compiler.identity["launcher"] == [str(launcher)]
    # A launcher does not change the binary: it leaves the key.
    assert compiler.key_material() == _core.SystemCompiler().key_material()
    job = make_job(tmp_path)
    compile_step, link_step = compiler.command_lines(job)
    assert compile_step[0] == str(launcher) and "-c" in compile_step
    assert link_step[0] == compiler.identity["path"] and "-shared" in link_step
    compiler.compile(job)
    [logged] = log.read_text().splitlines()  # only the compile step went through it
    assert " -c " in f" {logged} "
    assert ctypes.CDLL(str(job.output)).answer() == 42

"""Sanitizer builds (``cmodule__sanitize``): the flags, the key, and real
reports from AddressSanitizer and UBSan in child processes started with the
environment ``python -m opweave sanitize-env`` prints, with g++ and clang++.
Each report must cite a file that exists after the build, at the op's line."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from support.helpers import run_command, sanitize_env

import opweave
import opweave.tensor as pt
from opweave.link.c.sanitize import sanitizer_environment, sanitizer_flags

WORKER = Path(__file__).parents[2] / "support" / "sanitize_worker.py"
COMPILERS = [c for c in ("g++", "clang++") if shutil.which(c)]

pytestmark = pytest.mark.slow


def cited_line(report: str, kind: str) -> tuple[Path, str]:
    """The file and the text of the line the first ``path:line`` of the
    report cites; the file must exist."""
    start = report.rfind("\n", 0, report.index(kind)) + 1  # the line that names the kind
    match = re.search(r"(/\S+?):(\d+)(?::\d+)?[: \n]", report[start:])
    assert match, report
    path, line = Path(match[1]), int(match[2])
    assert path.is_file(), f"the report cites {path}, which does not exist:\n{report}"
    return path, path.read_text().splitlines()[line - 1]


def run_case(tmp_path: Path, compiler: str, sanitize: str, case: str) -> str:
    env = sanitize_env(compiler, sanitize)
    result = run_command(
        [sys.executable, str(WORKER), str(tmp_path / "cache"), case], timeout=600, env=env
    )
    return result.stdout + result.stderr


@pytest.mark.parametrize("compiler", COMPILERS)
def test_asan_reports_a_write_one_past_the_end_at_the_ops_line(tmp_path, compiler):
    output = run_case(tmp_path, compiler, "address", "one_past_the_end")
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in output, output
    assert "WRITE of size 8" in output
    path, text = cited_line(output, "WRITE of size 8")
    assert path.name == "module.cpp" and "one past the end" in text
    source = re.search(r"source (\S+)", output)
    assert source and Path(source[1]) == path  # the cache entry's own copy


@pytest.mark.parametrize("compiler", COMPILERS)
def test_ubsan_reports_a_signed_overflow_at_the_ops_line(tmp_path, compiler):
    output = run_case(tmp_path, compiler, "undefined", "overflow")
    assert "runtime error: signed integer overflow" in output, output
    path, text = cited_line(output, "runtime error")
    assert path.name == "module.cpp" and "signed overflow" in text
    assert "result [" in output  # UBSan reports and the call goes on


@pytest.mark.parametrize("compiler", COMPILERS)
def test_ubsan_in_an_external_op_points_at_the_users_file(tmp_path, compiler):
    output = run_case(tmp_path, compiler, "address,undefined", "external_overflow")
    assert "runtime error: signed integer overflow" in output, output
    path, text = cited_line(output, "runtime error")
    assert path.name == "overflow_op.c" and "total += 1" in text


def test_sanitized_modules_have_their_own_key_and_flags(tmp_path):
    from support.debug_ops import DOUBLE_REUSING, COnlyOp

    x = pt.dvector("x")
    op = COnlyOp("SanitizeKeyed", DOUBLE_REUSING)
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        plain = opweave.function([x], op(x))
        with opweave.config.change_flags(cmodule__sanitize="undefined"):
            sanitized = opweave.function([x], op(x))
    assert sanitized.library != plain.library
    assert sanitized.cache_outcome == "built"
    np.testing.assert_array_equal(sanitized(np.arange(3.0)), [0, 2, 4])
    command = (Path(sanitized.library).parent / "meta.json").read_text()
    assert "-fsanitize=undefined" in command and "-fno-omit-frame-pointer" in command
    assert "-fsanitize" not in (Path(plain.library).parent / "meta.json").read_text()


def test_flags_and_environment_per_compiler():
    from opweave import _core

    gxx = _core.SystemCompiler("g++")
    assert sanitizer_flags(gxx, "") == []
    assert sanitizer_flags(gxx, "address+undefined")[:2] == [
        "-fsanitize=address,undefined",
        "-fno-omit-frame-pointer",
    ]
    env = sanitizer_environment("address", gxx)
    preload = env["LD_PRELOAD"].split()
    assert [Path(p).name for p in preload] == ["libasan.so", "libstdc++.so"]
    assert all(Path(p).exists() for p in preload)
    assert env["ASAN_OPTIONS"] == "detect_leaks=0"
    assert "LD_PRELOAD" not in sanitizer_environment("undefined", gxx)
    with pytest.raises(ValueError, match="unknown sanitizer"):
        sanitizer_flags(gxx, "thread")

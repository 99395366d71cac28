"""The C++ unit tests (tests/cpp) build warning-free and pass under ctest.

Builds the source tree with OPWEAVE_BUILD_TESTS=ON and OPWEAVE_WERROR=ON (no
Python bindings) into the persistent, git-ignored directory build/cpp-tests,
so re-runs are incremental, then runs every test with ctest.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from support.helpers import describe, run_command

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = REPO_ROOT / "build" / "cpp-tests"
MIN_TESTS = 6


@pytest.mark.slow
def test_cpp_unit_tests_pass() -> None:
    cmake = shutil.which("cmake")
    ctest = shutil.which("ctest")
    ninja = shutil.which("ninja")
    if cmake is None or ctest is None or ninja is None:
        pytest.fail("cmake, ctest and ninja are needed (pip install 'opweave[test]')")

    configure = run_command(
        [
            cmake,
            "-S",
            str(REPO_ROOT),
            "-B",
            str(BUILD_DIR),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja}",
            "-DOPWEAVE_BUILD_TESTS=ON",
            "-DOPWEAVE_WERROR=ON",
            "-DOPWEAVE_BUILD_PYTHON=OFF",
            "-DCMAKE_BUILD_TYPE=Debug",
        ],
        timeout=300,
    )
    assert configure.returncode == 0, describe(configure)

    build = run_command([cmake, "--build", str(BUILD_DIR), "-j2"], timeout=1200)
    assert build.returncode == 0, describe(build)

    tests = run_command([ctest, "--test-dir", str(BUILD_DIR), "--output-on-failure"], timeout=900)
    assert tests.returncode == 0, describe(tests)
    # "100% tests passed out of 6" (CMake >= 4) or "..., 0 tests failed out of 6".
    summary = re.search(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)", tests.stdout)
    assert summary is not None, describe(tests)
    percent, failed, total = (int(group or 0) for group in summary.groups())
    assert (percent, failed) == (100, 0), describe(tests)
    assert total >= MIN_TESTS, f"only {total} tests ran\n{describe(tests)}"

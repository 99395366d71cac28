"""The C++ unit tests (tests/cpp) build warning-free and pass under ctest,
with g++, with clang++, and with clang++ under AddressSanitizer and UBSan.

Builds the source tree with OPWEAVE_BUILD_TESTS=ON and OPWEAVE_WERROR=ON (no
Python bindings) into the persistent, git-ignored directory
build/cpp-tests-<compiler>[-<sanitizers>], so re-runs are incremental, then
runs every test with ctest. The sanitized build makes any report fatal
(-fno-sanitize-recover), so a use after free, a dangling reference, a leak or
undefined behaviour in the core or in the tests fails the run. (.ci/run
installs clang; where it is missing, the clang++ builds are skipped.)
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from support.helpers import describe, run_command

REPO_ROOT = Path(__file__).resolve().parents[2]
CPP_TESTS = REPO_ROOT / "tests" / "cpp"
SANITIZERS = "address,undefined"


def listed_programs() -> list[str]:
    """The test programs tests/cpp/CMakeLists.txt builds, one ctest test each."""
    text = (CPP_TESTS / "CMakeLists.txt").read_text()
    return re.findall(r"^opweave_add_cpp_test\((\w+)\)", text, re.MULTILINE)


def test_every_cpp_test_file_is_built_and_run() -> None:
    files = sorted(path.stem for path in CPP_TESTS.glob("test_*.cpp"))
    assert len(files) > 10
    assert sorted(listed_programs()) == files


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cxx", "sanitize"),
    [("g++", ""), ("clang++", ""), ("clang++", SANITIZERS)],
    ids=["g++", "clang++", "clang++-asan-ubsan"],
)
def test_cpp_unit_tests_pass(cxx: str, sanitize: str) -> None:
    compiler = shutil.which(cxx)
    if compiler is None:
        pytest.skip(f"{cxx} is not installed (.ci/run installs it)")
    suffix = f"-{sanitize.replace(',', '-')}" if sanitize else ""
    build_dir = REPO_ROOT / "build" / f"cpp-tests-{cxx}{suffix}"
    sanitizer_flags = []
    env = None
    if sanitize:
        # Flags of every target (core and tests); the link needs the runtimes.
        sanitizer_flags = [
            f"-DCMAKE_CXX_FLAGS=-fsanitize={sanitize} -fno-sanitize-recover=all "
            "-fno-omit-frame-pointer",
            f"-DCMAKE_EXE_LINKER_FLAGS=-fsanitize={sanitize}",
        ]
        # Leaks count; a preload meant for Python (sanitize-env) must not
        # reach the test programs, which link their own runtime.
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
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
            str(build_dir),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja}",
            f"-DCMAKE_CXX_COMPILER={compiler}",
            "-DOPWEAVE_BUILD_TESTS=ON",
            "-DOPWEAVE_WERROR=ON",
            "-DOPWEAVE_BUILD_PYTHON=OFF",
            "-DCMAKE_BUILD_TYPE=Debug",
            *sanitizer_flags,
        ],
        timeout=300,
    )
    assert configure.returncode == 0, describe(configure)

    build = run_command([cmake, "--build", str(build_dir), "-j2"], timeout=1200)
    assert build.returncode == 0, describe(build)

    tests = run_command(
        [ctest, "--test-dir", str(build_dir), "--output-on-failure"], timeout=900, env=env
    )
    assert tests.returncode == 0, describe(tests)
    # "100% tests passed out of 6" (CMake >= 4) or "..., 0 tests failed out of 6".
    summary = re.search(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)", tests.stdout)
    assert summary is not None, describe(tests)
    percent, failed, total = (int(group or 0) for group in summary.groups())
    assert (percent, failed) == (100, 0), describe(tests)
    assert total == len(listed_programs()), f"{total} tests ran\n{describe(tests)}"

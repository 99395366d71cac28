"""The installed CMake package works for a pure C++ consumer.

Configures and builds tests/consumer against the package that the Python
install ships (``opweave.get_cmake_dir()``), with no source tree and no Python
in the program, then runs it twice on a fresh cache: the first run compiles a
module through ``opweave::build_module``, the second finds it in the cache.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support.helpers import describe, run_command

import opweave

CONSUMER_SOURCE = Path(__file__).resolve().parents[1] / "consumer"


def _run(command: list[str], *, timeout: float, env: dict[str, str] | None = None) -> str:
    """Runs `command`, fails the test with its output unless it exits 0, and
    returns its stdout."""
    result = run_command(command, timeout=timeout, env=env)
    assert result.returncode == 0, describe(result)
    return result.stdout


def _cache_value(cache_file: Path, name: str) -> str:
    """The value of `name` in a CMakeCache.txt."""
    for line in cache_file.read_text().splitlines():
        variable, sep, value = line.partition("=")
        if sep and variable.split(":", 1)[0] == name:
            return value
    pytest.fail(f"{name} is not set in {cache_file}")


@pytest.mark.slow
def test_cmake_consumer_builds_and_caches_a_module(tmp_path: Path) -> None:
    cmake = shutil.which("cmake")
    ninja = shutil.which("ninja")
    if cmake is None or ninja is None:
        pytest.fail("cmake and ninja are needed (pip install 'opweave[test]')")

    cmake_dir = Path(opweave.get_cmake_dir())
    assert (cmake_dir / "opweaveConfig.cmake").is_file(), cmake_dir
    build_dir = tmp_path / "build"
    cache_root = tmp_path / "module-cache"

    _run(
        [
            cmake,
            "-S",
            str(CONSUMER_SOURCE),
            "-B",
            str(build_dir),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja}",
            f"-Dopweave_DIR={cmake_dir}",
        ],
        timeout=300,
    )
    # find_package resolved to the installed package, not to anything else.
    configured_dir = Path(_cache_value(build_dir / "CMakeCache.txt", "opweave_DIR"))
    assert configured_dir.resolve() == cmake_dir.resolve()

    _run([cmake, "--build", str(build_dir)], timeout=600)
    # The program links the installed static library.
    installed_lib = (cmake_dir.parents[1] / "libopweave_core.a").resolve()
    assert installed_lib.is_file(), installed_lib
    assert str(installed_lib) in (build_dir / "build.ninja").read_text()

    consumer = build_dir / "consumer"
    assert consumer.is_file()
    env = dict(os.environ)
    first = _run([str(consumer), str(cache_root)], timeout=300, env=env)
    assert first.strip() == "answer=42 outcome=built"
    second = _run([str(consumer), str(cache_root)], timeout=300, env=env)
    assert second.strip() == "answer=42 outcome=hit"

    entries = [path for path in cache_root.glob("v2/entries/*/*") if path.is_dir()]
    assert len(entries) == 1, entries
    entry = entries[0]
    assert entry.parent.name == entry.name[:2]
    for name in ("module.cpp", "meta.json"):
        assert (entry / name).is_file(), f"{name} missing from {entry}"
    assert len(list(entry.glob("module-*.so"))) == 1
    assert "opweave_consumer_answer" in (entry / "module.cpp").read_text()


PUBLIC_HEADERS = {
    "build_monitor.hpp",
    "compiler.hpp",
    "errors.hpp",
    "graph_abi.h",
    "hash.hpp",
    "module_builder.hpp",
    "module_cache.hpp",
    "module_source.hpp",
    "precompiled_header.hpp",
    "remote_storage.hpp",
    "version.hpp",
}


def test_the_installed_headers_are_the_public_api_and_each_compiles_alone(tmp_path: Path) -> None:
    """The package installs the public headers only (the raw-descriptor
    ones, file_lock and staging_dir, are the core's own), and each
    compiles on its own."""
    include = Path(opweave.get_include()) / "opweave"
    assert {path.name for path in include.iterdir()} == PUBLIC_HEADERS
    cxx = shutil.which("g++") or shutil.which("c++")
    assert cxx is not None
    for name in sorted(PUBLIC_HEADERS - {"graph_abi.h"}):  # a C header for modules
        source = tmp_path / f"{name}.cpp"
        source.write_text(f'#include "opweave/{name}"\nint main() {{ return 0; }}\n')
        command = [cxx, "-std=c++17", "-fsyntax-only", "-I", str(include.parent), str(source)]
        _run(command, timeout=120)

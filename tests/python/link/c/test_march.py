"""cmodule__march (link/c/_march.py): 'native' becomes explicit machine flags,
found once per compiler and CPU and kept as a record of the module cache
(never read from a path by Python, never from a root the core refuses, and
never anything but -m flags); the flags are part of every module's compile
job and so of its cache key."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from opweave.examples.vector_times_scalar import VectorTimesScalar

import opweave
from opweave.configparser import config
from opweave.link.c import _march, cmodule
from opweave.tensor import dscalar, dvector


def test_unset_gives_no_flags_and_a_name_gives_march() -> None:
    compiler = cmodule.get_compiler()
    assert not config.is_set("cmodule__march")
    assert _march.march_flags(compiler) == []
    with config.change_flags(cmodule__march="x86-64-v2"):
        assert _march.march_flags(compiler) == ["-march=x86-64-v2"]


def test_native_is_expanded_once_and_kept_as_a_record() -> None:
    compiler = cmodule.get_compiler()
    cache = cmodule.get_module_cache()
    _march.expand_native.cache_clear()
    with config.change_flags(cmodule__march="native"):
        flags = _march.march_flags(compiler)
        assert flags[0].startswith("-march=") and flags[0] != "-march=native"
        assert len(flags) > 1  # the feature flags that go with the CPU
        [name] = cache.record_names("march")
        assert cache.read_record("march", name).decode().splitlines() == flags
        cache.write_record("march", name, b"-march=from-the-record\n-mavx2\n")
        _march.expand_native.cache_clear()
        try:
            assert _march.march_flags(compiler) == ["-march=from-the-record", "-mavx2"]
        finally:
            _march.expand_native.cache_clear()
            cache.remove_record("march", name)


@pytest.mark.parametrize(
    "planted",
    [
        "-include/tmp/their.h",
        "-march=x86-64\n-include/tmp/their.h",
        "-B/tmp/their/bin",
        "-fplugin=/tmp/their.so",
        "-wrapper /tmp/their,sh",
        "-march=x86-64 -include/tmp/their.h",
        "",
    ],
)
def test_a_record_with_anything_but_machine_flags_is_ignored(planted: str) -> None:
    compiler = cmodule.get_compiler()
    cache = cmodule.get_module_cache()
    _march.expand_native.cache_clear()
    with config.change_flags(cmodule__march="native"):
        real = _march.march_flags(compiler)
        [name] = cache.record_names("march")
        cache.write_record("march", name, planted.encode())
        _march.expand_native.cache_clear()
        try:
            assert _march.march_flags(compiler) == real
            assert cache.read_record("march", name).decode().splitlines() == real  # replaced
        finally:
            _march.expand_native.cache_clear()


def test_every_flag_from_the_compiler_is_a_machine_flag() -> None:
    flags = _march._ask_compiler(cmodule.get_compiler().identity["path"])
    assert flags and all(_march._MACHINE_FLAG.fullmatch(flag) for flag in flags)


@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed")
def test_clang_target_features_become_flags() -> None:
    flags = _march._ask_compiler(shutil.which("clang++") or "")
    assert flags[0].startswith("-march=") and flags[0] != "-march=native"
    assert all(flag.startswith("-m") for flag in flags)


@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed")
def test_clang_accepts_every_flag_and_builds_with_them() -> None:
    """clang's target features include some with no -m option (+64bit,
    +cx8, +cmov on x86-64): they are left out, or every build would fail."""
    clang = shutil.which("clang++") or ""
    flags = _march._ask_compiler(clang)
    checked = subprocess.run(
        [clang, *flags, "-E", "-x", "c++", "/dev/null", "-o", "/dev/null"],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0 and "unknown argument" not in checked.stderr, checked.stderr
    _march.expand_native.cache_clear()
    x, a = dvector("x"), dscalar("a")
    try:
        with config.change_flags(cmodule__march="native", cxx=clang):
            f = opweave.function([x, a], VectorTimesScalar()(x, a))
            np.testing.assert_array_equal(f(np.array([1.0, 2.0]), 3.0), [3.0, 6.0])
    finally:
        _march.expand_native.cache_clear()


def test_machine_flags_are_part_of_the_module_key() -> None:
    x, a = dvector("x"), dscalar("a")
    plain = opweave.function([x, a], VectorTimesScalar()(x, a))
    with config.change_flags(cmodule__march="native"):
        native = opweave.function([x, a], VectorTimesScalar()(x, a))
    assert native.library != plain.library
    np.testing.assert_array_equal(native(np.array([1.0, 2.0]), 3.0), [3.0, 6.0])
    entry_dir = Path(native.library).parent
    assert "-march=" in (entry_dir / "meta.json").read_text()


def fingerprint(root: Path, march: str) -> subprocess.CompletedProcess[str]:
    """``opweave cache fingerprint`` in a fresh process with ``march``."""
    env = {"OPWEAVE_FLAGS": f"compiledir={root},cmodule__march={march}", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "opweave", "cache", "fingerprint"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )


def test_the_fingerprint_command_shows_the_flags(tmp_path: Path) -> None:
    done = fingerprint(tmp_path, "native")
    assert done.stdout.startswith("ow1-") and len(done.stdout.split()) == 1
    assert "cmodule__march=native: -march=" in done.stderr


def test_an_explicit_level_is_the_same_flags_on_every_machine(tmp_path: Path) -> None:
    # docs/scale-out.md: a level (not native) gives one flag and no CPU record.
    done = fingerprint(tmp_path, "x86-64-v3")
    assert "-march=x86-64-v3" in done.stderr and "-mavx512" not in done.stderr
    with config.change_flags(compiledir=str(tmp_path), cmodule__march="x86-64-v3"):
        x, a = dvector("x"), dscalar("a")
        f = opweave.function([x, a], VectorTimesScalar()(x, a))
        np.testing.assert_array_equal(f(np.array([1.0, 2.0]), 3.0), [3.0, 6.0])
        assert cmodule.get_module_cache().record_names("march") == []
    assert "-march=x86-64-v3" in (Path(f.library).parent / "meta.json").read_text()

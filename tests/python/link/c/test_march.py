"""cmodule__march (link/c/_march.py): 'native' becomes explicit machine flags,
found once per compiler and CPU and kept on disk; the flags are part of every
module's compile job and so of its cache key."""

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


def test_native_is_expanded_once_and_kept_on_disk() -> None:
    compiler = cmodule.get_compiler()
    _march.expand_native.cache_clear()
    with config.change_flags(cmodule__march="native"):
        flags = _march.march_flags(compiler)
        assert flags[0].startswith("-march=") and flags[0] != "-march=native"
        assert len(flags) > 1  # the feature flags that go with the CPU
        [memo] = (Path(config.compiledir) / "march").iterdir()
        assert memo.read_text().splitlines() == flags
        memo.write_text("-march=from-the-disk-memo")
        _march.expand_native.cache_clear()
        try:
            assert _march.march_flags(compiler) == ["-march=from-the-disk-memo"]
        finally:
            _march.expand_native.cache_clear()
            memo.unlink()


@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed")
def test_clang_target_features_become_flags() -> None:
    flags = _march._ask_compiler(shutil.which("clang++") or "")
    assert flags[0].startswith("-march=") and flags[0] != "-march=native"
    assert all(flag.startswith("-m") for flag in flags)


def test_machine_flags_are_part_of_the_module_key() -> None:
    x, a = dvector("x"), dscalar("a")
    plain = opweave.function([x, a], VectorTimesScalar()(x, a))
    with config.change_flags(cmodule__march="native"):
        native = opweave.function([x, a], VectorTimesScalar()(x, a))
    assert native.library != plain.library
    np.testing.assert_array_equal(native(np.array([1.0, 2.0]), 3.0), [3.0, 6.0])
    entry_dir = Path(native.library).parent
    assert "-march=" in (entry_dir / "meta.json").read_text()


def test_the_fingerprint_command_shows_the_flags(tmp_path: Path) -> None:
    env = {"OPWEAVE_FLAGS": f"compiledir={tmp_path},cmodule__march=native", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "opweave", "cache", "fingerprint"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert done.stdout.startswith("ow1-") and len(done.stdout.split()) == 1
    assert "cmodule__march=native: -march=" in done.stderr

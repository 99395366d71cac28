"""C++ errors reach Python as opweave's own exceptions, with their data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.helpers import module_request

import opweave
from opweave import _core


def test_compile_error_carries_command_diagnostics_and_kept_source(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    compiler = _core.SystemCompiler()
    source = "int ok() { return 1; }\nint broken( {\n"
    with pytest.raises(opweave.CompileError) as caught:
        _core.build_module(cache, compiler, module_request(source))
    error = caught.value
    assert error.exit_status != 0
    assert error.command[0] == compiler.identity["path"]
    assert "-shared" in error.command
    assert Path(error.source).read_text() == source  # kept after the build dir died
    assert Path(error.source).parent == tmp_path.resolve() / "cache" / "v2" / "failed"
    # The diagnostics point at the kept file, with the right line.
    assert f"{error.source}:2:" in error.first_error
    assert "error" in error.first_error
    text = str(error)
    assert text.splitlines()[0].startswith(f"{Path(compiler.identity['path']).name} failed")
    assert error.first_error in text and error.source in text
    assert len(text.splitlines()) < 40
    assert cache.list() == []


def test_lock_timeout_maps_with_attributes(tmp_path: Path) -> None:
    path = str(tmp_path / "x.lock")
    holder = _core.FileLock(path)
    holder.acquire()
    with pytest.raises(opweave.LockTimeout) as caught:
        _core.FileLock(path).acquire(timeout=0.05)
    assert caught.value.lock_path == path
    assert caught.value.holder_pid == os.getpid()


def test_cache_error_for_unusable_root(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(opweave.CacheError) as caught:
        _core.ModuleCache(str(tmp_path / "a-file"))
    assert caught.value.path == str(tmp_path / "a-file")


def test_missing_compiler_is_an_opweave_error() -> None:
    with pytest.raises(opweave.OpweaveError, match="no-such-compiler-xyz"):
        _core.SystemCompiler("no-such-compiler-xyz")


def test_bad_key_is_a_value_error(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="invalid cache key"):
        cache.lookup("../escape")


def test_python_exception_in_build_function_propagates_unchanged(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))

    def build(staging: str) -> None:
        (Path(staging) / "half").write_text("x")
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        cache.get_or_build("k" * 16, build)
    assert cache.lookup("k" * 16) is None
    assert cache.stats().builds_in_flight == 0


def test_build_function_with_wrong_return_type(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    with pytest.raises(TypeError, match="must return None or a dict"):
        cache.get_or_build("k" * 16, lambda staging: 42)
    assert cache.lookup("k" * 16) is None


def test_compile_error_with_non_utf8_output_is_still_a_compile_error(tmp_path: Path) -> None:
    # A header with bytes that are not UTF-8, echoed back in the diagnostics.
    (tmp_path / "bad.h").write_bytes(b'#error "caf\xe9 \xff\xfe"\n')
    job = _core.CompileJob()
    job.include_dirs = [str(tmp_path)]
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    with pytest.raises(opweave.CompileError) as caught:
        _core.build_module(cache, _core.SystemCompiler(), module_request('#include "bad.h"\n', job))
    assert "\ufffd" in caught.value.diagnostics
    assert "bad.h:1" in caught.value.first_error

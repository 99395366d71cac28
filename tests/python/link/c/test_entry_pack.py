"""Entries as bytes (ModuleCache.export_entry) and their adoption by another
cache (ModuleCache.adopt): what verifies and what is refused; and the
signatures of opweave/link/c/_entry_pack.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from support.graph_worker import HeaderValue, Scaled
from support.remote_entries import pack_of

import opweave
from opweave import _core
from opweave.errors import CacheError
from opweave.link.c import _entry_pack, cmodule
from opweave.tensor import dvector


def built_entry(op: object) -> _core.Entry:
    x = dvector("x")
    f = opweave.function([x], op(x))  # type: ignore[operator]
    assert f(np.ones(2)).shape == (2,)
    [module] = [e for e in cmodule.get_module_cache().list() if e.kind == "module"]
    entry = cmodule.get_module_cache().lookup(module.key)
    assert entry is not None
    return entry


def test_a_packed_entry_is_adopted_by_another_cache_and_loads(
    isolated_cache: Path, tmp_path: Path
) -> None:
    entry = built_entry(Scaled(3))
    other = _core.ModuleCache(tmp_path / "other")
    result = other.adopt(entry.key, pack_of(entry))
    assert result.outcome == "built"
    adopted = other.lookup(entry.key)
    assert adopted is not None and adopted.environment == entry.environment
    assert [(f.name, f.sha256) for f in adopted.files] == [(f.name, f.sha256) for f in entry.files]
    assert entry.environment == cmodule.environment_fingerprint()
    again = other.adopt(entry.key, pack_of(entry))
    assert again.outcome == "hit"  # kept as it is


def test_altered_bytes_are_refused(isolated_cache: Path, tmp_path: Path) -> None:
    entry = built_entry(Scaled(4))
    data = bytearray(pack_of(entry))
    data[-50] ^= 0xFF  # inside the last file
    other = _core.ModuleCache(tmp_path / "other")
    with pytest.raises(CacheError, match="does not have its recorded size and SHA-256"):
        other.adopt(entry.key, bytes(data))
    with pytest.raises(CacheError, match="is the entry of"):
        other.adopt("0" * 64, pack_of(entry))
    with pytest.raises(CacheError, match="not an opweave cache entry"):
        other.adopt(entry.key, b"hello")
    assert other.lookup(entry.key) is None


def test_an_entry_built_with_another_version_of_a_header_is_refused(
    isolated_cache: Path, tmp_path: Path
) -> None:
    headers = tmp_path / "include"
    headers.mkdir()
    (headers / "opw_value.h").write_text("#define OPW_VALUE 2\n")
    time.sleep(0.05)  # older than the compile's clock tick: recorded with its hash
    entry = built_entry(HeaderValue(str(headers)))
    pack = pack_of(entry)  # as another machine, with the old header, exports it
    (headers / "opw_value.h").write_text("#define OPW_VALUE 5\n")
    other = _core.ModuleCache(tmp_path / "other")
    with pytest.raises(CacheError, match=r"another version of .*opw_value\.h"):
        other.adopt(entry.key, pack)
    assert cmodule.get_module_cache().export_entry(entry.key) is None  # stale here too


def test_signatures_bind_the_bytes_the_purpose_and_the_name() -> None:
    signed = _entry_pack.sign(b"payload", b"k", "remote entry", "abc")
    assert _entry_pack.unsign(signed, b"k", "remote entry", "abc") == b"payload"
    assert _entry_pack.unsign(signed, None, "remote entry", "abc") == b"payload"
    for secret, purpose, name in [
        (b"x", "remote entry", "abc"),
        (b"k", "export file", "abc"),
        (b"k", "remote entry", "abd"),
    ]:
        with pytest.raises(_entry_pack.SignatureError, match="does not hold"):
            _entry_pack.unsign(signed, secret, purpose, name)
    with pytest.raises(_entry_pack.SignatureError, match="not signed"):
        _entry_pack.unsign(b"payload", b"k", "remote entry", "abc")
    assert _entry_pack.sign(b"payload", None, "remote entry", "abc") == b"payload"


def test_the_secret_can_come_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("  from-file \n")
    secret.chmod(0o600)
    with opweave.config.change_flags(cache__remote_secret=f"file:{secret}"):
        assert _entry_pack.configured_secret() == b"from-file"
    with opweave.config.change_flags(cache__remote_secret=f"file:{tmp_path / 'none'}"):
        with pytest.raises(CacheError, match="cannot read the cache secret"):
            _entry_pack.configured_secret()
    with opweave.config.change_flags(cache__remote_secret="plain"):
        assert _entry_pack.configured_secret() == b"plain"


def test_a_secret_file_others_can_read_or_write_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    for mode in (0o644, 0o640, 0o620, 0o602, 0o666):
        secret.chmod(mode)
        with pytest.raises(CacheError, match=f"mode {mode:04o}.*chmod 600"):
            _entry_pack.read_secret_file(str(secret))
    secret.chmod(0o400)
    assert _entry_pack.read_secret_file(str(secret)) == b"s3cret"
    link = tmp_path / "link"  # a link to a private file (as secret mounts are) is followed
    link.symlink_to(secret)
    assert _entry_pack.read_secret_file(str(link)) == b"s3cret"


def test_a_fifo_or_a_directory_in_place_of_the_secret_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)  # nobody writes to it: a blocking open would hang
    start = time.monotonic()
    with pytest.raises(CacheError, match="not a regular file"):
        _entry_pack.read_secret_file(str(fifo))
    assert time.monotonic() - start < 5
    with pytest.raises(CacheError, match=r"not a regular file|cannot read"):
        _entry_pack.read_secret_file(str(tmp_path))


def test_a_secret_file_of_another_user_is_refused(
    tmp_path: Path, as_root: None, other_user: tuple[int, int]
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("theirs\n")
    secret.chmod(0o600)
    os.chown(secret, *other_user)
    with pytest.raises(CacheError, match=f"belongs to uid {other_user[0]}"):
        _entry_pack.read_secret_file(str(secret))


def test_keys_do_not_depend_on_the_launcher_or_the_python_include_path(tmp_path: Path) -> None:
    request = cmodule.module_request("int x;", label="k")
    compiler = cmodule.get_compiler()
    key = _core.request_key(compiler, request)
    launcher = tmp_path / "launcher"
    launcher.write_text('#!/bin/sh\nexec "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    launched = _core.SystemCompiler(compiler.identity["path"], launcher=str(launcher))
    assert _core.request_key(launched, request) == key
    # The same Python headers at another path (another venv) give the same key.
    moved = tmp_path / "include"
    moved.symlink_to(request.job.include_dirs[-1])
    request.job.include_dirs = [*request.job.include_dirs[:-1], str(moved)]
    request.covered_header_dirs = [*request.covered_header_dirs, str(moved)]
    assert _core.request_key(compiler, request) == key
    # A directory of the user's own is keyed by its path.
    request.job.include_dirs = [*request.job.include_dirs, str(tmp_path)]
    assert _core.request_key(compiler, request) != key


def test_a_launcher_installed_beside_python_is_found_off_path(tmp_path: Path) -> None:
    scripts = Path(sys.executable).parent
    code = (
        "from opweave.link.c import cmodule; import json; "
        "print(json.dumps(cmodule.get_compiler().identity['launcher']))"
    )
    name = "opweave-test-launcher"
    fake = scripts / name
    fake.write_text('#!/bin/sh\nexec "$@"\n')
    fake.chmod(0o755)
    try:
        env = {**os.environ, "PATH": "/usr/bin:/bin", "OPWEAVE_FLAGS": f"cxx_launcher={name}"}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
    finally:
        fake.unlink()
    assert json.loads(out) == [str(fake)]

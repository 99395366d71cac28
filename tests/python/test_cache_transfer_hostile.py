"""``opweave cache import`` against crafted archives, and ``export``'s file.

Each archive is built member by member (support/transfer_archives.py: tar
headers written by hand where ``tarfile`` would not write them), from the
members of a real export.
Every refusal must be one line on stderr, never a traceback, with a non-zero
exit status; the destination cache is checked for what was (not) imported.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest
from support.helpers import describe
from support.transfer_archives import (
    SECRET,
    Export,
    cached_keys,
    cli,
    flags,
    good,
    import_,
    manifest_members,
    member,
    refused,
    write,
)

pytestmark = pytest.mark.slow

# --- the whole file is refused, nothing imported ---------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "fields", "words"),
    [
        ("../escaped", tarfile.REGTYPE, {}, ("member ../escaped ", "climbs out")),
        ("entries/../../escaped", tarfile.REGTYPE, {}, ("climbs out",)),
        ("/tmp/opweave-absolute", tarfile.REGTYPE, {}, ("absolute path",)),
        ("entries/" + "a" * 64, tarfile.SYMTYPE, {"linkname": "/etc/passwd"}, ("symbolic link",)),
        ("entries/" + "b" * 64, tarfile.LNKTYPE, {"linkname": "manifest.json"}, ("hard link",)),
        ("entries/" + "c" * 64, tarfile.CHRTYPE, {"devmajor": 1, "devminor": 3}, ("device",)),
        ("entries/" + "d" * 64, tarfile.FIFOTYPE, {}, ("FIFO",)),
        ("entries/" + "e" * 64, tarfile.DIRTYPE, {}, ("directory",)),
        ("entries/" + "f" * 64, tarfile.XHDTYPE, {}, ("pax header",)),
        ("entries/not-a-key", tarfile.REGTYPE, {}, ("not part of an opweave cache export",)),
        ("notes.txt", tarfile.REGTYPE, {}, ("not part of an opweave cache export",)),
    ],
)
def test_a_member_that_export_does_not_write_refuses_the_file(
    tmp_path: Path,
    exported: Export,
    name: str,
    kind: bytes,
    fields: dict,
    words: tuple[str, ...],
) -> None:
    root = tmp_path / "b"
    crafted = member(name, b"planted\n", kind, **fields)
    path = write(tmp_path / "crafted.tgz", *good(exported), crafted)
    refused(import_(path, root), "refusing the export file", *words)
    assert cached_keys(root) == set()  # not even the good entries before it
    assert not (tmp_path / "escaped").exists() and not Path("/tmp/opweave-absolute").exists()


def test_a_huge_member_is_refused_from_its_header_unread(tmp_path: Path, exported: Export) -> None:
    root = tmp_path / "b"
    key = exported.keys[0]
    huge = member(f"entries/{key}", b"", size=300 << 30)[:512]  # a header; no data follows
    path = write(tmp_path / "huge.tgz", manifest_members(exported.manifest), huge, end=False)
    line = refused(import_(path, root), "declares 300.0 GiB", "over the limit")
    assert "truncated" not in line  # refused from the header, before reading
    assert cached_keys(root) == set()


def test_a_pack_over_the_configured_cap_is_refused(tmp_path: Path, exported: Export) -> None:
    root = tmp_path / "b"
    path = write(tmp_path / "export.tgz", *good(exported))
    refused(import_(path, root, cache__remote_max_entry="8K"), "over the limit", "8.0 KiB")
    assert cached_keys(root) == set()


def test_a_huge_manifest_is_refused(tmp_path: Path) -> None:
    huge = member("manifest.json", b"", size=1 << 40)[:512]
    path = write(tmp_path / "huge.tgz", huge, end=False)
    refused(import_(path, tmp_path / "b"), "manifest.json", "over the limit")


@pytest.mark.parametrize("cut", [10, 1000, 0.5, -40, -4])
def test_a_truncated_file_is_refused_and_imports_nothing(
    tmp_path: Path, exported: Export, cut: float
) -> None:
    whole = write(tmp_path / "whole.tgz", *good(exported)).read_bytes()
    size = int(len(whole) * cut) if isinstance(cut, float) else cut % len(whole)
    path = tmp_path / "cut.tgz"
    path.write_bytes(whole[:size])
    refused(import_(path, tmp_path / "b"), "truncated or damaged")
    assert cached_keys(tmp_path / "b") == set()


def test_a_tar_cut_at_a_member_boundary_is_refused(tmp_path: Path, exported: Export) -> None:
    path = write(tmp_path / "cut.tgz", *good(exported), end=False)  # no end-of-archive
    refused(import_(path, tmp_path / "b"), "truncated or damaged")
    assert cached_keys(tmp_path / "b") == set()


@pytest.mark.parametrize("content", [b"", b"not a gzip file at all\n", gzip.compress(b"x" * 700)])
def test_a_file_that_is_not_an_export_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "junk.tgz"
    path.write_bytes(content)
    refused(import_(path, tmp_path / "b"), "refusing the export file")


def test_a_missing_file_or_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    refused(import_(tmp_path / "absent.tgz", tmp_path / "b"), "cannot read", "absent.tgz")
    fifo = tmp_path / "fifo.tgz"
    os.mkfifo(fifo)
    refused(import_(fifo, tmp_path / "b"), "not a regular file")


def test_members_out_of_order_or_repeated_are_refused(tmp_path: Path, exported: Export) -> None:
    manifest, *packs = good(exported)
    for order in ([*packs, manifest], [manifest, *packs, packs[0]], [manifest, manifest]):
        path = write(tmp_path / "crafted.tgz", *order)
        refused(import_(path, tmp_path / "b"), "refusing the export file")
    assert cached_keys(tmp_path / "b") == set()


def test_a_pack_the_manifest_does_not_name_is_refused(tmp_path: Path, exported: Export) -> None:
    listed = dict(exported.manifest, entries=exported.manifest["entries"][:1])
    path = write(tmp_path / "extra.tgz", *good(exported, listed))
    refused(import_(path, tmp_path / "b"), "not named in its manifest")
    assert cached_keys(tmp_path / "b") == set()


# --- authentication ------------------------------------------------------------------


def test_an_unsigned_file_needs_trust_unsigned_which_costs_one_warning(
    tmp_path: Path, exported: Export
) -> None:
    root = tmp_path / "b"
    path = write(tmp_path / "unsigned.tgz", *good(exported, secret=None))
    for options in ({"cache__remote_secret": ""}, {}):
        line = refused(import_(path, root, **options), "not signed", "--trust-unsigned")
        assert "run their code" in line
    assert cached_keys(root) == set()
    trusted = import_(path, root, "--trust-unsigned", cache__remote_secret="")
    assert trusted.returncode == 0, describe(trusted)
    warnings = trusted.stderr.strip().splitlines()
    assert len(warnings) == 1 and "WARNING" in warnings[0], describe(trusted)
    assert "runs its code" in warnings[0] and "--trust-unsigned" in warnings[0]
    assert cached_keys(root) == set(exported.keys)


def test_a_signed_file_imports_with_the_secret_and_without_a_warning(
    tmp_path: Path, exported: Export
) -> None:
    root = tmp_path / "b"
    path = write(tmp_path / "signed.tgz", *good(exported))
    refused(import_(path, root, cache__remote_secret=""), "no secret is configured")
    result = import_(path, root)
    assert result.returncode == 0 and result.stderr == "", describe(result)
    imported = f"imported {len(exported.keys)} entries"
    assert imported in result.stdout and "refused 0" in result.stdout
    listed = json.loads(cli("list", "--json", env=flags(root)).stdout)
    assert {entry["key"] for entry in listed} == set(exported.keys)


def test_a_previous_secret_verifies_while_rotating(tmp_path: Path, exported: Export) -> None:
    path = write(tmp_path / "signed.tgz", *good(exported))
    options = {"cache__remote_secret": "new-secret", "cache__remote_secret_previous": SECRET}
    result = import_(path, tmp_path / "b", **options)
    assert result.returncode == 0, describe(result)


def test_an_altered_manifest_or_another_secret_is_refused(tmp_path: Path, exported: Export) -> None:
    root = tmp_path / "b"
    signature = manifest_members(exported.manifest)[-1024:]  # the signature member
    altered = json.dumps(dict(exported.manifest, created=0)).encode()
    packs = good(exported)[1:]
    path = write(tmp_path / "altered.tgz", member("manifest.json", altered), signature, *packs)
    refused(import_(path, root), "signature does not hold")
    refused(import_(path, root, "--trust-unsigned"), "signature does not hold")
    other = write(tmp_path / "other.tgz", *good(exported))
    refused(import_(other, root, cache__remote_secret="other"), "signature does not hold")
    assert cached_keys(root) == set()


def test_a_damaged_signature_is_refused(tmp_path: Path, exported: Export) -> None:
    data = json.dumps(exported.manifest).encode()
    path = write(tmp_path / "x.tgz", member("manifest.json", data), member("signature", b"junk"))
    refused(import_(path, tmp_path / "b", "--trust-unsigned"), "signature is damaged")


# --- per entry: the others still import ------------------------------------------------


def test_a_missing_pack_is_refused_and_the_others_imported(
    tmp_path: Path, exported: Export
) -> None:
    root = tmp_path / "b"
    ghost = dict(exported.manifest["entries"][0], key="0" * 64)
    manifest = dict(exported.manifest, entries=[*exported.manifest["entries"], ghost])
    path = write(tmp_path / "missing.tgz", *good(exported, manifest))
    result = import_(path, root)
    assert result.returncode == 1, describe(result)
    imported = f"imported {len(exported.keys)} entries"
    assert imported in result.stdout and "refused 1" in result.stdout
    assert (
        result.stderr.strip() == f"opweave: refused {'0' * 64}: its pack is missing from the file"
    )
    assert cached_keys(root) == set(exported.keys)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "ABC", "0" * 63, 7, "a" * 64 + "\n"])
def test_a_manifest_key_that_is_not_a_key_is_refused_alone(
    tmp_path: Path, exported: Export, bad: object
) -> None:
    root = tmp_path / "b"
    item = dict(exported.manifest["entries"][0], key=bad)
    manifest = dict(exported.manifest, entries=[*exported.manifest["entries"], item])
    path = write(tmp_path / "badkey.tgz", *good(exported, manifest))
    result = import_(path, root)
    assert result.returncode == 1 and "Traceback" not in result.stderr, describe(result)
    imported = f"imported {len(exported.keys)} entries"
    assert imported in result.stdout and "refused 1" in result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a cache key" in lines[0], describe(result)
    assert cached_keys(root) == set(exported.keys)


def test_an_altered_pack_is_refused_and_the_others_imported(
    tmp_path: Path, exported: Export
) -> None:
    root = tmp_path / "b"
    module, record = exported.key_of("module"), exported.key_of("graph")
    data = bytearray(exported.packs[module])
    data[-100] ^= 0xFF
    manifest_part, *_ = good(exported)
    altered = member(f"entries/{module}", bytes(data))
    path = write(
        tmp_path / "altered.tgz",
        manifest_part,
        altered,
        member(f"entries/{record}", exported.packs[record]),
    )
    result = import_(path, root)
    assert result.returncode == 1, describe(result)
    assert f"refused {module}: its pack does not match the manifest" in result.stderr
    assert cached_keys(root) == {record}


def test_a_signed_pack_that_does_not_verify_is_refused_alone(
    tmp_path: Path, exported: Export
) -> None:
    """The signer's manifest names the right hash, but the pack is another
    key's entry: the core's verification refuses it."""
    root = tmp_path / "b"
    module, record = exported.key_of("module"), exported.key_of("graph")
    moved = dict(exported.item("graph"), key="1" * 64)
    moved["sha256"] = exported.item("module")["sha256"]
    manifest = dict(exported.manifest, entries=[exported.item("graph"), moved])
    members = [member(f"entries/{record}", exported.packs[record])]
    members.append(member(f"entries/{'1' * 64}", exported.packs[module]))
    path = write(tmp_path / "moved.tgz", manifest_members(manifest), *members)
    result = import_(path, root)
    assert result.returncode == 1, describe(result)
    assert f"refused {'1' * 64}: the entry stored for" in result.stderr
    assert cached_keys(root) == {record}


def test_entries_of_another_environment_are_skipped(tmp_path: Path, exported: Export) -> None:
    entries = [dict(item, environment="elsewhere") for item in exported.manifest["entries"]]
    path = write(tmp_path / "other.tgz", *good(exported, dict(exported.manifest, entries=entries)))
    result = import_(path, tmp_path / "b")
    assert result.returncode == 0, describe(result)
    skipped = f"skipped {len(exported.keys)} of another"
    assert "imported 0 entries" in result.stdout and skipped in result.stdout
    assert cached_keys(tmp_path / "b") == set()


# --- export's file ---------------------------------------------------------------------


def test_export_writes_mode_0600_and_never_follows_a_link_at_partial(
    tmp_path: Path, exported: Export
) -> None:
    root = tmp_path / "b"
    assert import_(write(tmp_path / "in.tgz", *good(exported)), root).returncode == 0
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    target = tmp_path / "out" / "cache.tgz"
    target.parent.mkdir()
    (target.parent / "cache.tgz.partial").symlink_to(victim)
    old = os.umask(0)
    try:
        result = cli("export", str(target), env=flags(root))
    finally:
        os.umask(old)
    assert result.returncode == 0, describe(result)
    assert victim.read_text() == "untouched\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["cache.tgz"]
    with tarfile.open(target) as tar:
        names = tar.getnames()
    assert names[0] == "manifest.json"
    assert sorted(names[1:]) == sorted(f"entries/{key}" for key in exported.keys)


@pytest.mark.parametrize("kind", ["fifo", "readable by others", "directory"])
def test_export_with_a_secret_file_that_cannot_be_trusted_fails_at_once(
    tmp_path: Path, kind: str
) -> None:
    secret = tmp_path / "secret"
    if kind == "fifo":
        os.mkfifo(secret, 0o600)  # nobody writes to it: a blocking open would hang
    elif kind == "directory":
        secret.mkdir()
    else:
        secret.write_text(SECRET)
        secret.chmod(0o644)
    env = flags(tmp_path / "cache", cache__remote_secret=f"file:{secret}")
    result = cli("export", str(tmp_path / "out.tgz"), env=env)
    words = {"fifo": "not a regular file", "directory": "secret", "readable by others": "0644"}
    refused(result, words[kind])
    assert not (tmp_path / "out.tgz").exists()


def test_export_into_a_missing_directory_fails_in_one_line(tmp_path: Path) -> None:
    result = cli("export", str(tmp_path / "absent" / "x.tgz"), env=flags(tmp_path / "b"))
    refused(result, "cannot write the export file")


def test_export_then_import_round_trip_with_a_secret(tmp_path: Path, exported: Export) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert import_(write(tmp_path / "in.tgz", *good(exported)), a).returncode == 0
    out = tmp_path / "out.tgz"
    assert cli("export", str(out), env=flags(a, cache__remote_secret=SECRET)).returncode == 0
    with tarfile.open(out) as tar:
        assert tar.getnames()[:2] == ["manifest.json", "signature"]
    result = import_(out, b)
    imported = f"imported {len(exported.keys)} entries"
    assert result.returncode == 0 and imported in result.stdout, describe(result)
    assert cached_keys(b) == set(exported.keys)

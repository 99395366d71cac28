"""Export files made by hand, member by member, for the hostile tests of
``opweave cache import`` (tar headers written where ``tarfile`` would not
write them), from the members of a real export (:func:`real_export`)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from opweave._export_archive import PURPOSE
from opweave.link.c._entry_pack import sign
from support.helpers import describe, run_command, run_graph

SECRET = "team-secret"


@dataclass
class Export:
    """A real export file's members: the manifest and each entry's pack."""

    manifest: dict
    packs: dict[str, bytes]

    @property
    def keys(self) -> list[str]:
        return [item["key"] for item in self.manifest["entries"]]

    def item(self, kind: str) -> dict:
        """The manifest's item of the one entry of ``kind``."""
        (found,) = [item for item in self.manifest["entries"] if item["kind"] == kind]
        return found

    def key_of(self, kind: str) -> str:
        return str(self.item(kind)["key"])


def flags(root: Path, **options: object) -> dict[str, str]:
    text = ",".join(f"{name}={value}" for name, value in {"compiledir": root, **options}.items())
    return {"OPWEAVE_FLAGS": text}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    return run_command([sys.executable, "-m", "opweave", "cache", *args], timeout=120, env=full)


def cached_keys(root: Path) -> set[str]:
    """The keys of the entries published under ``root``."""
    return {path.name for path in root.glob("v2/entries/*/*") if len(path.name) == 64}


def member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, **fields: object) -> bytes:
    """One member: its header (written even where tarfile would refuse to),
    then its data padded to 512 bytes."""
    info = tarfile.TarInfo(name)
    info.size, info.type, info.mode = len(data), kind, 0o600
    for attribute, value in fields.items():
        setattr(info, attribute, value)
    header = info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
    return header + data + bytes(-len(data) % 512)


def manifest_members(manifest: dict, secret: str | None = SECRET) -> bytes:
    """The manifest and, with a secret, its signature as export writes them."""
    data = json.dumps(manifest).encode()
    members = member("manifest.json", data)
    if secret:
        signed = sign(data, secret.encode(), PURPOSE, "manifest.json")
        members += member("signature", signed[: len(signed) - len(data)])
    return members


def write(path: Path, *members: bytes, end: bool = True) -> Path:
    """A gzip-compressed tar of ``members`` (with its end-of-archive blocks)."""
    data = b"".join(members) + (bytes(1024) if end else b"")
    path.write_bytes(gzip.compress(data, compresslevel=1))
    return path


def good(export: Export, manifest: dict | None = None, secret: str | None = SECRET) -> list[bytes]:
    manifest = export.manifest if manifest is None else manifest
    packs = [member(f"entries/{key}", data) for key, data in export.packs.items()]
    return [manifest_members(manifest, secret), *packs]


def refused(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """Asserts a refusal: non-zero, one line on stderr naming ``words``."""
    assert result.returncode != 0, describe(result)
    assert "Traceback" not in result.stderr + result.stdout, describe(result)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("opweave: "), describe(result)
    for word in words:
        assert word in lines[0], describe(result)
    return lines[0]


def import_(path: Path, root: Path, *extra: str, **options: object) -> subprocess.CompletedProcess:
    options.setdefault("cache__remote_secret", SECRET)
    return cli("import", str(path), *extra, env=flags(root, **options))


def real_export(root: Path) -> Export:
    """The members of an export, made under ``root``, of a cache that compiled
    one graph (its module and its graph record; a precompiled prelude is
    built from the second module and never exported)."""
    assert run_graph(root / "cache", "scaled:4")["right"]
    archive = root / "export.tgz"
    exported = cli("export", str(archive), env=flags(root / "cache"))
    assert exported.returncode == 0, describe(exported)
    with tarfile.open(archive) as tar:  # our own file: read it with tarfile
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        packs = {
            name[len("entries/") :]: tar.extractfile(name).read()  # type: ignore[union-attr]
            for name in tar.getnames()
            if name.startswith("entries/")
        }
    kinds = sorted(item["kind"] for item in manifest["entries"])
    assert kinds == ["graph", "module"], kinds
    assert set(packs) == {i["key"] for i in manifest["entries"]}
    return Export(manifest, packs)

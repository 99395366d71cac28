"""Moving cache entries between machines: ``opweave cache export FILE`` and
``opweave cache import FILE`` (see docs/scale-out.md).

An export file is a gzip-compressed tar archive holding

- ``manifest.json``: the format, the exporting environment's fingerprint
  (:func:`opweave.link.c.cmodule.environment_fingerprint`), and for each
  entry its key, environment, kind and the SHA-256 of its pack;
- ``entries/<key>``: each entry as :mod:`opweave.link.c._entry_pack` packs it;
- ``signature``, when a secret is configured (``cache__remote_secret``): an
  HMAC-SHA256 of the manifest, which names every pack's hash.

Nothing is extracted to disk: members are read into memory by name, so a
crafted archive cannot write anywhere. Import publishes each entry through
the core's verification (``ModuleCache.adopt``), skips (and counts) entries
of another environment, and, with a secret, refuses a file that is not
signed with it or whose packs do not match its manifest.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opweave.errors import CacheError
from opweave.link.c import _entry_pack

__all__ = ["ImportReport", "export_cache", "import_cache"]

_log = logging.getLogger("opweave")

_FORMAT = "opweave-cache-export 1"
_PURPOSE = "export file"
_MANIFEST_LIMIT = 64 << 20
_ENTRY_LIMIT = 4 << 30


@dataclass
class ImportReport:
    """What ``import_cache`` did with each entry of the file."""

    imported: int = 0  # published here
    present: int = 0  # valid here already
    other_environment: int = 0  # built for another environment: skipped
    refused: list[str] = field(default_factory=list)  # "key: why" of entries that did not verify


def export_cache(cache: Any, path: str | Path, environment: str, since: float | None = None) -> int:
    """Writes every entry of ``cache`` that verifies (and was used at or
    after ``since``, seconds since the epoch, when given) to the export file
    ``path``, signed when a secret is configured. Returns how many."""
    secret = _entry_pack.configured_secret()
    packs = dict(_verified_packs(cache, since))
    manifest = {
        "format": _FORMAT,
        "fingerprint": environment,
        "created": time.time(),
        "entries": [
            {
                "key": key,
                "environment": entry.environment,
                "kind": entry.kind,
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            for key, (entry, data) in packs.items()
        ],
    }
    manifest_bytes = json.dumps(manifest, indent=1).encode()
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    with tarfile.open(partial, "w:gz") as archive:
        _add(archive, "manifest.json", manifest_bytes)
        if secret:
            signed = _entry_pack.sign(manifest_bytes, secret, _PURPOSE, "manifest.json")
            _add(archive, "signature", signed[: len(signed) - len(manifest_bytes)])
        for key, (_, data) in packs.items():
            _add(archive, f"entries/{key}", data)
    partial.replace(target)
    return len(packs)


def _verified_packs(cache: Any, since: float | None) -> Iterator[tuple[str, tuple[Any, bytes]]]:
    for listed in cache.list():
        if listed.kind == "damaged" or (since is not None and listed.last_used < since):
            continue
        entry = cache.lookup(listed.key)  # verified, or None
        if entry is not None:
            try:
                yield entry.key, (entry, _entry_pack.pack(entry))
            except OSError as error:  # evicted meanwhile
                _log.debug("not exporting %s: %s", entry.key[:16], error)


def _add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    info.mtime = int(time.time())
    archive.addfile(info, io.BytesIO(data))


def import_cache(cache: Any, path: str | Path, environment: str) -> ImportReport:
    """Publishes the entries of the export file ``path`` in ``cache``, each
    verified; entries of an environment other than ``environment`` are
    skipped. Raises CacheError when the file is not an export file, or (with
    a secret configured) is not signed with it, or its packs do not match
    its manifest."""
    report = ImportReport()
    try:
        archive = tarfile.open(path, "r:*")
    except (OSError, tarfile.TarError) as error:
        raise CacheError(f"cannot read the export file {path}: {error}") from None
    with archive:
        manifest = _manifest(archive, path)
        for item in manifest["entries"]:
            key = str(item.get("key", ""))
            if item.get("environment") != environment:
                report.other_environment += 1
                continue
            data = _member(archive, f"entries/{key}", _ENTRY_LIMIT)
            if data is None or hashlib.sha256(data).hexdigest() != item.get("sha256"):
                raise CacheError(
                    f"the export file {path} is altered: entry {key[:16]}... does not match "
                    "its manifest"
                )
            try:
                result = _entry_pack.adopt(cache, key, data)
            except CacheError as error:
                _log.warning("not importing %s: %s", key[:16], error)
                report.refused.append(f"{key}: {error}")
                continue
            if result.outcome == "built":
                report.imported += 1
            else:
                report.present += 1
    return report


def _manifest(archive: tarfile.TarFile, path: str | Path) -> dict[str, Any]:
    data = _member(archive, "manifest.json", _MANIFEST_LIMIT)
    if data is None:
        raise CacheError(f"{path} is not an opweave cache export (no manifest)")
    secret = _entry_pack.configured_secret()
    signature = _member(archive, "signature", 4096)
    try:
        _entry_pack.unsign((signature or b"") + data, secret, _PURPOSE, "manifest.json")
    except _entry_pack.SignatureError as error:
        raise _entry_pack.SignatureError(f"refusing the export file {path}: {error}") from None
    try:
        manifest = json.loads(data)
        entries = manifest["entries"]
        valid = manifest["format"] == _FORMAT and isinstance(entries, list)
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid or not all(isinstance(item, dict) for item in entries):
        raise CacheError(f"{path} is not an opweave cache export (its manifest is damaged)")
    return manifest


def _member(archive: tarfile.TarFile, name: str, limit: int) -> bytes | None:
    """The bytes of the regular file ``name`` in the archive, or None."""
    try:
        info = archive.getmember(name)
    except KeyError:
        return None
    if not info.isfile() or info.size > limit:
        return None
    handle = archive.extractfile(info)
    return handle.read() if handle is not None else None

"""Moving cache entries between machines: ``opweave cache export FILE`` and
``opweave cache import FILE`` (see docs/scale-out.md).

An export file is a gzip-compressed ustar archive of regular files only, in
this order:

- ``manifest.json``: the format, the exporting environment's fingerprint
  (:func:`opweave.link.c.cmodule.environment_fingerprint`), and for each
  entry its key, environment, kind and the SHA-256 of its pack;
- ``signature``, when a secret is configured (``cache__remote_secret``): an
  HMAC-SHA256 of the manifest, which names every pack's hash;
- ``entries/<key>``: each entry as :mod:`opweave.link.c._entry_pack` packs it.

Import never extracts anything to disk and never uses ``tarfile``'s member
handling: it reads the archive as a stream of 512-byte headers, each checked
before a byte of its member is read (a name of the three forms above, a
regular file, a size under its cap: ``cache__remote_max_entry`` for packs).
A first pass checks the whole file (its structure, its gzip checksum, the
manifest and its signature) and imports nothing; a second one imports each
entry whose pack has the manifest's SHA-256, through the core's verification
(``ModuleCache.adopt``). An entry that is missing, altered or does not verify
is refused and counted; the others are imported.

Export writes ``FILE.partial`` through a descriptor opened with
``O_CREAT|O_EXCL|O_NOFOLLOW`` and mode 0600 in the destination directory,
then renames it to ``FILE``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from opweave._export_archive import (
    ENTRIES,
    FORMAT,
    KEY,
    MANIFEST,
    PURPOSE,
    SIGNATURE,
    SIGNATURE_SIZE,
    Members,
    open_regular,
    shown,
    walk,
)
from opweave._logs import get_logger
from opweave.errors import CacheError
from opweave.link.c import _entry_pack

__all__ = ["ImportReport", "entry_limit", "export_cache", "import_cache"]

_log = get_logger("opweave")

_DEFAULT_ENTRY_LIMIT = 256 << 20  # cache__remote_max_entry's default

# Damaged entries, and precompiled preludes: tens of MB each, they only speed
# up compiles, which an export is made to spare, and a machine that compiles
# builds its own from its second module (docs/cache.md).
_NOT_EXPORTED = frozenset({"damaged", "prelude"})


@dataclass
class ImportReport:
    """What ``import_cache`` did with each entry of the file."""

    imported: int = 0  # published here
    present: int = 0  # valid here already
    other_environment: int = 0  # built for another environment: skipped
    refused: list[str] = field(default_factory=list)  # "key: why" of entries not imported


def entry_limit() -> int:
    """The largest pack imported or exported, in bytes: the remote tier's
    ``cache__remote_max_entry`` (256 MiB by default)."""
    from opweave.configparser import config

    return int(getattr(config, "cache__remote_max_entry", _DEFAULT_ENTRY_LIMIT))


# --- export -------------------------------------------------------------------------


def export_cache(cache: Any, path: str | Path, environment: str, since: float | None = None) -> int:
    """Writes every entry of ``cache`` that verifies (and was used at or
    after ``since``, seconds since the epoch, when given), precompiled
    preludes excepted, to the export file ``path``, signed when a secret is
    configured (else one WARNING says that an import refuses it by default),
    with mode 0600. Returns how many. Raises CacheError when the file cannot
    be written."""
    secret = _entry_pack.configured_secret()
    packs = dict(_verified_packs(cache, since, entry_limit()))
    manifest = {
        "format": FORMAT,
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

    def write(handle: BinaryIO) -> None:
        with tarfile.open(fileobj=handle, mode="w:gz", format=tarfile.USTAR_FORMAT) as archive:
            _add(archive, MANIFEST, manifest_bytes)
            if secret:
                signed = _entry_pack.sign(manifest_bytes, secret, PURPOSE, MANIFEST)
                _add(archive, SIGNATURE, signed[: len(signed) - len(manifest_bytes)])
            for key, (_, data) in packs.items():
                _add(archive, ENTRIES + key, data)

    _write_private(Path(path), write)
    if not secret:
        _log.warning(
            "%s is not signed (cache__remote_secret is not set): `opweave cache import` "
            "refuses it unless given --trust-unsigned",
            path,
        )
    return len(packs)


def _write_private(target: Path, write: Callable[[BinaryIO], None]) -> None:
    """Calls ``write`` with ``target.partial``, created (never followed: a
    stale one or a link there is removed first) with mode 0600 through a
    descriptor in ``target``'s directory, then renames it to ``target``."""
    partial = target.name + ".partial"
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        directory = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise CacheError(f"cannot write the export file {target}: {error}") from None
    try:
        try:
            fd = os.open(partial, flags, 0o600, dir_fd=directory)
        except FileExistsError:  # left by an interrupted export, or planted
            os.unlink(partial, dir_fd=directory)
            fd = os.open(partial, flags, 0o600, dir_fd=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(partial, target.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            os.unlink(partial, dir_fd=directory)
            raise
    except OSError as error:
        raise CacheError(f"cannot write the export file {target}: {error}") from None
    finally:
        os.close(directory)


def _verified_packs(
    cache: Any, since: float | None, limit: int
) -> Iterator[tuple[str, tuple[Any, bytes]]]:
    for listed in cache.list():
        if listed.kind in _NOT_EXPORTED or (since is not None and listed.last_used < since):
            continue
        entry = cache.lookup(listed.key)  # verified, or None
        data = None if entry is None else cache.export_entry(listed.key)
        if entry is None or data is None:  # damaged, or evicted meanwhile
            continue
        if len(data) > limit:  # import would refuse it
            _log.debug("not exporting %s: %s, over %s", entry.key[:16], len(data), limit)
            continue
        yield entry.key, (entry, data)


def _add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    info.mtime = int(time.time())
    archive.addfile(info, io.BytesIO(data))


# --- reading an archive -------------------------------------------------------------


@dataclass
class _Plan:
    """What the first pass found: the manifest's entries by key."""

    manifest: dict[str, Any]
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


# --- import -------------------------------------------------------------------------


def import_cache(
    cache: Any, path: str | Path, environment: str, *, trust_unsigned: bool = False
) -> ImportReport:
    """Publishes the entries of the export file ``path`` in ``cache``, each
    verified; entries of an environment other than ``environment`` are
    skipped, and entries that are missing, altered or do not verify are
    refused (counted in the report) while the others are imported.

    Raises CacheError, importing nothing, when the file is not an export
    file, is truncated or damaged, holds a member that export does not write
    (a link, a device, a name outside the archive, a pack over
    :func:`entry_limit`), or is not authenticated: signed with
    ``cache__remote_secret`` (or ``cache__remote_secret_previous``), or,
    with ``trust_unsigned``, unsigned (one WARNING then names the risk)."""
    limit = entry_limit()
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as raw:
        plan = _check_file(raw, path, limit, trust_unsigned)
        report = ImportReport(refused=list(plan.refused))
        wanted: dict[str, dict[str, Any]] = {}
        for key, item in plan.entries.items():
            if item.get("environment") != environment:
                report.other_environment += 1
            elif key not in plan.seen:
                report.refused.append(f"{key}: its pack is missing from the file")
            else:
                wanted[key] = item

        def visit(members: Members, info: tarfile.TarInfo) -> None:
            key = info.name[len(ENTRIES) :] if info.name.startswith(ENTRIES) else ""
            if key in wanted:
                _import_entry(cache, key, wanted[key], members.read(info), report)
            else:
                members.skip(info)

        walk(raw, path, limit, visit)
    return report


def _check_file(raw: BinaryIO, path: str | Path, limit: int, trust_unsigned: bool) -> _Plan:
    """The first pass: the archive's structure, its manifest and signature."""
    found: dict[str, bytes] = {}
    plans: list[_Plan] = []

    def visit(members: Members, info: tarfile.TarInfo) -> None:
        name = info.name
        expected = MANIFEST if not found else None
        if name == SIGNATURE and list(found) == [MANIFEST] and not plans:
            expected = SIGNATURE
        if name in (MANIFEST, SIGNATURE):
            if name != expected:
                raise members.refuse(f"member {name} is out of place (or repeated)")
            found[name] = members.read(info)
            return
        if not plans:  # the first pack: the manifest and signature are complete
            if MANIFEST not in found:
                raise members.refuse(f"it is not an opweave cache export (no {MANIFEST} first)")
            plans.append(_plan(found, path, trust_unsigned))
        key = name[len(ENTRIES) :]
        if key not in plans[0].entries or key in plans[0].seen:
            raise members.refuse(f"member {name} is not named in its manifest (or repeated)")
        plans[0].seen.add(key)
        members.skip(info)

    walk(raw, path, limit, visit)
    if not plans:
        if MANIFEST not in found:
            raise CacheError(f"{path} is not an opweave cache export (no {MANIFEST})")
        plans.append(_plan(found, path, trust_unsigned))
    return plans[0]


def _plan(found: dict[str, bytes], path: str | Path, trust_unsigned: bool) -> _Plan:
    """The manifest, authenticated, and its entries by key (bad ones refused)."""
    data = found[MANIFEST]
    _authenticate(data, found.get(SIGNATURE), path, trust_unsigned)
    try:
        manifest = json.loads(data)
        items = manifest["entries"]
        valid = manifest["format"] == FORMAT and isinstance(items, list)
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid or not all(isinstance(item, dict) for item in items):
        raise CacheError(f"{path} is not an opweave cache export (its manifest is damaged)")
    plan = _Plan(manifest)
    for item in items:
        key = item.get("key")
        if not isinstance(key, str) or not KEY.fullmatch(key):
            plan.refused.append(f"{shown(key)}: not a cache key (64 hexadecimal digits)")
        elif key in plan.entries:
            plan.refused.append(f"{key}: listed twice in the manifest")
        else:
            plan.entries[key] = item
    return plan


def _authenticate(
    manifest: bytes, signature: bytes | None, path: str | Path, trust_unsigned: bool
) -> None:
    """Returns when the manifest is signed with a configured secret, or
    when the user trusts unsigned files (warned); raises SignatureError."""
    secrets = _entry_pack.configured_secrets()
    signed = signature is not None and _entry_pack.is_signed(signature)
    if signature is not None and (not signed or len(signature) != SIGNATURE_SIZE):
        raise _entry_pack.SignatureError(
            f"refusing the export file {path}: its signature is damaged"
        )
    if signature is not None and signed and secrets:
        try:
            _entry_pack.unsign(signature + manifest, secrets, PURPOSE, MANIFEST)
            return
        except _entry_pack.SignatureError as error:
            raise _entry_pack.SignatureError(f"refusing the export file {path}: {error}") from None
    if trust_unsigned:
        _log.warning(
            "importing %s without authenticating it (--trust-unsigned): every module in it "
            "runs its code in each process that loads it, so whoever made or could alter "
            "this file can run code as you",
            path,
        )
        return
    if secrets:
        why = "it is not signed, and a secret is configured"
    elif signed:
        why = "it is signed, but no secret is configured to verify it"
    else:
        why = "it is not signed"
    raise _entry_pack.SignatureError(
        f"refusing the export file {path}: {why}; set cache__remote_secret to the "
        "exporter's secret, or pass --trust-unsigned to accept that its modules run "
        "their code when loaded"
    )


def _import_entry(
    cache: Any, key: str, item: dict[str, Any], data: bytes, report: ImportReport
) -> None:
    """Adopts one pack once it has the manifest's SHA-256; a refusal is
    counted, not raised."""
    if hashlib.sha256(data).hexdigest() != item.get("sha256"):
        report.refused.append(f"{key}: its pack does not match the manifest (altered)")
        return
    try:
        result = cache.adopt(key, data)
    except (CacheError, ValueError) as error:
        report.refused.append(f"{key}: {shown(str(error), 300)}")
        return
    except OSError as error:  # this cache, not the entry
        raise CacheError(f"cannot import into {cache.root}: {error}") from None
    if result.outcome == "built":
        report.imported += 1
    else:
        report.present += 1

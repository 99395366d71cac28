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

import gzip
import hashlib
import io
import json
import logging
import os
import re
import stat
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from opweave.errors import CacheError
from opweave.link.c import _entry_pack

__all__ = ["ImportReport", "entry_limit", "export_cache", "import_cache"]

_log = logging.getLogger("opweave")

_FORMAT = "opweave-cache-export 1"
_PURPOSE = "export file"
_MANIFEST = "manifest.json"
_SIGNATURE = "signature"
_ENTRIES = "entries/"
_MANIFEST_LIMIT = 64 << 20
_SIGNATURE_SIZE = len(_entry_pack.sign(b"", b"-", _PURPOSE, _MANIFEST))
_DEFAULT_ENTRY_LIMIT = 256 << 20  # cache__remote_max_entry's default
_KEY = re.compile(r"[0-9a-f]{64}")
_BLOCK = 512
_CHUNK = 1 << 20
_READ_ERRORS = (EOFError, zlib.error, tarfile.HeaderError, OSError)
_TYPES = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
    tarfile.DIRTYPE: "a directory",
    tarfile.XHDTYPE: "a pax header",
    tarfile.XGLTYPE: "a pax header",
    tarfile.GNUTYPE_LONGNAME: "a GNU long-name header",
    tarfile.GNUTYPE_LONGLINK: "a GNU long-link header",
}


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


def _shown(text: object, width: int = 80) -> str:
    """``text`` on one line, at most about ``width`` characters."""
    shown = repr(text) if not isinstance(text, str) or not text.isprintable() else text
    return shown if len(shown) <= width else shown[:width] + "..."


def _size(count: float) -> str:
    if count < 1024:
        return f"{count:.0f} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        count /= 1024
        if count < 1024 or unit == "TiB":
            break
    return f"{count:.1f} {unit}"


# --- export -------------------------------------------------------------------------


def export_cache(cache: Any, path: str | Path, environment: str, since: float | None = None) -> int:
    """Writes every entry of ``cache`` that verifies (and was used at or
    after ``since``, seconds since the epoch, when given) to the export file
    ``path``, signed when a secret is configured, with mode 0600. Returns how
    many. Raises CacheError when the file cannot be written."""
    secret = _entry_pack.configured_secret()
    packs = dict(_verified_packs(cache, since, entry_limit()))
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

    def write(handle: BinaryIO) -> None:
        with tarfile.open(fileobj=handle, mode="w:gz", format=tarfile.USTAR_FORMAT) as archive:
            _add(archive, _MANIFEST, manifest_bytes)
            if secret:
                signed = _entry_pack.sign(manifest_bytes, secret, _PURPOSE, _MANIFEST)
                _add(archive, _SIGNATURE, signed[: len(signed) - len(manifest_bytes)])
            for key, (_, data) in packs.items():
                _add(archive, _ENTRIES + key, data)

    _write_private(Path(path), write)
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
        if listed.kind == "damaged" or (since is not None and listed.last_used < since):
            continue
        entry = cache.lookup(listed.key)  # verified, or None
        if entry is None:
            continue
        try:
            data = _entry_pack.pack(entry)
        except OSError as error:  # evicted meanwhile
            _log.debug("not exporting %s: %s", entry.key[:16], error)
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


class _Members:
    """The members of a gzip-compressed tar stream, one header at a time:
    each is checked (name, type, size) before any of its bytes is read."""

    def __init__(self, stream: io.BufferedIOBase, path: str | Path, limit: int) -> None:
        self.stream, self.path, self.limit = stream, path, limit
        self.current = "its first header"

    def refuse(self, why: str) -> CacheError:
        """The error that refuses the whole file."""
        return CacheError(f"refusing the export file {self.path}: {why}")

    def exact(self, count: int) -> bytes:
        """``count`` bytes of the stream; EOFError when it ends before."""
        data = self.stream.read(count)
        if len(data) != count:
            raise EOFError(f"the file ends inside {self.current}")
        return data

    def __iter__(self) -> Iterator[tarfile.TarInfo]:
        while True:
            block = self.exact(_BLOCK)
            if block == bytes(_BLOCK):  # the end of the archive
                return
            info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
            self.check(info)
            self.current = f"member {_shown(info.name)}"
            yield info

    def check(self, info: tarfile.TarInfo) -> None:
        """Refuses a member that ``export_cache`` does not write."""
        name = info.name
        if name.startswith("/"):
            raise self.refuse(f"member {_shown(name)} is an absolute path")
        if ".." in name.split("/"):
            raise self.refuse(f"member {_shown(name)} climbs out of the archive (..)")
        if info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
            what = _TYPES.get(info.type, f"of type {info.type!r}")
            raise self.refuse(f"member {_shown(name)} is {what}, not a regular file")
        if name == _MANIFEST:
            limit = _MANIFEST_LIMIT
        elif name == _SIGNATURE:
            limit = _SIGNATURE_SIZE
        elif name.startswith(_ENTRIES) and _KEY.fullmatch(name[len(_ENTRIES) :]):
            limit = self.limit
        else:
            raise self.refuse(f"member {_shown(name)} is not part of an opweave cache export")
        if info.size > limit:
            raise self.refuse(
                f"member {_shown(name)} declares {_size(info.size)}, over the limit of "
                f"{_size(limit)} (cache__remote_max_entry for entries)"
            )

    def read(self, info: tarfile.TarInfo) -> bytes:
        """The member's bytes (its size was checked by its header)."""
        data = self.exact(info.size)
        self.exact(-info.size % _BLOCK)
        return data

    def skip(self, info: tarfile.TarInfo) -> None:
        """Reads past the member, a chunk at a time."""
        left = info.size + (-info.size % _BLOCK)
        while left:
            left -= len(self.exact(min(left, _CHUNK)))

    def finish(self) -> None:
        """Reads the stream to its end (the gzip trailer checks the CRC)."""
        self.current = "the end of the archive"
        while self.stream.read(_CHUNK):
            pass


@dataclass
class _Plan:
    """What the first pass found: the manifest's entries by key."""

    manifest: dict[str, Any]
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


def _open_regular(path: str | Path) -> int:
    """A descriptor of the regular file ``path`` (never blocks on a FIFO)."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise CacheError(f"cannot read the export file {path}: {error.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CacheError(f"refusing the export file {path}: it is not a regular file")
    os.set_blocking(fd, True)
    return fd


def _walk(
    raw: BinaryIO, path: str | Path, limit: int, visit: Callable[[_Members, tarfile.TarInfo], None]
) -> None:
    """Reads the archive from its start, calling ``visit`` for each member
    (which must read or skip it); a damaged or truncated file is refused."""
    raw.seek(0)
    members = _Members(gzip.GzipFile(fileobj=raw, mode="rb"), path, limit)
    try:
        for info in members:
            visit(members, info)
        members.finish()
    except _READ_ERRORS as error:
        why = str(error).splitlines()[0] if str(error) else type(error).__name__
        if isinstance(error, EOFError) and "inside" not in why:
            why = f"{why} (in {members.current})"
        raise members.refuse(f"it is truncated or damaged: {why}") from None


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
    fd = _open_regular(path)
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

        def visit(members: _Members, info: tarfile.TarInfo) -> None:
            key = info.name[len(_ENTRIES) :] if info.name.startswith(_ENTRIES) else ""
            if key in wanted:
                _import_entry(cache, key, wanted[key], members.read(info), report)
            else:
                members.skip(info)

        _walk(raw, path, limit, visit)
    return report


def _check_file(raw: BinaryIO, path: str | Path, limit: int, trust_unsigned: bool) -> _Plan:
    """The first pass: the archive's structure, its manifest and signature."""
    found: dict[str, bytes] = {}
    plans: list[_Plan] = []

    def visit(members: _Members, info: tarfile.TarInfo) -> None:
        name = info.name
        expected = _MANIFEST if not found else None
        if name == _SIGNATURE and list(found) == [_MANIFEST] and not plans:
            expected = _SIGNATURE
        if name in (_MANIFEST, _SIGNATURE):
            if name != expected:
                raise members.refuse(f"member {name} is out of place (or repeated)")
            found[name] = members.read(info)
            return
        if not plans:  # the first pack: the manifest and signature are complete
            if _MANIFEST not in found:
                raise members.refuse(f"it is not an opweave cache export (no {_MANIFEST} first)")
            plans.append(_plan(found, path, trust_unsigned))
        key = name[len(_ENTRIES) :]
        if key not in plans[0].entries or key in plans[0].seen:
            raise members.refuse(f"member {name} is not named in its manifest (or repeated)")
        plans[0].seen.add(key)
        members.skip(info)

    _walk(raw, path, limit, visit)
    if not plans:
        if _MANIFEST not in found:
            raise CacheError(f"{path} is not an opweave cache export (no {_MANIFEST})")
        plans.append(_plan(found, path, trust_unsigned))
    return plans[0]


def _plan(found: dict[str, bytes], path: str | Path, trust_unsigned: bool) -> _Plan:
    """The manifest, authenticated, and its entries by key (bad ones refused)."""
    data = found[_MANIFEST]
    _authenticate(data, found.get(_SIGNATURE), path, trust_unsigned)
    try:
        manifest = json.loads(data)
        items = manifest["entries"]
        valid = manifest["format"] == _FORMAT and isinstance(items, list)
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid or not all(isinstance(item, dict) for item in items):
        raise CacheError(f"{path} is not an opweave cache export (its manifest is damaged)")
    plan = _Plan(manifest)
    for item in items:
        key = item.get("key")
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            plan.refused.append(f"{_shown(key)}: not a cache key (64 hexadecimal digits)")
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
    if signature is not None and (not signed or len(signature) != _SIGNATURE_SIZE):
        raise _entry_pack.SignatureError(
            f"refusing the export file {path}: its signature is damaged"
        )
    if signature is not None and signed and secrets:
        try:
            _entry_pack.unsign(signature + manifest, secrets, _PURPOSE, _MANIFEST)
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
        result = _entry_pack.adopt(cache, key, data)
    except (CacheError, ValueError) as error:
        report.refused.append(f"{key}: {_shown(str(error), 300)}")
        return
    except OSError as error:  # this cache, not the entry
        raise CacheError(f"cannot import into {cache.root}: {error}") from None
    if result.outcome == "built":
        report.imported += 1
    else:
        report.present += 1

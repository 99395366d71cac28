"""The archive of an export file (see :mod:`opweave._cache_transfer`): the
names and limits of its members, and the reader that checks each member's
header before a byte of it is read."""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import tarfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from opweave.errors import CacheError
from opweave.link.c import _entry_pack

__all__ = [
    "ENTRIES",
    "FORMAT",
    "KEY",
    "MANIFEST",
    "PURPOSE",
    "SIGNATURE",
    "SIGNATURE_SIZE",
    "Members",
    "open_regular",
    "shown",
    "size",
    "walk",
]

FORMAT = "opweave-cache-export 1"


PURPOSE = "export file"


MANIFEST = "manifest.json"


SIGNATURE = "signature"


ENTRIES = "entries/"


_MANIFEST_LIMIT = 64 << 20


SIGNATURE_SIZE = len(_entry_pack.sign(b"", b"-", PURPOSE, MANIFEST))


KEY = re.compile(r"[0-9a-f]{64}")


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


def shown(text: object, width: int = 80) -> str:
    """``text`` on one line, at most about ``width`` characters."""
    line = repr(text) if not isinstance(text, str) or not text.isprintable() else text
    return line if len(line) <= width else line[:width] + "..."


def size(count: float) -> str:
    """``count`` bytes for a message: ``512 bytes``, ``1.5 MiB``."""
    if count < 1024:
        return f"{count:.0f} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        count /= 1024
        if count < 1024 or unit == "TiB":
            break
    return f"{count:.1f} {unit}"


class Members:
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
            self.current = f"member {shown(info.name)}"
            yield info

    def check(self, info: tarfile.TarInfo) -> None:
        """Refuses a member that ``export_cache`` does not write."""
        name = info.name
        if name.startswith("/"):
            raise self.refuse(f"member {shown(name)} is an absolute path")
        if ".." in name.split("/"):
            raise self.refuse(f"member {shown(name)} climbs out of the archive (..)")
        if info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
            what = _TYPES.get(info.type, f"of type {info.type!r}")
            raise self.refuse(f"member {shown(name)} is {what}, not a regular file")
        if name == MANIFEST:
            limit = _MANIFEST_LIMIT
        elif name == SIGNATURE:
            limit = SIGNATURE_SIZE
        elif name.startswith(ENTRIES) and KEY.fullmatch(name[len(ENTRIES) :]):
            limit = self.limit
        else:
            raise self.refuse(f"member {shown(name)} is not part of an opweave cache export")
        if info.size > limit:
            raise self.refuse(
                f"member {shown(name)} declares {size(info.size)}, over the limit of "
                f"{size(limit)} (cache__remote_max_entry for entries)"
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


def open_regular(path: str | Path) -> int:
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


def walk(
    raw: BinaryIO, path: str | Path, limit: int, visit: Callable[[Members, tarfile.TarInfo], None]
) -> None:
    """Reads the archive from its start, calling ``visit`` for each member
    (which must read or skip it); a damaged or truncated file is refused."""
    raw.seek(0)
    members = Members(gzip.GzipFile(fileobj=raw, mode="rb"), path, limit)
    try:
        for info in members:
            visit(members, info)
        members.finish()
    except _READ_ERRORS as error:
        why = str(error).splitlines()[0] if str(error) else type(error).__name__
        if isinstance(error, EOFError) and "inside" not in why:
            why = f"{why} (in {members.current})"
        raise members.refuse(f"it is truncated or damaged: {why}") from None

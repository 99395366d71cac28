"""Cache entries as bytes, for export files and the remote tier.

One format, one path, in both directions: :func:`pack` reads a published
entry (its ``meta.json`` and the files it lists) into one byte string;
:func:`adopt` hands such a string to the core's ``ModuleCache.adopt``,
which verifies it exactly as a local entry (the metadata names the key,
every file has its recorded size and SHA-256, every recorded header has the
same content on this machine) before it publishes it.

With a secret, :func:`sign` wraps bytes in an HMAC-SHA256 that binds them to
a purpose and a name (the entry's key, or an export file's manifest), and
:func:`unsign` refuses anything else: bytes signed for another key, another
purpose, or with another secret. :func:`unsign` accepts several secrets (the
current one and ``cache__remote_secret_previous``, while a secret is
rotated: :func:`configured_secrets`); :func:`sign` uses the current one.
HMAC is symmetric: whoever can verify can also sign. Without the secret,
bytes from elsewhere are only as trustworthy as whoever could write them.

Layout of a pack: ``OPWEAVE-ENTRY 1\\n``, one JSON line ``{"key", "meta",
"files": [[name, size], ...]}`` (``meta`` is the size of the metadata), then
the metadata and each file's bytes, in that order.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opweave.errors import CacheError

__all__ = [
    "SignatureError",
    "adopt",
    "configured_secret",
    "configured_secrets",
    "is_signed",
    "pack",
    "sign",
    "unpack",
    "unsign",
]

_MAGIC = b"OPWEAVE-ENTRY 1\n"
_SIGNED = b"OPWEAVE-SIGNED 1\n"
_HEADER_LIMIT = 1 << 20


class SignatureError(CacheError):
    """Bytes that must be signed with the configured secret are not (or the
    signature does not hold)."""


def pack(entry: Any) -> bytes:
    """The bytes of a published, verified ``entry`` (an ``_core.Entry``):
    its metadata and every file it lists, read from its directory."""
    directory = Path(entry.dir)
    meta = (directory / "meta.json").read_bytes()
    files = [(f.name, (directory / f.name).read_bytes()) for f in entry.files]
    header = {"key": entry.key, "meta": len(meta), "files": [[n, len(b)] for n, b in files]}
    return b"".join(
        [_MAGIC, json.dumps(header).encode(), b"\n", meta, *(content for _, content in files)]
    )


def unpack(data: bytes) -> tuple[str, bytes, list[tuple[str, bytes]]]:
    """(key, metadata, [(name, bytes), ...]) of a pack. Raises CacheError when
    the bytes are not one."""
    if not data.startswith(_MAGIC):
        raise CacheError("not an opweave cache entry")
    end = data.find(b"\n", len(_MAGIC), len(_MAGIC) + _HEADER_LIMIT)
    try:
        header = json.loads(data[len(_MAGIC) : end])
        key, at = str(header["key"]), end + 1
        meta_size = int(header["meta"])
        sizes = [(str(name), int(size)) for name, size in header["files"]]
    except (ValueError, KeyError, TypeError) as error:
        raise CacheError(f"a damaged opweave cache entry ({error})") from None
    if end < 0 or meta_size < 0 or any(size < 0 for _, size in sizes):
        raise CacheError("a damaged opweave cache entry (header)")
    if at + meta_size + sum(size for _, size in sizes) != len(data):
        raise CacheError("a damaged opweave cache entry (its sizes do not add up)")
    meta, at = data[at : at + meta_size], at + meta_size
    files = []
    for name, size in sizes:
        files.append((name, data[at : at + size]))
        at += size
    return key, meta, files


def adopt(cache: Any, key: str, data: bytes) -> Any:
    """Publishes the pack ``data`` as the entry ``key`` of ``cache`` once it
    verifies (see the module's docstring). Returns the core's CacheResult;
    raises CacheError saying what does not verify."""
    packed_key, meta, files = unpack(data)
    if packed_key != key:
        raise CacheError(f"the entry stored for {key[:16]}... is the entry of {packed_key[:16]}...")
    return cache.adopt(key, meta, files)


def _mac(secret: bytes, purpose: str, name: str, data: bytes) -> str:
    message = hmac.new(secret, f"opweave {purpose}\0{name}\0".encode(), hashlib.sha256)
    message.update(data)
    return message.hexdigest()


def sign(data: bytes, secret: bytes | None, purpose: str, name: str) -> bytes:
    """``data`` with an HMAC-SHA256 (under ``secret``) of it, its ``purpose``
    and ``name``; ``data`` as it is without a secret."""
    if not secret:
        return data
    return _SIGNED + _mac(secret, purpose, name, data).encode() + b"\n" + data


def is_signed(data: bytes) -> bool:
    """Whether ``data`` carries a signature of :func:`sign` (unchecked)."""
    return data.startswith(_SIGNED)


def unsign(data: bytes, secret: bytes | Sequence[bytes] | None, purpose: str, name: str) -> bytes:
    """The signed bytes of :func:`sign`. With a secret (or several: any of
    them), raises SignatureError unless they are signed with it for
    ``purpose`` and ``name``; without one, a signature is dropped
    unchecked."""
    secrets = [secret] if isinstance(secret, bytes) else [s for s in secret or () if s]
    signed = data.startswith(_SIGNED)
    body = data[len(_SIGNED) + 65 :] if signed else data
    if not any(secrets):
        return body
    if not signed:
        raise SignatureError("it is not signed, and a secret is configured")
    given = data[len(_SIGNED) : len(_SIGNED) + 64]
    for key in secrets:
        if key and hmac.compare_digest(given, _mac(key, purpose, name, body).encode()):
            return body
    raise SignatureError(
        "its signature does not hold (altered, stored under another key, or another secret)"
    )


def configured_secret() -> bytes | None:
    """The secret of ``config.cache__remote_secret`` (``file:/path`` reads
    it from that file, without its surrounding whitespace), or None: the
    one that signs."""
    from opweave.configparser import config

    return _read_secret(config.cache__remote_secret)


def configured_secrets() -> tuple[bytes, ...]:
    """The secrets that verify: ``cache__remote_secret``, then
    ``cache__remote_secret_previous`` (while rotating), those set."""
    from opweave.configparser import config

    values = (config.cache__remote_secret, config.cache__remote_secret_previous)
    return tuple(secret for value in values if (secret := _read_secret(value)))


def _read_secret(value: str) -> bytes | None:
    if not value:
        return None
    if value.startswith("file:"):
        path = Path(value[len("file:") :])
        try:
            secret = path.read_bytes().strip()
        except OSError as error:
            raise CacheError(f"cannot read the cache secret from {path}: {error}") from None
        if not secret:
            raise CacheError(f"the cache secret file {path} is empty")
        return secret
    return value.encode()

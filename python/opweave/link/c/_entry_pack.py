"""Signatures of cache entries and export files, for the remote tier and
export files.

An entry leaves a cache as one byte string, a pack, through the core's
``ModuleCache.export_entry`` (its layout is described there), and enters
another through ``ModuleCache.adopt``, which verifies it exactly as a local
entry (the metadata names the key, every file has its recorded size and
SHA-256, every recorded header has the same content on this machine) before
it publishes it.

With a secret, :func:`sign` wraps bytes in an HMAC-SHA256 that binds them to
a purpose and a name (the entry's key, or an export file's manifest), and
:func:`unsign` refuses anything else: bytes signed for another key, another
purpose, or with another secret. :func:`unsign` accepts several secrets (the
current one and ``cache__remote_secret_previous``, while a secret is
rotated: :func:`configured_secrets`); :func:`sign` uses the current one.
HMAC is symmetric: whoever can verify can also sign. Without the secret,
bytes from elsewhere are only as trustworthy as whoever could write them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from collections.abc import Sequence

from opweave.errors import CacheError

__all__ = [
    "SignatureError",
    "configured_secret",
    "configured_secrets",
    "is_signed",
    "sign",
    "unsign",
]

_SIGNED = b"OPWEAVE-SIGNED 1\n"


class SignatureError(CacheError):
    """Bytes that must be signed with the configured secret are not (or the
    signature does not hold)."""


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


_MAX_SECRET_BYTES = 1 << 16


def configured_secret() -> bytes | None:
    """The secret of ``config.cache__remote_secret`` (``file:/path`` reads
    it from that file, without its surrounding whitespace: see
    :func:`read_secret_file`), or None: the one that signs."""
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
        return read_secret_file(value[len("file:") :])
    return value.encode()


def read_secret_file(path: str) -> bytes:
    """The secret held by the file ``path``, without its surrounding
    whitespace. The file is opened without blocking (a FIFO in its place
    cannot hang the process) and used only if it is a regular file of this
    user that nobody else may read or write (mode 0600 or stricter, as ssh
    wants of a private key): anyone who can read the secret can sign, and
    anyone who can write it can choose it. CacheError says what is wrong."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as error:
        raise CacheError(f"cannot read the cache secret from {path}: {error}") from None
    try:
        _check_secret_file(path, os.fstat(fd))
        with os.fdopen(fd, "rb", closefd=False) as file:
            secret = file.read(_MAX_SECRET_BYTES + 1).strip()
    finally:
        os.close(fd)
    if len(secret) > _MAX_SECRET_BYTES:
        raise CacheError(f"the cache secret file {path} is larger than 64 KiB")
    if not secret:
        raise CacheError(f"the cache secret file {path} is empty")
    return secret


def _check_secret_file(path: str, status: os.stat_result) -> None:
    """Raises CacheError unless ``status`` is that of a regular file of this
    user that nobody else may read or write."""
    if not stat.S_ISREG(status.st_mode):
        raise CacheError(f"the cache secret {path} is not a regular file")
    if status.st_uid != os.geteuid():
        raise CacheError(
            f"the cache secret {path} belongs to uid {status.st_uid}, not to this user "
            f"(uid {os.geteuid()}); use a file of your own"
        )
    if status.st_mode & 0o077:
        raise CacheError(
            f"the cache secret {path} may be read or written by others (mode "
            f"{stat.S_IMODE(status.st_mode):04o}); make it private: chmod 600 {path}"
        )

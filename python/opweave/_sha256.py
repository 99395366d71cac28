"""SHA-256 digests by the core (its SHA-NI code), for the modules on a fresh
process's path: ``import hashlib`` loads OpenSSL, about 3 ms of a fresh
process's start."""

from __future__ import annotations

from opweave import _core

__all__ = ["Sha256", "sha256_hex"]


def sha256_hex(data: bytes | bytearray | memoryview | str) -> str:
    """The SHA-256 of ``data`` (a str is encoded as UTF-8), as 64 lower-case
    hex digits, as ``hashlib.sha256(data).hexdigest()``."""
    if isinstance(data, str):
        data = data.encode()
    elif not isinstance(data, bytes):
        data = bytes(data)
    return _core.sha256_hex(data)


class Sha256:
    """An incremental SHA-256, as ``hashlib.sha256()``: ``update`` parts, then
    ``hexdigest`` of them all."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def update(self, data: bytes) -> None:
        """Adds ``data`` to what is hashed."""
        self._parts.append(data)

    def hexdigest(self) -> str:
        """The SHA-256 of every part added, in order, as 64 hex digits."""
        return _core.sha256_hex(b"".join(self._parts))

"""A minimal Redis client: GET and SET over RESP, for the remote tier.

The ``redis`` package takes about 70 ms to import (it loads asyncio), more
than a whole remote hit, which is what the remote tier exists to make fast.
The remote tier needs two commands, so it speaks the protocol itself.

URLs: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...``
(TLS) and ``unix:///path/to/socket[?db=N]``. Every connect and every read
waits at most ``timeout`` seconds. Sockets are not inherited by children.
"""

from __future__ import annotations

import socket
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["RespClient", "RespError"]


class RespError(Exception):
    """The server answered with an error (e.g. OOM when it is full), or
    the answer is not RESP."""


class RespClient:
    """One connection to a Redis server, opened on first use and again
    after a failure."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"not a Redis URL: {url!r}")
        self._parts = parts
        self._timeout = timeout
        path_db = parts.path.strip("/") if parts.scheme != "unix" else ""
        query_db = parse_qs(parts.query).get("db", ["0"])[0]
        self._db = int(path_db or query_db or 0)
        self._sock: socket.socket | None = None
        self._buffer = b""

    def get(self, key: str) -> bytes | None:
        """The value of ``key``, or None when there is none."""
        reply = self._call(b"GET", key.encode())
        if reply is not None and not isinstance(reply, bytes):
            raise RespError(f"unexpected answer to GET: {reply!r}")
        return reply

    def set(self, key: str, value: bytes) -> None:
        """Stores ``value`` under ``key``."""
        self._call(b"SET", key.encode(), value)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer = b""

    # --- the protocol -------------------------------------------------------

    def _call(self, *words: bytes) -> bytes | int | None:
        if self._sock is None:
            self._connect()
        try:
            self._send(*words)
            return self._reply()
        except (OSError, RespError):
            self.close()
            raise

    def _connect(self) -> None:
        parts = self._parts
        if parts.scheme == "unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self._timeout)
            sock.connect(parts.path)
        else:
            address = (parts.hostname or "127.0.0.1", parts.port or 6379)
            sock = socket.create_connection(address, timeout=self._timeout)
            if parts.scheme == "rediss":
                import ssl

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=address[0])
        self._sock = sock
        try:
            if parts.password is not None:
                user = unquote(parts.username) if parts.username else None
                credentials = [user.encode()] if user else []
                self._call(b"AUTH", *credentials, unquote(parts.password).encode())
            if self._db:
                self._call(b"SELECT", str(self._db).encode())
        except (OSError, RespError):
            self.close()
            raise

    def _send(self, *words: bytes) -> None:
        assert self._sock is not None
        chunks = [b"*%d\r\n" % len(words)]
        for word in words:
            chunks += [b"$%d\r\n" % len(word), word, b"\r\n"]
        self._sock.sendall(b"".join(chunks))

    def _read(self, size: int) -> bytes:
        assert self._sock is not None
        while len(self._buffer) < size:
            chunk = self._sock.recv(max(size - len(self._buffer), 65536))
            if not chunk:
                raise ConnectionError("the Redis server closed the connection")
            self._buffer += chunk
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _line(self) -> bytes:
        assert self._sock is not None
        while b"\r\n" not in self._buffer:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("the Redis server closed the connection")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\r\n")
        return line

    def _reply(self) -> bytes | int | None:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RespError(rest.decode("utf-8", "replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            return self._read(size + 2)[:-2]
        raise RespError(f"not a RESP answer: {line[:40]!r}")

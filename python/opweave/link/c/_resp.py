"""A minimal Redis client: GET and SET over RESP, for the remote tier.

The ``redis`` package takes about 70 ms to import (it loads asyncio), more
than a whole remote hit, which is what the remote tier exists to make fast.
The remote tier needs two commands, so it speaks the protocol itself.

URLs: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...``
(TLS) and ``unix:///path/to/socket[?db=N]``; :func:`redact` shows one
without its password, and nothing here shows one otherwise.

Bounds: each request (connecting, AUTH and SELECT included, sending, and
every read of the answer) ends within ``timeout`` seconds in all, whatever
the server sends or withholds (:class:`RespTimeout`). A bulk answer longer
than ``max_value`` bytes is refused from its length header, before any of
it is read (:class:`RespTooLarge`). A value is read in chunks joined once.
Sockets are not inherited by children.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

__all__ = ["RespClient", "RespError", "RespTimeout", "RespTooLarge", "redact"]

_LINE_LIMIT = 64 * 1024  # a status, error or length line; values are bulk
_CHUNK = 1 << 20


class RespError(Exception):
    """The server answered with an error (e.g. OOM when it is full), or
    the answer is not RESP."""


class RespTooLarge(RespError):
    """A value longer than the client's ``max_value``, refused unread."""


class RespTimeout(TimeoutError):
    """The whole request took longer than the client's timeout."""


def redact(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``; any text that
    does not parse as a URL is shown only by its scheme."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rpartition("@")[2]
        user = parts.username or ""
        return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
    except ValueError:
        return url.partition(":")[0] + "://***"


class RespClient:
    """One connection to a Redis server, opened on first use and again
    after a failure."""

    def __init__(self, url: str, timeout: float, max_value: int | None = None) -> None:
        """A client of ``url`` whose requests each take at most ``timeout``
        seconds and whose values are at most ``max_value`` bytes (None: no
        cap). Raises ValueError for a URL that is not a Redis one."""
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"not a Redis URL: {redact(url)!r}")
        self._parts = parts
        self._timeout = timeout
        self._max_value = max_value
        path_db = parts.path.strip("/") if parts.scheme != "unix" else ""
        query_db = parse_qs(parts.query).get("db", ["0"])[0]
        self._db = int(path_db or query_db or 0)
        self._sock: socket.socket | None = None
        self._buffer = bytearray()
        self._deadline = 0.0

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
        """Closes the connection (the next request opens another)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer = bytearray()

    # --- the protocol -------------------------------------------------------

    def _call(self, *words: bytes) -> bytes | int | None:
        """One request, connecting first if needed, all within the timeout."""
        self._deadline = time.monotonic() + self._timeout
        try:
            if self._sock is None:
                self._connect()
            return self._exchange(*words)
        except (OSError, RespError):
            self.close()
            raise

    def _remaining(self) -> float:
        """Seconds left before the deadline; raises RespTimeout when none."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise RespTimeout(
                f"timed out: no complete answer within {self._timeout:g} s "
                "(cache__remote_timeout bounds the whole request)"
            )
        return left

    def _connect(self) -> None:
        parts = self._parts
        if parts.scheme == "unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock = sock
            sock.settimeout(self._remaining())
            sock.connect(parts.path)
        else:
            address = (parts.hostname or "127.0.0.1", parts.port or 6379)
            sock = socket.create_connection(address, timeout=self._remaining())
            self._sock = sock
            if parts.scheme == "rediss":
                import ssl

                sock.settimeout(self._remaining())
                context = ssl.create_default_context()
                self._sock = context.wrap_socket(sock, server_hostname=address[0])
        if parts.password is not None:
            user = unquote(parts.username) if parts.username else None
            credentials = [user.encode()] if user else []
            self._exchange(b"AUTH", *credentials, unquote(parts.password).encode())
        if self._db:
            self._exchange(b"SELECT", str(self._db).encode())

    def _exchange(self, *words: bytes) -> bytes | int | None:
        self._send(*words)
        return self._reply()

    def _send(self, *words: bytes) -> None:
        assert self._sock is not None
        chunks = [b"*%d\r\n" % len(words)]
        for word in words:
            chunks += [b"$%d\r\n" % len(word), word, b"\r\n"]
        self._sock.settimeout(self._remaining())  # bounds the whole sendall
        self._sock.sendall(b"".join(chunks))

    def _recv(self, size: int) -> bytes:
        """At most ``size`` bytes, waiting no later than the deadline."""
        assert self._sock is not None
        self._sock.settimeout(self._remaining())
        try:
            chunk = self._sock.recv(size)
        except TimeoutError:
            self._remaining()  # raises RespTimeout, with the whole request's budget
            raise
        if not chunk:
            raise ConnectionError("the Redis server closed the connection")
        return chunk

    def _read(self, size: int) -> bytes:
        """Exactly ``size`` bytes: those buffered, then chunks joined once."""
        chunks = [bytes(self._buffer[:size])]
        got = len(chunks[0])
        del self._buffer[:got]
        while got < size:
            chunk = self._recv(min(size - got, _CHUNK))
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _line(self) -> bytes:
        """One line without its CRLF; longer than _LINE_LIMIT is not RESP."""
        searched = 0
        while (end := self._buffer.find(b"\r\n", searched)) < 0:
            if len(self._buffer) > _LINE_LIMIT:
                raise RespError("not a RESP answer: a line of more than 64 KiB")
            searched = max(len(self._buffer) - 1, 0)
            self._buffer += self._recv(65536)
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 2]
        return line

    def _reply(self) -> bytes | int | None:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RespError(rest.decode("utf-8", "replace"))
        if kind == b":":
            return _integer(line)
        if kind == b"$":
            size = _integer(line)
            if size < 0:
                return None
            if self._max_value is not None and size > self._max_value:
                raise RespTooLarge(
                    f"a value of {size} bytes, more than cache__remote_max_entry "
                    f"({self._max_value} bytes)"
                )
            value = self._read(size)
            if self._read(2) != b"\r\n":
                raise RespError("not a RESP answer: a bulk value without its CRLF")
            return value
        raise RespError(f"not a RESP answer: {line[:40]!r}")


def _integer(line: bytes) -> int:
    """The integer after a line's type byte; RespError when it is not one."""
    try:
        value = int(line[1:])
    except ValueError:
        raise RespError(f"not a RESP answer: {line[:40]!r}") from None
    if line[:1] == b"$" and value < -1:
        raise RespError(f"not a RESP answer: {line[:40]!r}")
    return value

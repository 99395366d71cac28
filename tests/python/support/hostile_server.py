"""Loopback servers that misbehave, for the tests of the remote tier's
client (opweave/link/c/_resp.py): one that never answers, one that dribbles,
one that announces a huge value or answers anything given."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Behaviour = Callable[[socket.socket, threading.Event], None]


@contextmanager
def hostile_server(behaviour: Behaviour) -> Iterator[tuple[str, list[socket.socket]]]:
    """A loopback server that runs ``behaviour`` on each connection, in a
    thread of its own; yields its URL and the connections accepted."""
    stop = threading.Event()
    accepted: list[socket.socket] = []
    threads: list[threading.Thread] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(0.05)

        def accept() -> None:
            while not stop.is_set():
                try:
                    conn = server.accept()[0]
                except OSError:
                    continue
                accepted.append(conn)
                thread = threading.Thread(target=behaviour, args=(conn, stop), daemon=True)
                threads.append(thread)
                thread.start()

        acceptor = threading.Thread(target=accept, daemon=True)
        acceptor.start()
        try:
            yield f"redis://127.0.0.1:{server.getsockname()[1]}", accepted
        finally:
            stop.set()
            acceptor.join()
            for thread in threads:
                thread.join(timeout=2)
            for conn in accepted:
                conn.close()


def silent(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait()


def dribbling(conn: socket.socket, stop: threading.Event) -> None:
    """Starts a valid answer (a bulk of 1000 bytes), then sends one byte
    every 0.3 s: each read gets something, the request never ends."""
    try:
        conn.recv(65536)
        for byte in b"$1000\r\n" + b"x" * 1000:
            conn.sendall(bytes([byte]))
            if stop.wait(0.3):
                return
    except OSError:
        return


def answering(reply: bytes) -> Behaviour:
    """A server that reads the request, sends `reply`, then nothing more."""

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        try:
            conn.recv(65536)
            conn.sendall(reply)
        except OSError:
            return
        stop.wait()

    return answer


huge = answering(b"$2147483648\r\n")  # announces a 2 GiB value
wrong_password = answering(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")

"""The remote tier: whole cache entries shared through a Redis server.

``config.cache__remote = "redis://host:port/db"`` (spoken to by
:mod:`opweave.link.c._resp`: the ``redis`` package's import alone costs more
than a remote hit). :class:`RedisStorage` implements the core's
``RemoteStorage`` (include/opweave/remote_storage.hpp): on a local miss,
before anything is compiled and under the key's lock, ``build_module`` gets
the entry stored under the module's key and publishes it through the same
verification as an export file (``ModuleCache.adopt``); the module is then a
hit. After a local build, it puts the entry (``ModuleCache.export_entry``).

Trust: an entry is a shared library that every process loading it runs.
Entries are stored signed with ``cache__remote_secret`` (HMAC-SHA256 over
the Redis key's entry key and the bytes), and a fetched entry is loaded only
when it is signed with that secret or with ``cache__remote_secret_previous``
for that very key. Without a secret the remote is not used at all (one
WARNING per process), unless ``cache__remote_trust_unsigned`` is set: then
unsigned entries are fetched and stored, and one WARNING names the risk
(anyone who can write to the server can run code in this process). With a
secret, unsigned entries (stored by an older opweave, or by a machine
without the secret) are refused: the first refusal is one WARNING that says
why, the others are logged at DEBUG.

Bounds: every request, connecting included, ends within
``cache__remote_timeout`` (1 s by default) in all; a value longer than
``cache__remote_max_entry`` (256 MiB) is refused from its length header,
unread. The remote never fails a call: a server that is down, slow or full,
an entry too large, or an entry that does not verify, is logged (one WARNING
per process for the server, one per refused entry) and the module is
compiled locally. After a connection failure or a timeout the remote is not
asked again for a minute. The URL's password is never shown (:func:`shown_url`).

Processes: a forked child (PyMC's workers, ``multiprocessing``) never uses
its parent's connection, whose requests and answers would interleave with
the parent's: it drops its copies of the clients (closing its descriptor
of each socket, which leaves the parent's connection open) and connects
anew when it needs the server.
"""

from __future__ import annotations

import functools
import time
from urllib.parse import unquote, urlsplit

from opweave import _core
from opweave._logs import get_logger
from opweave.configparser import config
from opweave.errors import CacheError
from opweave.link.c import _entry_pack, _resp
from opweave.link.c._context import CONTEXT

__all__ = ["RedisStorage", "fetch_entry", "remote_name", "shown_url", "storage", "store_entry"]

_log = get_logger("opweave")

_PURPOSE = "remote entry"
_RETRY_SECONDS = 60.0


def remote_name(key: str) -> str:
    """The Redis key of the cache entry ``key``."""
    return f"opweave:entry:{key}"


def shown_url(url: str | None = None) -> str:
    """The remote's URL (default: the configured one) as messages show it,
    without its password."""
    return _resp.redact(config.cache__remote if url is None else url)


def _scrub(text: str) -> str:
    """``text`` with the configured URL's password, wherever it appears,
    replaced by ``***`` (e.g. in an error raised by a library)."""
    url = config.cache__remote
    text = text.replace(url, shown_url(url)) if url else text
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    for secret in {password, unquote(password)} if password else ():
        if len(secret) >= 3:  # shorter ones would garble every message
            text = text.replace(secret, "***")
    return text


def _warn_once(kind: str, message: str) -> None:
    """Logs ``message`` as a WARNING the first time for ``kind`` in this
    process, then at DEBUG; the password of the URL is never shown."""
    message = _scrub(message)
    if kind not in CONTEXT.remote_warned:
        CONTEXT.remote_warned.add(kind)
        _log.warning("%s", message)
    else:
        _log.debug("%s", message)


def _client() -> _resp.RespClient | None:
    """The client of the configured remote, or None when there is none or
    it failed recently."""
    url = config.cache__remote
    if not url or time.monotonic() < CONTEXT.remote_down_until:
        return None
    settings = (url, config.cache__remote_timeout, config.cache__remote_max_entry)
    client = CONTEXT.remote_clients.get(settings)
    if client is None:
        try:
            client = _resp.RespClient(*settings)
        except ValueError as error:  # e.g. a database that is not a number
            _warn_once("server", f"not using the remote cache {shown_url()}: {error}")
            CONTEXT.remote_down_until = float("inf")
            return None
        CONTEXT.remote_clients[settings] = client
    return client


def _secrets() -> tuple[bytes, ...] | None:
    """The secrets that verify fetched entries (empty: unsigned ones are
    trusted, by the user's choice), or None when the remote must not be
    used; warns once about either choice."""
    try:
        secrets = _entry_pack.configured_secrets()
    except CacheError as error:  # an unreadable or empty secret file
        _warn_once("secret", f"not using the remote cache {shown_url()}: {error}")
        return None
    if config.cache__remote_trust_unsigned:
        _warn_once(
            "trust",
            f"cache__remote_trust_unsigned is set: unsigned entries of the remote cache "
            f"{shown_url()} are loaded, so anyone who can write to that server can run "
            "code in this process (set cache__remote_secret to sign and verify them)",
        )
    elif not secrets:
        _warn_once(
            "secret",
            f"not using the remote cache {shown_url()}: cache__remote_secret is not set, "
            "and an unsigned entry would let anyone who can write to the server run "
            "code in this process; set cache__remote_secret (the same on every machine), "
            "or cache__remote_trust_unsigned=True to accept that risk",
        )
        return None
    return secrets


def _failed(action: str, error: Exception) -> None:
    if isinstance(error, OSError):  # refused, unreachable, timed out, closed
        CONTEXT.remote_down_until = time.monotonic() + _RETRY_SECONDS
    _warn_once(
        "server",
        f"the remote cache {shown_url()} failed to {action} ({error}); "
        "compiling locally (this warning is shown once per process)",
    )


class RedisStorage(_core.RemoteStorage):
    """The remote tier on a Redis server (``config.cache__remote``), as the
    core's ``RemoteStorage``: ``_core.build_module`` calls :meth:`get` on a
    local miss, with the key's lock held, and verifies what it returns as a
    local entry; it calls :meth:`put` after it publishes a module it built.

    Threading: the core calls both with the GIL held, from the thread that
    called ``build_module``. Each request, connecting included, ends within
    ``cache__remote_timeout``, so a slow server holds the key's lock (and so
    other processes wanting that key) for at most that long. Neither raises
    for the server's faults: they are logged (see the module's docstring)."""

    def get(self, key: str) -> bytes | None:
        """The pack stored under ``key``, once its signature holds (see the
        module's docstring), else None."""
        client = _client()
        secrets = _secrets() if client is not None else None
        if client is None or secrets is None:
            return None
        try:
            data = client.get(remote_name(key))
        except _resp.RespTooLarge as error:
            _warn_once("large", f"refused an entry of the remote cache {shown_url()}: {error}")
            return None
        except Exception as error:
            _failed("answer", error)
            return None
        if data is None:
            return None
        signed = _entry_pack.is_signed(data)
        if not signed and config.cache__remote_trust_unsigned:
            return data  # the user's explicit choice, warned about once
        if not signed:
            _warn_once(
                "unsigned",
                f"refusing unsigned entries of the remote cache {shown_url()} (first: "
                f"{key[:16]}): opweave loads only entries signed with cache__remote_secret, "
                "and these were stored unsigned, by an older opweave or by a machine without "
                "the secret. Each is compiled here and stored signed in its place; set the "
                "same cache__remote_secret on every machine that stores entries",
            )
            return None
        try:
            return _entry_pack.unsign(data, secrets, _PURPOSE, key)
        except CacheError as error:
            _log.warning("refused the remote cache's entry %s: %s", key[:16], _scrub(str(error)))
            return None

    def put(self, key: str, pack: bytes) -> None:
        """Stores ``pack`` under ``key``, signed with ``cache__remote_secret``
        (unsigned only with ``cache__remote_trust_unsigned``)."""
        client = _client()
        if client is None or _secrets() is None:
            return
        try:
            secret = _entry_pack.configured_secret()
        except CacheError as error:  # an unreadable secret file
            _warn_once("secret", f"not storing entries in the remote cache: {error}")
            return
        if secret is None and not config.cache__remote_trust_unsigned:
            return  # only cache__remote_secret_previous: it verifies, never signs
        try:
            client.set(remote_name(key), _entry_pack.sign(pack, secret, _PURPOSE, key))
        except Exception as error:
            _failed("store an entry", error)


def storage() -> RedisStorage | None:
    """The remote tier to hand to ``_core.build_module``, or None when
    ``cache__remote`` is not set."""
    return _redis_storage() if config.cache__remote else None


@functools.cache
def _redis_storage() -> RedisStorage:
    return RedisStorage()  # stateless: the client and secrets follow the config


def fetch_entry(cache: _core.ModuleCache, key: str, what: str) -> bool:
    """Adopts into ``cache`` the remote tier's entry of ``key`` (``what``:
    a graph record, or the module a graph record names; the modules of a
    build come through ``build_module``), once its signature holds and
    ``ModuleCache.adopt`` verifies it; whether it did (one INFO line). A
    refusal is one WARNING, never an error."""
    remote = storage()
    pack = None if remote is None else remote.get(key)
    if pack is None:
        return False
    try:
        cache.adopt(key, pack)
    except (CacheError, ValueError) as error:
        _log.warning("refused the remote cache's entry %s: %s", key[:16], _scrub(str(error)))
        return False
    _log.info("fetched %s %s from the remote cache", what, key[:12])
    return True


def store_entry(cache: _core.ModuleCache, key: str) -> None:
    """Puts the entry of ``key`` of ``cache`` in the remote tier (signed,
    see :meth:`RedisStorage.put`); nothing when none is configured."""
    remote = storage()
    if remote is None:
        return
    pack = cache.export_entry(key)
    if pack is not None:
        remote.put(key, pack)

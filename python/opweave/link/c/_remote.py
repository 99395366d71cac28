"""The remote tier: whole cache entries shared through a Redis server.

``config.cache__remote = "redis://host:port/db"`` (spoken to by
:mod:`opweave.link.c._resp`: the ``redis`` package's import alone costs more
than a remote hit). :func:`fetch` runs on a local miss,
before anything is compiled: it gets the entry stored under the module's key
and publishes it in the local cache through the same verification as an
export file (:mod:`opweave.link.c._entry_pack`); the build that follows is
then a hit. :func:`store` runs after a local build and uploads the entry.

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
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import unquote, urlsplit

from opweave.configparser import config
from opweave.errors import CacheError, OpweaveError
from opweave.link.c import _entry_pack, _resp

__all__ = ["fetch", "fetch_on_miss", "remote_name", "shown_url", "store", "store_built"]

_log = logging.getLogger("opweave")

_PURPOSE = "remote entry"
_RETRY_SECONDS = 60.0

_clients: dict[tuple[str, float, int], _resp.RespClient] = {}
_state = {"down_until": 0.0}
_warned: set[str] = set()  # the kinds of once-per-process warnings given


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
    if kind not in _warned:
        _warned.add(kind)
        _log.warning("%s", message)
    else:
        _log.debug("%s", message)


def _client() -> _resp.RespClient | None:
    """The client of the configured remote, or None when there is none or
    it failed recently."""
    url = config.cache__remote
    if not url or time.monotonic() < _state["down_until"]:
        return None
    settings = (url, config.cache__remote_timeout, config.cache__remote_max_entry)
    client = _clients.get(settings)
    if client is None:
        try:
            client = _resp.RespClient(*settings)
        except ValueError as error:  # e.g. a database that is not a number
            _warn_once("server", f"not using the remote cache {shown_url()}: {error}")
            _state["down_until"] = float("inf")
            return None
        _clients[settings] = client
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
        _state["down_until"] = time.monotonic() + _RETRY_SECONDS
    _warn_once(
        "server",
        f"the remote cache {shown_url()} failed to {action} ({error}); "
        "compiling locally (this warning is shown once per process)",
    )


def fetch(cache: Any, key: str) -> bool:
    """Publishes the remote's entry ``key`` in ``cache``, verified. Returns
    whether it did; never raises for the remote's faults."""
    client = _client()
    secrets = _secrets() if client is not None else None
    if client is None or secrets is None:
        return False
    try:
        data = client.get(remote_name(key))
    except _resp.RespTooLarge as error:
        _warn_once("large", f"refused an entry of the remote cache {shown_url()}: {error}")
        return False
    except Exception as error:
        _failed("answer", error)
        return False
    if data is None:
        return False
    signed = _entry_pack.is_signed(data)
    if not signed and secrets:
        _warn_once(
            "unsigned",
            f"refusing unsigned entries of the remote cache {shown_url()} (first: "
            f"{key[:16]}): opweave loads only entries signed with cache__remote_secret, "
            "and these were stored unsigned, by an older opweave or by a machine without "
            "the secret. Each is compiled here and stored signed in its place; set the "
            "same cache__remote_secret on every machine that stores entries",
        )
        return False
    try:
        checked = secrets
        if not signed and config.cache__remote_trust_unsigned:
            checked = ()  # the user's explicit choice, warned about once
        body = _entry_pack.unsign(data, checked, _PURPOSE, key)
        result = _entry_pack.adopt(cache, key, body)
    except (CacheError, OpweaveError) as error:
        _log.warning("refused the remote cache's entry %s: %s", key[:16], _scrub(str(error)))
        return False
    _log.info("fetched module %s from the remote cache (%s)", key[:12], result.entry.label)
    return True


def store(entry: Any) -> None:
    """Uploads the published ``entry``, signed with ``cache__remote_secret``
    (unsigned only with ``cache__remote_trust_unsigned``); never raises for
    the remote's faults."""
    client = _client()
    if client is None or _secrets() is None:
        return
    try:
        secret = _entry_pack.configured_secret()
        if secret is None and not config.cache__remote_trust_unsigned:
            return  # only cache__remote_secret_previous: it verifies, never signs
        data = _entry_pack.sign(_entry_pack.pack(entry), secret, _PURPOSE, entry.key)
    except OSError as error:  # the entry vanished (evicted) meanwhile
        _log.debug("not storing %s remotely: %s", entry.key[:16], error)
        return
    except CacheError as error:  # an unreadable secret file
        _warn_once("secret", f"not storing entries in the remote cache: {error}")
        return
    try:
        client.set(remote_name(entry.key), data)
    except Exception as error:
        _failed("store an entry", error)


def fetch_on_miss(cache: Any, key: str) -> None:
    """On a local miss of ``key``, its entry from the remote tier, published
    in ``cache`` (verified), so that the build that follows is a hit."""
    if cache.lookup(key) is None:
        fetch(cache, key)


def store_built(cache: Any, key: str) -> None:
    """Stores the entry ``key`` that ``cache`` just built in the remote tier."""
    entry = cache.lookup(key)
    if entry is not None:  # else evicted at once (a tiny cache__max_size)
        store(entry)

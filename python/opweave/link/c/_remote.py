"""The remote tier: whole cache entries shared through a Redis server.

``config.cache__remote = "redis://host:port/db"`` (spoken to by
:mod:`opweave.link.c._resp`: the ``redis`` package's import alone costs more
than a remote hit). :func:`fetch` runs on a local miss,
before anything is compiled: it gets the entry stored under the module's key
and publishes it in the local cache through the same verification as an
export file (:mod:`opweave.link.c._entry_pack`); the build that follows is
then a hit. :func:`store` runs after a local build and uploads the entry.

Trust: an entry is a shared library that every process loading it runs.
With ``cache__remote_secret``, entries are stored signed (HMAC-SHA256 over
the key and the bytes) and a fetched entry that is not signed with that
secret is refused. Without a secret, anyone who can write to the Redis
server can run code in every process that reads from it.

The remote never fails a call: a server that is down, slow (connect and
read timeouts of ``cache__remote_timeout``, 1 s by default) or full, or an
entry that does not verify, is logged (one WARNING per process for the
server, one per refused entry) and the module is compiled locally. After a
connection failure or a timeout the remote is not asked again for a minute.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from opweave.configparser import config
from opweave.errors import CacheError, OpweaveError
from opweave.link.c import _entry_pack, _resp

__all__ = ["fetch", "remote_name", "store"]

_log = logging.getLogger("opweave")

_PURPOSE = "remote entry"
_RETRY_SECONDS = 60.0

_clients: dict[tuple[str, float], _resp.RespClient] = {}
_state = {"warned": False, "down_until": 0.0}


def remote_name(key: str) -> str:
    """The Redis key of the cache entry ``key``."""
    return f"opweave:entry:{key}"


def _client() -> _resp.RespClient | None:
    """The client of the configured remote, or None when there is none or
    it failed recently."""
    url = config.cache__remote
    if not url or time.monotonic() < _state["down_until"]:
        return None
    settings = (url, config.cache__remote_timeout)
    client = _clients.get(settings)
    if client is None:
        client = _resp.RespClient(url, config.cache__remote_timeout)
        _clients[settings] = client
    return client


def _warn_once(message: str) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        _log.warning("%s", message)
    else:
        _log.debug("%s", message)


def _failed(action: str, error: Exception) -> None:
    if isinstance(error, OSError):  # refused, unreachable, timed out, closed
        _state["down_until"] = time.monotonic() + _RETRY_SECONDS
    _warn_once(
        f"the remote cache {config.cache__remote} failed to {action} ({error}); "
        "compiling locally (this warning is shown once per process)"
    )


def fetch(cache: Any, key: str) -> bool:
    """Publishes the remote's entry ``key`` in ``cache``, verified. Returns
    whether it did; never raises for the remote's faults."""
    client = _client()
    if client is None:
        return False
    try:
        data = client.get(remote_name(key))
    except Exception as error:
        _failed("answer", error)
        return False
    if data is None:
        return False
    try:
        body = _entry_pack.unsign(data, _entry_pack.configured_secret(), _PURPOSE, key)
        result = _entry_pack.adopt(cache, key, body)
    except (CacheError, OpweaveError) as error:
        _log.warning("refused the remote cache's entry %s: %s", key[:16], error)
        return False
    _log.info("fetched module %s from the remote cache (%s)", key[:12], result.entry.label)
    return True


def store(entry: Any) -> None:
    """Uploads the published ``entry`` (signed when a secret is configured);
    never raises for the remote's faults."""
    client = _client()
    if client is None:
        return
    try:
        data = _entry_pack.sign(
            _entry_pack.pack(entry), _entry_pack.configured_secret(), _PURPOSE, entry.key
        )
    except OSError as error:  # the entry vanished (evicted) meanwhile
        _log.debug("not storing %s remotely: %s", entry.key[:16], error)
        return
    except CacheError as error:  # an unreadable secret file
        _warn_once(f"not storing entries in the remote cache: {error}")
        return
    try:
        client.set(remote_name(entry.key), data)
    except Exception as error:
        _failed("store an entry", error)

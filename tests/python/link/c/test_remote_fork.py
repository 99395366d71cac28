"""A forked child (PyMC's workers on Linux, multiprocessing's default) never
uses its parent's connection to the remote tier, whose requests and answers
would interleave with the parent's: it connects anew, and the parent's
connection keeps working (link/c/_remote.py)."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest

from opweave.link.c._context import CONTEXT

pytestmark = pytest.mark.slow  # processes that compile


def _compile_in_child(scale: float, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """A forked child: compiles a graph its parent never compiled (a remote
    miss, then a store), and reports its connection's local address."""
    from support.graph_worker import Scaled

    import opweave
    from opweave.tensor import dvector

    inherited = list(CONTEXT.remote_clients.values())
    x = dvector("x")
    f = opweave.function([x], Scaled(scale)(x))
    [client] = CONTEXT.remote_clients.values()
    queue.put(
        {
            "value": float(f(np.ones(1))[0]),
            "inherited": len(inherited),
            "address": client._sock.getsockname() if client._sock is not None else None,
        }
    )


def test_a_forked_child_never_uses_its_parents_remote_connection(redis_url: str) -> None:
    from support.graph_worker import Scaled

    import opweave
    from opweave.tensor import dvector

    flags = {"cache__remote": redis_url, "cache__remote_secret": "team"}
    with opweave.config.change_flags(**flags):
        x = dvector("x")
        assert opweave.function([x], Scaled(21)(x))(np.ones(1))[0] == 21  # a remote miss, stored
        [parent] = CONTEXT.remote_clients.values()
        assert parent._sock is not None
        mine = parent._sock.getsockname()
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        children = [
            context.Process(target=_compile_in_child, args=(22 + k, queue)) for k in range(3)
        ]
        for child in children:
            child.start()
        reports = [queue.get(timeout=300) for _ in children]
        for child in children:
            child.join(timeout=60)
            assert child.exitcode == 0
        assert sorted(r["value"] for r in reports) == [22.0, 23.0, 24.0]
        assert all(r["inherited"] == 0 for r in reports)  # the parent's clients were dropped
        addresses = [tuple(r["address"]) for r in reports]
        assert tuple(mine) not in addresses and len(set(addresses)) == 3
        assert parent._sock is not None and parent._sock.getsockname() == mine
        y = dvector("y")  # the parent's connection still works: a miss, then a store
        assert opweave.function([y], Scaled(25)(y))(np.ones(1))[0] == 25
        assert parent._sock is not None and parent._sock.getsockname() == mine

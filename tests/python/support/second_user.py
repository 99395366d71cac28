"""Tests that need root to create a second user and give it files.

Without root they cannot run, and are skipped; with
``OPWEAVE_REQUIRE_SECOND_USER=1`` in the environment (CI runs as root and sets
it, see ``.ci/run``) they fail instead, so that a CI run that lost root
cannot pass while silently leaving the trust tests out. The fixtures that
use this (``root``, ``other_user``) are in conftest.py."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from typing import NoReturn

import pytest

REQUIRE_VARIABLE = "OPWEAVE_REQUIRE_SECOND_USER"
OTHER_USER = "opweave-other"


def required() -> bool:
    """Whether the environment asks for these tests to run, not skip."""
    return os.environ.get(REQUIRE_VARIABLE, "") not in ("", "0")


def cannot_run(reason: str) -> NoReturn:
    """Skips the test, or fails it if `REQUIRE_VARIABLE` is set."""
    if required():
        pytest.fail(f"{reason}, and {REQUIRE_VARIABLE}={os.environ[REQUIRE_VARIABLE]} requires it")
    pytest.skip(reason)


def require_root(why: str) -> None:
    """Returns if this process runs as root; else `cannot_run`."""
    if os.geteuid() != 0:
        cannot_run(f"needs root ({why}); running as uid {os.geteuid()}")


def other_user_ids() -> tuple[int, int]:
    """The uid and gid of the user `OTHER_USER`, created (as a system user
    without a home or a login shell) if missing; `cannot_run` without root or
    useradd."""
    require_root("creates a second user and gives it files")
    try:
        entry = pwd.getpwnam(OTHER_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            cannot_run(f"useradd is missing: cannot create the user {OTHER_USER}")
        created = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
            capture_output=True,
            text=True,
        )
        if created.returncode != 0:
            cannot_run(f"useradd {OTHER_USER} failed: {created.stderr.strip()}")
        entry = pwd.getpwnam(OTHER_USER)
    assert entry.pw_uid != os.geteuid()
    return entry.pw_uid, entry.pw_gid

"""Sources of failed compiles (``v2/failed/``): kept to read the compiler's
errors against, at most the 20 newest and none older than 7 days after a
sweep, removed by ``clear`` and ``prune``, counted by ``opweave cache info``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import opweave
from opweave import _core
from opweave.errors import CompileError
from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.tensor import dvector

DAY = 86400.0


def keep(cache: _core.ModuleCache, count: int, age_days: float = 0.0) -> list[Path]:
    """``count`` failed sources, each ``age_days`` old (then one second apart)."""
    now = time.time()
    paths = []
    for index in range(count):
        key = f"{int(age_days * 1000) + index:016x}"
        path = Path(cache.keep_failed_source(key, f"int broken_{index} = ;\n"))
        stamp = now - age_days * DAY - index
        os.utime(path, (stamp, stamp))
        paths.append(path)
    return paths


def test_a_sweep_keeps_the_20_newest_and_none_older_than_7_days(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    recent = keep(cache, 25)  # newest first
    old = keep(cache, 2, age_days=8)
    assert cache.stats().failed_sources == 27
    cache.sweep()
    assert sorted(p for p in recent[:20]) == sorted(p for p in recent[:20] if p.exists())
    assert not any(p.exists() for p in recent[20:] + old)
    assert cache.stats().failed_sources == 20


@pytest.mark.parametrize("action", ["clear", "prune"])
def test_clear_and_prune_remove_them(tmp_path: Path, action: str) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    paths = keep(cache, 3)
    if action == "clear":
        cache.clear()
    else:
        cache.prune(older_than=10 * 365 * DAY)  # removes no entry
    assert not any(p.exists() for p in paths)
    assert cache.stats().failed_sources == 0


class Broken(COp):
    """C code that does not compile."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inputs, outputs, sub):
        return "this is not C++;"


def test_a_real_failed_compile_is_counted_by_cache_info(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    x = dvector("x")
    with opweave.config.change_flags(compiledir=str(root)), pytest.raises(CompileError):
        opweave.function([x], Broken()(x), mode="C")
    kept = list((root / "v2" / "failed").glob("*.cpp"))
    assert len(kept) == 1 and "this is not C++;" in kept[0].read_text()
    info = subprocess.run(
        [sys.executable, "-m", "opweave", "cache", "info", "--json"],
        env={**os.environ, "OPWEAVE_FLAGS": f"compiledir={root}"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(info.stdout)["failed_sources"] == 1
    subprocess.run(
        [sys.executable, "-m", "opweave", "cache", "clear"],
        env={**os.environ, "OPWEAVE_FLAGS": f"compiledir={root}"},
        capture_output=True,
        check=True,
    )
    assert list((root / "v2" / "failed").glob("*.cpp")) == []

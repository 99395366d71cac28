"""The sweep after an upgrade (cpp/cache/upgrade_sweep.hpp), through the
public API: the first process that opens a root after the key recipe
changed removes the entries of older recipes (modules, units, preludes and
graph records alike) and older layouts' directories, and keeps the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from opweave import _core

RECIPE = _core.MODULE_LAYOUT_VERSION


def plant(cache: _core.ModuleCache, key: str, material: str, kind: str = "module") -> None:
    """An entry whose key material is ``material``, as an opweave of that
    recipe would have published it."""
    cache.replace(key, {"payload": b"x" * 100}, {"kind": kind, "key_material": material})


def test_the_first_process_after_an_upgrade_removes_older_recipes(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    cache = _core.ModuleCache(str(root))
    plant(cache, "a" * 64, f"layout: module {RECIPE - 1}\ncompiler: old\n")
    plant(cache, "b" * 64, f"layout: graph {RECIPE - 1}\nrecord: x\n", kind="graph")
    plant(cache, "c" * 64, f"layout: module {RECIPE}\ncompiler: now\n")
    plant(cache, "d" * 64, "made by another tool\n", kind="tool")
    (root / "v1" / "entries" / "ab").mkdir(parents=True)
    # An opweave of the older recipe kept no marker of this one.
    (root / "v2" / "recipe").unlink(missing_ok=True)
    env = {**os.environ, "OPWEAVE_FLAGS": f"compiledir={root}"}
    out = subprocess.run(
        [sys.executable, "-m", "opweave", "cache", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert sorted(entry["key"] for entry in json.loads(out)) == ["c" * 64, "d" * 64]
    assert not (root / "v1").exists()
    assert (root / "v2" / "recipe").read_text() == f"{RECIPE} done\n"
    assert list((root / "v2" / "trash").iterdir()) == []


def test_an_up_to_date_root_is_left_as_it_is(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    cache = _core.ModuleCache(str(root))
    assert not (root / "v2").exists()  # a new root: nothing to sweep
    plant(cache, "c" * 64, f"layout: module {RECIPE}\n")
    _core.ModuleCache(str(root))
    assert (root / "v2" / "recipe").read_text() == f"{RECIPE} done\n"
    # Planted after the sweep of this recipe: not looked for again.
    plant(cache, "a" * 64, f"layout: module {RECIPE - 1}\n")
    _core.ModuleCache(str(root))
    assert [entry.key for entry in cache.list()] == ["a" * 64, "c" * 64]

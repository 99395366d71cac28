"""The command line: demo, --cmakedir and the cache commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run_cli(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if cache is not None:
        env["OPWEAVE_FLAGS"] = f"compiledir={cache}"
    return subprocess.run(
        [sys.executable, "-m", "opweave", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def demo_examples() -> list[str]:
    from opweave.demo import _EXAMPLES

    return list(_EXAMPLES)


@pytest.mark.slow
def test_demo_compiles_then_hits_from_a_fresh_process() -> None:
    result = run_cli("demo")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    fresh = lines.index(next(line for line in lines if line.startswith("a fresh process")))
    this_process, fresh_process = lines[1:fresh], lines[fresh + 1 :]
    count = len(demo_examples())
    assert count >= 5
    example_lines = [line for line in this_process if line.endswith(" ok")]
    built = all(" built " in line for line in example_lines)
    assert len(example_lines) == count and built, result.stdout + result.stderr
    hits = [line for line in fresh_process if line.endswith(" ok")]
    hit = all(" hit " in line for line in hits)
    assert len(hits) == count and hit, result.stdout + result.stderr
    assert "float32*int16 = [ 1.  6. 15.]" in result.stdout
    assert "mul(add(x, y), z)(1, 2, 3) = 9.0" in result.stdout


def test_cmakedir_holds_the_package_config() -> None:
    result = run_cli("--cmakedir")
    assert result.returncode == 0
    assert (Path(result.stdout.strip()) / "opweaveConfig.cmake").is_file()


def test_cache_commands(tmp_path: Path) -> None:
    from opweave import _core

    cache_dir = tmp_path / "cache"
    cache = _core.ModuleCache(str(cache_dir))

    def build(staging: str) -> dict[str, object]:
        (Path(staging) / "payload").write_text("x")
        return {"kind": "module", "label": "PayloadOp", "compile_seconds": 1.5}

    for name in "ab":
        cache.get_or_build(name * 16, build)
    assert cache.get_or_build("a" * 16, build).outcome == "hit"
    cache.flush_counters()
    info = run_cli("cache", "info", cache=cache_dir)
    assert info.returncode == 0 and "entries:          2 (2 module)" in info.stdout
    assert "hits:             1  misses: 2  builds: 2" in info.stdout
    assert "3.0 s spent, 1.5 s saved by hits" in info.stdout
    listing = run_cli("cache", "list", cache=cache_dir)
    rows = [line for line in listing.stdout.splitlines() if "PayloadOp" in line]
    assert len(rows) == 2 and all(" module " in row for row in rows)
    as_json = json.loads(run_cli("cache", "list", "--json", cache=cache_dir).stdout)
    assert [(e["key"], e["kind"], e["label"]) for e in as_json] == [
        ("a" * 16, "module", "PayloadOp"),
        ("b" * 16, "module", "PayloadOp"),
    ]
    pruned = run_cli("cache", "prune", "--max-size", "0", cache=cache_dir)
    assert pruned.returncode == 0 and "removed 2 entries" in pruned.stdout
    assert cache.list() == []
    cache.get_or_build("c" * 16, build)
    cleared = run_cli("cache", "clear", cache=cache_dir)
    assert "removed 1 entries" in cleared.stdout


def test_cache_error_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = run_cli("cache", "info", cache=tmp_path / "file")
    assert result.returncode == 1
    assert result.stderr.startswith("opweave: ") and "Traceback" not in result.stderr


def test_bad_size_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("cache", "prune", "--max-size", "lots", cache=tmp_path / "c")
    assert result.returncode == 2 and "not a size" in result.stderr


def test_verify_reports_bad_entries_and_repair_quarantines_them(isolated_cache: Path) -> None:
    from support.helpers import run_graph

    run_graph(isolated_cache, "vtv:1")
    run_graph(isolated_cache, "vtv:2")
    clean = run_cli("cache", "verify", cache=isolated_cache)
    assert clean.returncode == 0, clean.stdout
    assert "0 bad" in clean.stdout
    [library] = sorted(isolated_cache.glob("v2/entries/*/*/module-*.so"))[:1]
    library.write_bytes(library.read_bytes()[:100])
    bad = run_cli("cache", "verify", cache=isolated_cache)
    assert bad.returncode == 1
    assert f"BAD   {library.parent}" in bad.stdout and "has 100 bytes" in bad.stdout
    assert "--repair" in bad.stdout
    as_json = json.loads(run_cli("cache", "verify", "--json", cache=isolated_cache).stdout)
    assert [p["path"] for p in as_json["problems"]] == [str(library.parent)]
    repaired = run_cli("cache", "verify", "--repair", cache=isolated_cache)
    assert repaired.returncode == 0 and "(quarantined)" in repaired.stdout
    assert not library.parent.exists()
    assert run_cli("cache", "verify", cache=isolated_cache).returncode == 0


def test_info_and_list_describe_what_function_compiled(isolated_cache: Path) -> None:
    from support.helpers import run_graph

    run_graph(isolated_cache, "vtv:1")
    run_graph(isolated_cache, "vtv:2")  # the second module builds the prelude
    run_graph(isolated_cache, "vtv:1")
    info = run_cli("cache", "info", cache=isolated_cache).stdout
    assert "(2 graph, 2 module, 1 prelude)" in info
    # The modules and their prelude were built (graph records are no
    # builds); the third run hit the record, then the module it names.
    assert "hits:             2  misses: 3  builds: 3" in info
    listing = run_cli("cache", "list", cache=isolated_cache).stdout.splitlines()
    assert listing[0].split() == ["KEY", "KIND", "SIZE", "AGE", "IDLE", "WHAT"]
    modules = [line for line in listing if " module " in line]
    assert len(modules) == 2 and all(m.endswith("VectorTimesVector") for m in modules)
    graphs = [line for line in listing if " graph " in line]
    assert len(graphs) == 2 and all(g.endswith("VectorTimesVector") for g in graphs)
    [prelude] = [line for line in listing if " prelude " in line]
    assert "precompiled Python.h new numpy/arrayobject.h" in prelude


def test_the_console_script_is_installed_and_says_opweave() -> None:
    import shutil

    script = shutil.which("opweave")
    assert script is not None
    result = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("usage: opweave ")
    assert run_cli("--help").stdout.startswith("usage: opweave ")

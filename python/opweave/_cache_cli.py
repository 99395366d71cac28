"""``opweave cache ...``: inspecting and managing the module cache from the
command line (see :mod:`opweave.__main__`)."""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import sys
import time
from typing import Any

from opweave.configparser import parse_size

__all__ = ["add_cache_parser"]


def _format_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


def _format_age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{max(seconds, 0):.0f} s"


def _size_argument(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _entry_dict(entry: Any, now: float) -> dict[str, Any]:
    return {
        "key": entry.key,
        "kind": entry.kind,
        "label": entry.label,
        "size_bytes": entry.size_bytes,
        "age_seconds": now - entry.created,
        "idle_seconds": now - entry.last_used,
        "compile_seconds": entry.compile_seconds,
        "dir": str(entry.dir),
    }


def _info(cache: Any, as_json: bool) -> int:
    stats = cache.stats()
    counters = stats.counters
    kinds: dict[str, int] = {}
    for entry in cache.list():
        kinds[entry.kind] = kinds.get(entry.kind, 0) + 1
    limit = cache.max_total_bytes
    info = {
        "root": str(cache.root),
        "entries": stats.entries,
        "kinds": kinds,
        "total_bytes": stats.total_bytes,
        "max_total_bytes": limit,
        "builds_in_flight": stats.builds_in_flight,
        "failed_sources": stats.failed_sources,
        **{
            name: getattr(counters, name)
            for name in ("hits", "misses", "builds", "quarantines", "evictions")
        },
        "compile_seconds": counters.compile_seconds,
        "saved_seconds": counters.saved_seconds,
    }
    if as_json:
        print(json.dumps(info, indent=2))
        return 0
    what = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    print(f"root:             {info['root']}")
    print(f"entries:          {stats.entries}" + (f" ({what})" if what else ""))
    print(
        f"total size:       {_format_bytes(stats.total_bytes)}"
        + (f" (limit {_format_bytes(limit)})" if limit else " (no limit)")
    )
    print(f"builds in flight: {stats.builds_in_flight}")
    print(f"failed sources:   {stats.failed_sources} (the newest 20 of the last 7 days are kept)")
    print(
        f"hits:             {counters.hits}  misses: {counters.misses}  builds: {counters.builds}"
    )
    print(
        f"compile time:     {counters.compile_seconds:.1f} s spent, "
        f"{counters.saved_seconds:.1f} s saved by hits"
    )
    print(f"quarantined:      {counters.quarantines}  evicted: {counters.evictions}")
    return 0


def _list(cache: Any, as_json: bool) -> int:
    now = time.time()
    entries = cache.list()
    if as_json:
        print(json.dumps([_entry_dict(entry, now) for entry in entries], indent=2))
        return 0
    print(f"{'KEY':<16}  {'KIND':<8} {'SIZE':>10}  {'AGE':>8}  {'IDLE':>8}  WHAT")
    for entry in entries:
        print(
            f"{entry.key[:16]}  {entry.kind:<8} {_format_bytes(entry.size_bytes):>10}  "
            f"{_format_age(now - entry.created):>8}  {_format_age(now - entry.last_used):>8}  "
            f"{entry.label}"
        )
    return 0


def _verify(cache: Any, repair: bool, as_json: bool) -> int:
    report = cache.verify(repair=repair)
    unrepaired = [problem for problem in report.problems if not problem.repaired]
    if as_json:
        print(
            json.dumps(
                {
                    "entries_checked": report.entries_checked,
                    "problems": [
                        {"path": str(p.path), "problem": p.problem, "repaired": p.repaired}
                        for p in report.problems
                    ],
                    "stale": [{"path": str(p.path), "problem": p.problem} for p in report.stale],
                },
                indent=2,
            )
        )
        return 1 if unrepaired else 0
    for problem in report.problems:
        action = " (quarantined)" if problem.repaired else ""
        print(f"BAD   {problem.path}: {problem.problem}{action}")
    for problem in report.stale:
        print(f"STALE {problem.path}: {problem.problem} (rebuilt on next use)")
    bad = len(report.problems)
    print(
        f"checked {report.entries_checked} entries: {bad} bad"
        + (f", {bad - len(unrepaired)} quarantined" if repair else "")
        + f", {len(report.stale)} stale"
    )
    if unrepaired and not repair:
        print("run `opweave cache verify --repair` to quarantine the bad entries")
    return 1 if unrepaired else 0


def _since_argument(text: str) -> float:
    """Seconds since the epoch of an ISO date or time (2026-11-20,
    2026-11-20T08:00), or of N days ago ("7d")."""
    if text.endswith("d") and text[:-1].replace(".", "", 1).isdigit():
        return time.time() - float(text[:-1]) * 86400
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a date: {text!r} (e.g. 2026-11-20, 2026-11-20T08:00 or 7d)"
        ) from None


def _transfer(args: argparse.Namespace) -> int:
    from opweave import _cache_transfer
    from opweave.link.c.cmodule import environment_fingerprint, get_module_cache

    environment = environment_fingerprint()
    if args.action == "fingerprint":
        print(environment)
        _show_march()
        return 0
    if args.file is None:
        raise SystemExit(f"opweave cache {args.action}: name the export file")
    cache = get_module_cache()
    _show_warnings()
    if args.action == "export":
        count = _cache_transfer.export_cache(cache, args.file, environment, args.since)
        print(f"exported {count} entries of {cache.root} to {args.file} ({environment})")
        return 0
    report = _cache_transfer.import_cache(
        cache, args.file, environment, trust_unsigned=args.trust_unsigned
    )
    print(
        f"imported {report.imported} entries into {cache.root}; {report.present} were there "
        f"already; skipped {report.other_environment} of another environment; "
        f"refused {len(report.refused)}"
    )
    for line in report.refused:
        print(f"opweave: refused {line}", file=sys.stderr)
    return 1 if report.refused else 0


def _show_march() -> None:
    """With ``cmodule__march`` set, the machine flags modules are built with
    (part of their keys), on stderr, so that stdout stays the fingerprint."""
    from opweave.configparser import config
    from opweave.link.c._march import march_flags
    from opweave.link.c.cmodule import get_compiler

    if config.cmodule__march:
        flags = " ".join(march_flags(get_compiler()))
        print(f"cmodule__march={config.cmodule__march}: {flags}", file=sys.stderr)


def _show_warnings() -> None:
    """Shows the library's warnings (such as the one of --trust-unsigned) on
    stderr as ``opweave: WARNING: ...``, unless logging is set up already."""
    log = logging.getLogger("opweave")
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("opweave: %(levelname)s: %(message)s"))
        handler.setLevel(logging.WARNING)
        log.addHandler(handler)


def _graph_records(cache: Any, keep_live: bool) -> str:
    """Sweeps the graph index of ``cache`` (every record, or with
    ``keep_live`` those whose module is still in the cache); the count, as
    the end of a message."""
    from pathlib import Path

    from opweave.link.c import _graph_index

    if cache.read_only:
        return ""
    live = (lambda key: Path(cache.entry_dir(key)).is_dir()) if keep_live else None
    return f", and {_graph_index.sweep(cache, live)} graph records"


def _run(args: argparse.Namespace) -> int:
    from opweave.link.c.cmodule import get_module_cache

    if args.action in ("export", "import", "fingerprint"):
        return _transfer(args)
    cache = get_module_cache()
    if args.action == "info":
        return _info(cache, args.json)
    if args.action == "list":
        return _list(cache, args.json)
    if args.action == "verify":
        return _verify(cache, args.repair, args.json)
    if args.action == "clear":
        records = _graph_records(cache, keep_live=False)
        removed = cache.clear()
        print(f"removed {removed} entries from {cache.root}{records}")
    elif args.action == "prune":
        older_than = args.older_than * 86400 if args.older_than is not None else None
        result = cache.prune(max_total_bytes=args.max_size, older_than=older_than)
        freed = _format_bytes(result.freed_bytes)
        print(f"removed {result.removed} entries, freed {freed}{_graph_records(cache, True)}")
    elif args.action == "sweep":
        print(f"removed {cache.sweep()} leftovers of interrupted builds")
    return 0


def add_cache_parser(commands: Any) -> None:
    """Adds the ``cache`` command to an argparse subparsers object."""
    cache = commands.add_parser(
        "cache",
        help="inspect and manage the module cache",
        description="info: what the cache holds, and its hit/build statistics; "
        "list: one line per entry (kind, size, age, what it is); "
        "verify: check every entry's files, hashes, owners and modes; "
        "clear, prune, sweep: remove entries or leftovers; "
        "export FILE, import FILE: move entries between machines (CI caches); "
        "fingerprint: a short name of this environment, for CI cache keys.",
    )
    cache.add_argument(
        "action",
        choices=[
            "info",
            "list",
            "verify",
            "clear",
            "prune",
            "sweep",
            "export",
            "import",
            "fingerprint",
        ],
    )
    cache.add_argument("file", nargs="?", help="export, import: the export file")
    cache.add_argument(
        "--since",
        type=_since_argument,
        metavar="DATE",
        help="export: only entries used since then (2026-11-20, 2026-11-20T08:00, or 7d)",
    )
    cache.add_argument(
        "--trust-unsigned",
        action="store_true",
        help="import: accept a file that is not signed with cache__remote_secret; its "
        "modules run their code when loaded, so only for files from someone you trust",
    )
    cache.add_argument("--repair", action="store_true", help="verify: quarantine every bad entry")
    cache.add_argument("--json", action="store_true", help="info, list, verify: print JSON")
    cache.add_argument(
        "--max-size",
        type=_size_argument,
        help="prune: keep at most this much (e.g. 500M, 2G), "
        "dropping the least recently used first",
    )
    cache.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="prune: remove entries unused for this many days",
    )
    cache.set_defaults(handler=_run)

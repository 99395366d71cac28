"""The ``opweave`` command line: ``python -m opweave demo | cache ... | --cmakedir``."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence

__all__ = ["main"]


def _format_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


def _parse_size(text: str) -> int:
    units = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    suffix = text[-1:] if text[-1:] in "KMG" else ""
    number = text[: len(text) - len(suffix)]
    try:
        value = float(number) * units[suffix]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 500M, 2G)") from None
    if value < 0:
        raise argparse.ArgumentTypeError("a size cannot be negative")
    return int(value)


def _print_runs(title: str, runs: list) -> None:
    print(title)
    for run in runs:
        mark = "ok" if run.ok else "WRONG"
        print(f"  {run.name:<40} {run.outcome:<14} {run.seconds * 1000:8.1f} ms  {mark}")
        print(f"      {run.shown}")


def _cmd_demo(args: argparse.Namespace) -> int:
    from opweave.demo import run_demo

    with tempfile.TemporaryDirectory(prefix="opweave-demo-") as scratch:
        cache_dir = args.cache_dir or scratch
        print(f"opweave demo: the seed tutorials' ops, compiled; module cache at {cache_dir}")
        first, second, import_seconds = run_demo(cache_dir)
    _print_runs("this process (opweave.function: compile or cache hit):", first)
    _print_runs(
        f"a fresh process (import opweave + NumPy: {import_seconds * 1000:.1f} ms):", second
    )
    if not all(run.ok for run in first + second):
        print("demo FAILED: a result differs from the expected values", file=sys.stderr)
        return 1
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    from opweave.link.c.cmodule import get_module_cache

    cache = get_module_cache()
    if args.action == "info":
        stats = cache.stats()
        print(f"root:             {stats['root']}")
        print(f"entries:          {stats['entries']}")
        print(f"total size:       {_format_bytes(stats['total_bytes'])}")
        print(f"builds in flight: {stats['builds_in_flight']}")
    elif args.action == "list":
        now = time.time()
        for entry in cache.list():
            idle_days = (now - entry["last_used"]) / 86400
            print(
                f"{entry['key'][:16]}  {_format_bytes(entry['size_bytes']):>10}  "
                f"compiled in {entry['compile_seconds']:6.2f} s  "
                f"last used {idle_days:5.1f} days ago"
            )
    elif args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.root}")
    elif args.action == "prune":
        older_than = args.older_than * 86400 if args.older_than is not None else None
        result = cache.prune(max_total_bytes=args.max_size, older_than=older_than)
        print(f"removed {result['removed']} entries, freed {_format_bytes(result['freed_bytes'])}")
    elif args.action == "sweep":
        print(f"removed {cache.sweep()} leftovers of interrupted builds")
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m opweave",
        description="opweave: compile the C code of graph Ops into cached modules.",
    )
    parser.add_argument(
        "--cmakedir",
        action="store_true",
        help="print the directory to pass as opweave_DIR to CMake",
    )
    parser.add_argument(
        "--include",
        action="store_true",
        help="print the include directory of opweave's C++ headers",
    )
    parser.add_argument("--version", action="store_true", help="print opweave's version")
    commands = parser.add_subparsers(dest="command")

    demo = commands.add_parser(
        "demo", help="compile the seed examples, then hit the cache from a new process"
    )
    demo.add_argument("--cache-dir", help="cache to use (default: a fresh temporary one)")
    demo.set_defaults(handler=_cmd_demo)

    cache = commands.add_parser("cache", help="inspect and manage the module cache")
    cache.add_argument("action", choices=["info", "list", "clear", "prune", "sweep"])
    cache.add_argument(
        "--max-size",
        type=_parse_size,
        help="prune: keep at most this much (e.g. 500M, 2G), "
        "dropping the least recently used first",
    )
    cache.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="prune: remove entries unused for this many days",
    )
    cache.set_defaults(handler=_cmd_cache)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.cmakedir or args.include or args.version:
        import opweave

        if args.version:
            print(opweave.__version__)
        if args.cmakedir:
            print(opweave.get_cmake_dir())
        if args.include:
            print(opweave.get_include())
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    from opweave.errors import OpweaveError

    try:
        return args.handler(args)
    except OpweaveError as error:
        print(f"opweave: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""The ``opweave`` command line (also ``python -m opweave``): ``demo``,
``cache info|list|verify|clear|prune|sweep``, ``sanitize-env``,
``--cmakedir``, ``--include``."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence

from opweave._cache_cli import add_cache_parser

__all__ = ["main"]


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


def _cmd_sanitize_env(args: argparse.Namespace) -> int:
    import shlex

    from opweave.link.c.sanitize import sanitizer_environment

    try:
        env = sanitizer_environment(args.sanitize)
    except ValueError as error:
        print(f"opweave: {error}", file=sys.stderr)
        return 2
    for name, value in env.items():
        print(f"export {name}={shlex.quote(value)}")
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="opweave",
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

    sanitize = commands.add_parser(
        "sanitize-env",
        help="print the environment to run Python with sanitized modules",
        description="Prints `export` lines for a POSIX shell: OPWEAVE_FLAGS asking for "
        "sanitized modules and, for AddressSanitizer, the runtime to preload. Use: "
        'eval "$(python -m opweave sanitize-env)"; python your_script.py',
    )
    sanitize.add_argument(
        "--sanitize",
        default=None,
        help="address, undefined or address,undefined (default: cmodule__sanitize, else address)",
    )
    sanitize.set_defaults(handler=_cmd_sanitize_env)

    add_cache_parser(commands)
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

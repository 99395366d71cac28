"""Compiler options as groups of words, for de-duplication and removal.

Ops and types each give their compile flags (``c_compile_args``), and the
linker drops repeated ones and those named in ``c_no_compile_args``. An
option that takes its argument as the next word (``--param a=1``,
``-Xlinker x``, ``-include f``, ``-D X``) must be kept with that argument,
or de-duplicating word by word would turn ``--param a=1 --param b=2`` into
``--param a=1 b=2``. :func:`group_flags` cuts a list of words into such
groups, :func:`uniq_flags` de-duplicates whole groups and
:func:`remove_flags` drops whole groups; both return flat lists.

A pass-through option (``-Xlinker``, ``-Xclang``, ...) whose argument is
itself an option followed by another pass-through of a plain word (``-Xlinker
-rpath -Xlinker /dir``) is one group of four words: the tool it passes to
reads the two as one option.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["TAKES_ARGUMENT", "group_flags", "remove_flags", "uniq_flags"]

# GCC's and Clang's options whose argument may be the next word.
TAKES_ARGUMENT = frozenset(
    {
        "-o", "-x", "-D", "-U", "-I", "-L", "-l", "-u", "-T", "-z", "-e", "-A",
        "-include", "-imacros", "-isystem", "-idirafter", "-iquote", "-iprefix",
        "-iwithprefix", "-iwithprefixbefore", "-isysroot", "-imultilib", "-iframework",
        "-MF", "-MT", "-MQ", "-aux-info", "-dumpbase", "-dumpdir", "-wrapper",
        "--param", "-arch", "-target", "--target", "-framework", "-F", "-B",
        "-specs", "--sysroot", "-gcc-toolchain", "--gcc-toolchain", "-mllvm",
        "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang", "-Xanalyzer",
        "-Xopenmp-target", "-Xarch_host", "-Xarch_device", "-Xcuda-fatbinary",
        "-Xcuda-ptxas", "-Xoffload-linker",
    }
)  # fmt: skip

# Options whose argument goes to another tool, which may itself read two
# words as one option.
_PASS_THROUGH = frozenset(
    {"-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang", "-Xanalyzer", "-mllvm"}
)


def group_flags(flags: Iterable[str]) -> list[tuple[str, ...]]:
    """``flags`` cut into groups: an option that takes a separate argument
    with that argument, anything else alone."""
    words = list(flags)
    groups: list[tuple[str, ...]] = []
    i = 0
    while i < len(words):
        if words[i] in TAKES_ARGUMENT and i + 1 < len(words):
            group: tuple[str, ...] = (words[i], words[i + 1])
            i += 2
            tool = group[0]
            while (
                tool in _PASS_THROUGH
                and group[-1].startswith("-")
                and i + 1 < len(words)
                and words[i] == tool
                and not words[i + 1].startswith("-")
            ):  # -Xlinker -rpath -Xlinker /dir: one option of the linker
                group += (words[i], words[i + 1])
                i += 2
            groups.append(group)
        else:
            groups.append((words[i],))
            i += 1
    return groups


def _flatten(groups: Iterable[Sequence[str]]) -> list[str]:
    return [word for group in groups for word in group]


def uniq_flags(flags: Iterable[str]) -> list[str]:
    """``flags`` without repeated groups (the first of each is kept, in
    order)."""
    return _flatten(dict.fromkeys(group_flags(flags)))


def remove_flags(flags: Iterable[str], removed: Iterable[str]) -> list[str]:
    """``flags`` without the groups that ``removed`` (a list of words, cut
    into groups the same way) names."""
    dropped = set(group_flags(removed))
    return _flatten(g for g in group_flags(flags) if g not in dropped)

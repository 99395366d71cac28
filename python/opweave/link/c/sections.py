"""C files split into ``#section <tag>`` blocks, and the macros wrapped
around them: the file side of :class:`opweave.link.c.op.ExternalCOp`.

A file looks like::

    #section support_code
    static int helper(void) { return 1; }

    #section support_code_apply
    int APPLY_SPECIFIC(run)(PyArrayObject* x, PyArrayObject** z) { ... }

Each section keeps the file and line it came from: its text starts with a
``#line`` directive, so compiler messages name the user's file, and the
module assembler restores its own numbering after it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from opweave._namedtuple import NamedTuple
from opweave._sha256 import sha256_hex

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "SECTION_TAGS",
    "Section",
    "apply_macros",
    "io_macros",
    "local_includes",
    "parse_sections",
    "read_files",
    "sub_macros",
    "version_of",
    "wrap",
]

SECTION_TAGS = (
    "support_code",
    "support_code_apply",
    "support_code_struct",
    "init_code",
    "init_code_apply",
    "init_code_struct",
    "cleanup_code_struct",
    "code",
    "code_cleanup",
)

_MARKER = re.compile(r"^[ \t]*#[ \t]*section\b[ \t]*(\S*)[ \t]*(\S*)")


class Section(NamedTuple):
    """The text of one ``#section`` block, and where it starts."""

    tag: str
    text: str
    file: str
    line: int  # the line of the block's first line of code

    def located(self) -> str:
        """The text, preceded by a ``#line`` directive naming its file."""
        name = self.file.replace("\\", "\\\\").replace('"', '\\"')
        text = self.text if self.text.endswith("\n") or not self.text else self.text + "\n"
        return f'#line {self.line} "{name}"\n{text}'


def parse_sections(text: str, file: str) -> list[Section]:
    """Splits the contents of one C file into its sections, in file order.

    Raises ValueError, naming the file and line, for code before the first
    ``#section``, an unknown or missing tag, or a file with no sections.
    """
    sections: list[Section] = []
    tag: str | None = None
    start = 0
    body: list[str] = []
    # Lines end at "\n" only, as the compiler counts them (str.splitlines
    # would also split at form feeds and other separators).
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    for number, line in enumerate(lines, start=1):
        marker = _MARKER.match(line)
        if marker is None:
            if tag is None and line.strip():
                raise ValueError(
                    f"{file}:{number}: code before the first '#section' line; "
                    f"every line of an ExternalCOp file belongs to a section "
                    f"({', '.join(SECTION_TAGS)})"
                )
            body.append(line)
            continue
        if tag is not None:
            sections.append(Section(tag, "".join(body), file, start))
        tag, extra = marker.group(1), marker.group(2)
        if tag not in SECTION_TAGS or extra:
            shown = f"{tag} {extra}".strip()
            raise ValueError(
                f"{file}:{number}: unknown section tag {shown!r}; "
                f"expected one of {', '.join(SECTION_TAGS)}"
            )
        start, body = number + 1, []
    if tag is None:
        raise ValueError(f"{file}: no '#section <tag>' line; nothing to compile")
    sections.append(Section(tag, "".join(body), file, start))
    return sections


_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def local_includes(paths: list[Path]) -> list[tuple[str, str]]:
    """``(path, sha256)`` of every file that ``paths`` include with
    ``#include "..."`` and that exists next to the including file or in the
    folder of one of ``paths``, followed recursively. Their contents enter
    the op's version, so editing a header next to the ``.c`` file
    recompiles too."""
    folders = list(dict.fromkeys(p.parent for p in paths))
    found: dict[Path, str] = {}
    pending = list(paths)
    while pending:
        text = _read_quietly(pending.pop())
        for name in _QUOTED_INCLUDE.findall(text):
            for folder in folders:
                candidate = (folder / name).resolve()
                if candidate not in found and candidate.is_file():
                    content = _read_quietly(candidate)
                    found[candidate] = sha256_hex(content.encode("utf-8"))
                    pending.append(candidate)
                    break
    return sorted((str(path), digest) for path, digest in found.items())


def _read_quietly(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def version_of(codes: list[str]) -> str:
    """A version string for the contents of an op's C files."""
    digest = sha256_hex("\n".join(codes).encode("utf-8"))
    return "m" + digest


def _defines(macros: list[tuple[str, str]]) -> tuple[str, str]:
    """``#define`` lines for (name, value) pairs, and the matching
    ``#undef`` lines."""
    continued = " \\\n"
    define = "".join(
        f"#define {name} {continued.join(value.splitlines())}\n" for name, value in macros
    )
    undef = "".join(f"#undef {name.split('(')[0]}\n" for name, _ in reversed(macros))
    return define, undef


def _dtype_macros(kind: str, index: int, variable: Any) -> list[tuple[str, str]]:
    dtype = getattr(variable.type, "dtype", None)
    if not isinstance(dtype, str):
        return []
    try:
        info = np.dtype(dtype)
    except TypeError:
        return []
    return [
        (f"DTYPE_{kind}_{index}", f"npy_{dtype}"),
        (f"TYPENUM_{kind}_{index}", str(info.num)),
        (f"ITEMSIZE_{kind}_{index}", str(info.itemsize)),
    ]


def apply_macros(op: Any, node: Any, name: str, check_input: bool) -> list[tuple[str, str]]:
    """``APPLY_SPECIFIC``, the dtype macros of the node's inputs and outputs
    (when ``check_input``) and the params-type macros."""
    macros = [("APPLY_SPECIFIC(str)", f"str##_{name}")]
    if check_input:
        for index, variable in enumerate(node.inputs):
            macros.extend(_dtype_macros("INPUT", index, variable))
        for index, variable in enumerate(node.outputs):
            macros.extend(_dtype_macros("OUTPUT", index, variable))
    params_type = getattr(op, "params_type", None)
    struct_name = getattr(params_type, "name", None)
    fields = getattr(params_type, "fields", None)
    types = getattr(params_type, "types", None)
    if isinstance(struct_name, str) and fields is not None and types is not None:
        macros.append(("PARAMS_TYPE", struct_name))
        for field, field_type in zip(fields, types, strict=True):
            element = getattr(field_type, "c_element_type", None)
            element = element() if callable(element) else ""
            if element:
                macros.append((f"DTYPE_PARAM_{field}", element))
    return macros


def sub_macros(sub: dict[str, str]) -> list[tuple[str, str]]:
    """``FAIL``, and ``PARAMS`` when the node has params."""
    macros = [("FAIL", sub["fail"])]
    if "params" in sub:
        macros.append(("PARAMS", sub["params"]))
    return macros


def io_macros(inputs: list[str], outputs: list[str]) -> list[tuple[str, str]]:
    """``INPUT_<i>`` and ``OUTPUT_<i>``: the C names of the node's variables."""
    return [(f"INPUT_{i}", name) for i, name in enumerate(inputs)] + [
        (f"OUTPUT_{i}", name) for i, name in enumerate(outputs)
    ]


def wrap(code: str, macros: list[tuple[str, str]]) -> str:
    """``code`` between the ``#define``s of ``macros`` and their ``#undef``s."""
    if not code:
        return ""
    define, undef = _defines(macros)
    if not code.endswith("\n"):
        code += "\n"
    return define + code + undef


def read_files(paths: list[Path], owner: str) -> tuple[list[str], list[Section]]:
    """The contents of an op's C files and their sections, in order."""
    codes: list[str] = []
    sections: list[Section] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise OSError(f"{owner}: cannot read its C file {path}: {error.strerror}") from error
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{owner}: its C file {path} is not UTF-8 text (byte {error.start}: {error.reason})"
            ) from error
        codes.append(text)
        sections.extend(parse_sections(text, str(path)))
    return codes, sections

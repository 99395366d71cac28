"""config.cmodule__linker: which linker links generated modules."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from tests.python.link.c.test_basic import Scale

import opweave
from opweave.compile.function import function
from opweave.link.c import _linker
from opweave.link.c.cmodule import get_compiler, get_module_cache
from opweave.link.c.sanitize import is_clang
from opweave.tensor import dvector


def _module_commands() -> list[str]:
    return [e.command for e in get_module_cache().list() if e.kind == "module"]


def _gcc() -> bool:
    return not is_clang(get_compiler())


def test_auto_links_with_gold_when_gcc_finds_it() -> None:
    x = dvector("x")
    f = function([x], Scale()(x))
    np.testing.assert_array_equal(f(np.arange(3.0)), [0.0, 2.0, 4.0])
    [command] = _module_commands()
    expected = _gcc() and shutil.which("ld.gold") is not None
    assert ("-fuse-ld=gold" in command.split()) == expected


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"cmodule__linker": "default"}, []),
        ({"cmodule__linker": "bfd"}, ["-fuse-ld=bfd"]),
        ({"gcc__cxxflags": "-fuse-ld=bfd"}, ["-fuse-ld=bfd"]),  # the user's flag wins
    ],
)
def test_configured_linker_reaches_the_compiler(flags: dict[str, str], expected: list[str]) -> None:
    x = dvector("x")
    with opweave.config.change_flags(**flags):
        f = function([x], Scale()(x))
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
    [command] = _module_commands()
    assert [w for w in command.split() if w.startswith("-fuse-ld=")] == expected


def test_auto_does_not_choose_gold_for_clang_or_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    clang = SimpleNamespace(identity={"version": "Debian clang version 14.0.6"})
    gcc = SimpleNamespace(identity={"version": "g++ (Debian 12.2.0-14) 12.2.0"})
    monkeypatch.setattr(_linker, "_have", lambda program: True)
    assert _linker.linker_flags(clang, []) == []
    assert _linker.linker_flags(gcc, []) == ["-fuse-ld=gold"]
    assert _linker.linker_flags(gcc, ["-fuse-ld=lld"]) == []
    monkeypatch.setattr(_linker, "_have", lambda program: False)
    assert _linker.linker_flags(gcc, []) == []


@pytest.mark.parametrize("value", ["gold; rm -rf /", "-fuse-ld=gold", "a b"])
def test_a_bad_linker_name_is_rejected(value: str) -> None:
    with pytest.raises(ValueError, match="linker name"):
        opweave.config.cmodule__linker = value
    assert opweave.config.cmodule__linker == "auto"

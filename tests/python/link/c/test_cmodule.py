"""Compiling and loading extension modules through the cache
(opweave.link.c.cmodule), including healing a damaged entry."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.dot_module import DEMO_MODULE_NAME, DEMO_SOURCE, run_in_fresh_process

import opweave
from opweave.link.c import cmodule


def load_in_fresh_process(cache: Path) -> dict[str, object]:
    """Outcome and result of the demo module, loaded by a new Python process."""
    run, _ = run_in_fresh_process(str(cache))
    return {"outcome": run.outcome, "result": run.result}


def test_compile_then_hit(isolated_cache: Path) -> None:
    first = cmodule.compile_extension(DEMO_SOURCE, DEMO_MODULE_NAME)
    assert first.outcome == "built"
    assert first.module.dot([1.0, 2.0], [3.0, 4.0]) == 11.0
    assert first.library.parent.parent.parent == isolated_cache / "v2" / "entries"
    assert first.library.name.startswith("module-") and first.library.suffix == ".so"
    assert load_in_fresh_process(isolated_cache) == {"outcome": "hit", "result": 32.0}


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_damaged_entry_is_rebuilt_not_raised(isolated_cache: Path, damage: str) -> None:
    # Built by another process, so that this one never maps the file (damaging
    # a loaded shared object in place would crash its user, which is why the
    # cache never rewrites one).
    assert load_in_fresh_process(isolated_cache) == {"outcome": "built", "result": 32.0}
    [library] = (isolated_cache / "v2" / "entries").glob("*/*/module-*.so")
    if damage == "truncate":
        library.write_bytes(b"")  # what a crash before the data reached disk leaves
    else:
        library.write_bytes(b"\x7fELF garbage" * 100)
    assert load_in_fresh_process(isolated_cache) == {"outcome": "built", "result": 32.0}
    [rebuilt] = (isolated_cache / "v2" / "entries").glob("*/*/module-*.so")
    assert rebuilt.stat().st_size > 1000  # replaced by a good build
    assert load_in_fresh_process(isolated_cache) == {"outcome": "hit", "result": 32.0}


def test_no_compiler_is_a_clear_error() -> None:
    with (
        opweave.config.change_flags(cxx=""),
        pytest.raises(opweave.OpweaveError, match="no C\\+\\+ compiler found"),
    ):
        cmodule.get_compiler()


def test_python_abi_key_names_this_interpreter() -> None:
    key = cmodule.python_abi_key()
    assert sys.implementation.cache_tag in key
    assert f"{sys.hexversion:x}" in key

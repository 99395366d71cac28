"""Compiling and loading extension modules through the cache
(opweave.link.c.cmodule), including healing a damaged entry."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from support.dot_module import DEMO_MODULE_NAME, DEMO_SOURCE, run_in_fresh_process

import opweave
import opweave.configparser
from opweave import _core
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


def test_each_compile_is_logged_at_info_with_key_ops_and_seconds(
    isolated_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from opweave.examples.vector_times_vector import VectorTimesVector

    caplog.set_level(logging.INFO, logger="opweave")
    x, y = opweave.tensor.dvector("x"), opweave.tensor.dvector("y")
    f = opweave.function([x, y], VectorTimesVector()(VectorTimesVector()(x, y), y))
    [record] = [r for r in caplog.records if r.getMessage().startswith("compiled module")]
    assert record.name == "opweave" and record.levelno == logging.INFO
    key = Path(f.library).parent.name
    assert re.fullmatch(
        rf"compiled module {key[:12]} \(VectorTimesVector\) in \d+\.\d\d s", record.getMessage()
    )
    caplog.clear()
    opweave.function([x, y], VectorTimesVector()(VectorTimesVector()(x, y), y))
    assert not [r for r in caplog.records if r.getMessage().startswith("compiled module")]


def test_the_configured_size_limit_evicts_the_least_recently_used(isolated_cache: Path) -> None:
    from opweave.examples.vector_times_vector import VectorTimesVector

    x, y = opweave.tensor.dvector("x"), opweave.tensor.dvector("y")

    def chain(nodes: int) -> Any:
        out = x
        for _ in range(nodes):
            out = VectorTimesVector()(out, y)
        return opweave.function([x, y], out)

    with opweave.config.change_flags(cmodule__precompiled_header=False):
        first = chain(1)
        # A graph's module and its graph record (an entry too).
        size = sum(p.stat().st_size for p in isolated_cache.glob("v2/entries/*/*/*"))
        assert size > sum(p.stat().st_size for p in Path(first.library).parent.iterdir())
        with opweave.config.change_flags(cache__max_size=str(int(size * 2.5))):
            libraries = [first.library] + [chain(n).library for n in (2, 3, 4)]
            kept = {str(p) for p in isolated_cache.glob("v2/entries/*/*/module-*.so")}
    assert kept == set(libraries[-2:])  # the two most recently built
    cache = cmodule.get_module_cache()
    assert cache.stats().total_bytes <= size * 2.5


def test_sizes_in_the_configuration() -> None:
    config = opweave.configparser.OpweaveConfig("cache__max_size=2G")
    assert config.cache__max_size == 2 * 1024**3
    assert opweave.configparser.OpweaveConfig("cache__max_size=1.5MiB").cache__max_size == int(
        1.5 * 1024**2
    )
    assert opweave.configparser.OpweaveConfig("").cache__max_size == 5 * 1024**3  # the default
    for none in ("none", "0", ""):
        assert opweave.configparser.OpweaveConfig(f"cache__max_size={none}").cache__max_size is None
    with pytest.warns(UserWarning, match="cache__max_size: not a size"):
        found = opweave.configparser.OpweaveConfig("cache__max_size=lots").cache__max_size
    assert found == 5 * 1024**3


def test_an_entry_records_the_text_of_its_key_and_cmodule_key_names_it() -> None:
    """The key an entry is filed under and the text of what it covers come
    from one pass over the same fields (KeyHasher), and CLinker.cmodule_key
    gives that key."""
    from opweave.examples.vector_times_vector import VectorTimesVector

    from opweave.graph.fg import FunctionGraph
    from opweave.link.c.basic import CLinker
    from opweave.tensor import dvector

    x, y = dvector("x"), dvector("y")
    linker = CLinker().accept(FunctionGraph([x, y], [VectorTimesVector()(x, y)]))
    compiled = linker.compile()
    key = Path(compiled.library).parent.name
    assert linker.cmodule_key()[1] == key
    entry = cmodule.get_module_cache().lookup(key)
    assert entry is not None
    lines = entry.key_material.splitlines()
    assert lines[0] == f"layout: module {_core.MODULE_LAYOUT_VERSION}"
    names = [line.split(":")[0] for line in lines if not line.startswith("  ")]
    expected = ["layout", "compiler", "flags", "include_dirs", "lib_dirs", "libraries"]
    assert names == [*expected, "opt_level", "debug_info", "extra", "source"]
    assert re.fullmatch(r"source: <\d+ bytes>", lines[-1])
    assert any(line.startswith("flags: ") and "-fno-math-errno" in line for line in lines)

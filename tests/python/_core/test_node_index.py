"""The node index through the bindings: ModuleRequest.exports recorded by a
real build, ModuleCache.find_export, Entry.exports, and what evict and
verify do to the index (the details are in
tests/cpp/test_cache_node_index.cpp)."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import pytest
from support.helpers import module_request

from opweave import _core

NODE_1 = "1" * 64
NODE_2 = "2" * 63 + "f"
SOURCE = (
    'extern "C" __attribute__((visibility("default"))) int node_1() { return 1; }\n'
    'extern "C" __attribute__((visibility("default"))) int node_2() { return 2; }\n'
)


def index_file(cache: _core.ModuleCache, node: str) -> Path:
    return Path(cache.root) / "v2" / "nodes" / node[:2] / node


def test_a_built_module_is_found_by_its_exports(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    compiler = _core.SystemCompiler()
    request = module_request(SOURCE)
    request.exports = [NODE_1, NODE_2]
    assert request.exports == [NODE_1, NODE_2]
    built = _core.build_module(cache, compiler, request)
    assert built.outcome == "built"
    # Not part of the key.
    assert built.key == _core.request_key(compiler, module_request(SOURCE))
    meta = json.loads((Path(built.dir) / "meta.json").read_text())
    assert meta["exports"] == [NODE_1, NODE_2]
    assert index_file(cache, NODE_1).read_text() == built.key + "\n"

    found = cache.find_export(NODE_2)
    assert found is not None
    assert (found.key, found.exports) == (built.key, [NODE_1, NODE_2])
    library = ctypes.CDLL(str(found.file_ending(".so")))
    assert library.node_2() == 2
    assert cache.lookup(built.key).exports == [NODE_1, NODE_2]
    assert cache.find_export("3" * 64) is None


def test_bad_keys_raise_value_error(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))
    with pytest.raises(ValueError):
        cache.find_export("../x")
    request = module_request(SOURCE)
    request.exports = ["not a key"]
    with pytest.raises(ValueError):
        _core.build_module(cache, _core.SystemCompiler(), request)
    assert cache.list() == []


def test_get_or_build_exports_evict_and_verify(tmp_path: Path) -> None:
    cache = _core.ModuleCache(str(tmp_path / "cache"))

    def build(staging: str) -> dict[str, object]:
        (Path(staging) / "payload").write_bytes(b"x")
        return {"kind": "test", "exports": [NODE_1]}

    result = cache.get_or_build("a" * 16, build)
    assert result.entry.exports == [NODE_1]
    assert cache.find_export(NODE_1).key == "a" * 16
    assert cache.verify().problems == []

    # An index file naming an entry that does not export the node: verify
    # reports it, find_export misses and removes it.
    def build_plain(staging: str) -> None:
        (Path(staging) / "payload").write_bytes(b"y")

    cache.get_or_build("b" * 16, build_plain)
    index_file(cache, NODE_1).write_text("b" * 16 + "\n")
    [problem] = cache.verify().problems
    assert "does not export it" in problem.problem and not problem.repaired
    assert cache.find_export(NODE_1) is None
    assert not index_file(cache, NODE_1).exists()

    # A hit writes it again; evict removes it with the entry.
    assert cache.get_or_build("a" * 16, build).outcome == "hit"
    assert cache.find_export(NODE_1) is not None
    assert cache.evict("a" * 16)
    assert not index_file(cache, NODE_1).exists()
    assert cache.find_export(NODE_1) is None

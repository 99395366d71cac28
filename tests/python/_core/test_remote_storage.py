"""The remote tier behind the core: build_module with a RemoteStorage
implemented in Python (opweave's Redis client is one, tested in
tests/python/link/c/test_remote_hostile.py), and the packs that
ModuleCache.export_entry and ModuleCache.adopt exchange."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
from support.helpers import module_request

from opweave import _core
from opweave.errors import CacheError

SOURCE = 'extern "C" __attribute__((visibility("default"))) int answer() { return 42; }\n'


class DictStorage(_core.RemoteStorage):
    """A storage in a dict, counting its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.packs: dict[str, bytes] = {}
        self.gets: list[str] = []
        self.puts: list[str] = []

    def get(self, key: str) -> bytes | None:
        self.gets.append(key)
        return self.packs.get(key)

    def put(self, key: str, pack: bytes) -> None:
        self.puts.append(key)
        self.packs[key] = pack


def build(root: Path, remote: _core.RemoteStorage | None) -> _core.BuiltModule:
    cache = _core.ModuleCache(str(root))
    return _core.build_module(cache, _core.SystemCompiler(), module_request(SOURCE), None, remote)


def test_a_built_module_is_put_and_another_cache_fetches_it(tmp_path: Path) -> None:
    storage = DictStorage()
    built = build(tmp_path / "a", storage)
    assert built.outcome == "built"
    assert storage.gets == [built.key] and storage.puts == [built.key]

    fetched = build(tmp_path / "b", storage)
    assert fetched.outcome == "hit"  # nothing compiled here
    assert [e.kind for e in fetched.events] == ["fetched"]
    assert storage.puts == [built.key]  # not put back
    assert ctypes.CDLL(str(fetched.library)).answer() == 42
    # Then a plain local hit: the storage is not asked again.
    again = build(tmp_path / "b", storage)
    assert again.outcome == "hit" and again.events == [] and len(storage.gets) == 2


class Broken(DictStorage):
    """Returns what it is given, or raises."""

    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer

    def get(self, key: str) -> bytes | None:
        self.gets.append(key)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (b"hello", "not an opweave cache entry"),
        (b"OPWEAVE-ENTRY 1\n{}\n", "damaged"),
        (ConnectionError("the server went away"), "the server went away"),
        ("text", "not bytes or None"),
    ],
)
def test_a_failing_or_hostile_storage_is_a_miss_compiled_here(
    tmp_path: Path, answer: object, problem: str
) -> None:
    storage = Broken(answer)
    built = build(tmp_path / "a", storage)
    assert built.outcome == "built"
    [event] = built.events
    assert event.kind == "remote_failed" and problem in event.problem
    assert ctypes.CDLL(str(built.library)).answer() == 42
    assert storage.puts == [built.key]  # the good entry replaces the bad one


def test_another_keys_entry_is_refused(tmp_path: Path) -> None:
    storage = DictStorage()
    built = build(tmp_path / "a", storage)
    other = _core.request_key(_core.SystemCompiler(), module_request(SOURCE + "// other\n"))
    cache = _core.ModuleCache(str(tmp_path / "b"))
    with pytest.raises(CacheError, match="is the entry of"):
        cache.adopt(other, storage.packs[built.key])
    storage.packs[other] = storage.packs[built.key]
    request = module_request(SOURCE + "// other\n")
    rebuilt = _core.build_module(cache, _core.SystemCompiler(), request, None, storage)
    assert rebuilt.outcome == "built" and rebuilt.key == other
    assert [e.kind for e in rebuilt.events] == ["remote_failed"]


def test_an_interrupt_in_the_storage_stops_the_build(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path / "a", Broken(KeyboardInterrupt()))
    assert _core.ModuleCache(str(tmp_path / "a")).list() == []


def test_export_entry_is_the_pack_adopt_takes(tmp_path: Path) -> None:
    built = build(tmp_path / "a", None)
    cache = _core.ModuleCache(str(tmp_path / "a"))
    pack = cache.export_entry(built.key)
    assert pack is not None and pack.startswith(b"OPWEAVE-ENTRY 1\n")
    assert cache.export_entry("0" * 64) is None
    other = _core.ModuleCache(str(tmp_path / "b"))
    assert other.adopt(built.key, pack).outcome == "built"
    assert ctypes.CDLL(str(other.lookup(built.key).file_ending(".so"))).answer() == 42
    altered = bytearray(pack)
    altered[-1] ^= 1  # the last byte of the library
    with pytest.raises(CacheError, match="does not verify"):
        _core.ModuleCache(str(tmp_path / "c")).adopt(built.key, bytes(altered))
    with pytest.raises(CacheError, match="sizes do not add up"):
        _core.ModuleCache(str(tmp_path / "c")).adopt(built.key, pack + b"x")
    assert _core.ModuleCache(str(tmp_path / "c")).list() == []


def test_a_storage_that_implements_nothing_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(NotImplementedError, match="implements get"):
        _core.RemoteStorage().get("0" * 64)
    built = build(tmp_path / "a", _core.RemoteStorage())
    assert built.outcome == "built"
    assert [e.kind for e in built.events] == ["remote_failed", "remote_failed"]

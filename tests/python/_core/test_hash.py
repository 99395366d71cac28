"""The core's SHA-256 and typed key hasher, through the bindings."""

from __future__ import annotations

import hashlib
import struct

import pytest

from opweave import _core


@pytest.mark.parametrize(
    "message",
    [b"", b"abc", b"a" * 55, b"a" * 56, b"a" * 64, bytes(range(256)) * 40, b"a" * 1_000_000],
)
def test_sha256_matches_hashlib(message: bytes) -> None:
    assert _core.sha256_hex(message) == hashlib.sha256(message).hexdigest()


def test_typed_fields_do_not_collide() -> None:
    def digest(*steps: tuple[str, object]) -> str:
        hasher = _core.KeyHasher()
        for method, value in steps:
            getattr(hasher, method)(value)
        return hasher.hex_digest()

    assert digest(("add_list", ["-I", "-O2"])) != digest(("add_list", ["-I-O2"]))
    assert digest(("add_text", "1")) != digest(("add_int", 1))
    assert digest(("add_text", "a"), ("add_text", "bc")) != digest(
        ("add_text", "ab"), ("add_text", "c")
    )
    assert digest(("add_list", ["a", "b"])) == digest(("add_list", ["a", "b"]))


def test_key_hasher_encoding_is_pinned() -> None:
    # tag, 8-byte little-endian length, payload; ints are 8 LE bytes.
    expected = hashlib.sha256(
        b"s" + struct.pack("<Q", 3) + b"abc" + b"i" + struct.pack("<Q", 8) + struct.pack("<q", 7)
    ).hexdigest()
    assert _core.KeyHasher().add_text("abc").add_int(7).hex_digest() == expected


def test_named_fields_are_shown_as_they_are_hashed() -> None:
    hasher = _core.KeyHasher().add_named("layout", "3").add_named("extra", "py312")
    assert hasher.text == "layout: 3\nextra: py312\n"
    key = hasher.hex_digest()
    assert hasher.text == "" and len(key) == 64

"""The audit hook of support/cache_opens.py, which every test runs under
(conftest.py), sees an open by opweave's Python code below a cache root, and
only such opens."""

from __future__ import annotations

from pathlib import Path

from support import cache_opens


def test_an_open_by_opweave_code_below_the_cache_root_is_noted(isolated_cache: Path) -> None:
    planted = isolated_cache / "march" / "planted"
    planted.parent.mkdir(parents=True)
    planted.write_text("-include/tmp/theirs.h\n")  # the test's own open: not noted
    assert cache_opens.opened == []
    code = compile("open(path).read()", "<opweave code>", "exec")
    exec(code, {"__name__": "opweave.link.c._fake", "path": str(planted)})
    assert cache_opens.opened == [(str(planted), "opweave.link.c._fake")]
    outside = isolated_cache.parent.parent / "outside.txt"
    outside.write_text("not a cache file")
    exec(code, {"__name__": "opweave.link.c._fake", "path": str(outside)})
    assert len(cache_opens.opened) == 1
    cache_opens.opened.clear()  # the fixture fails tests that leave any

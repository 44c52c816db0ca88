"""engine.atomic: the one atomic file writer (temp file beside the target, then os.replace)."""
import os
import stat

import pytest

from analysis_utils.engine import atomic


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


def test_write_text_replaces_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "sub" / "out.json"  # the folder does not exist yet
    atomic.write_text(target, "first")
    atomic.write_text(target, "second ü")
    assert target.read_text(encoding="utf-8") == "second ü"
    assert _leftovers(target.parent) == []


def test_a_failed_write_keeps_the_old_file_and_removes_the_temp_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="half-way"), atomic.replacing(target) as tmp:
        tmp.write_text("half of the new")
        raise RuntimeError("killed half-way")
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_a_block_that_writes_nothing_does_not_empty_the_target(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(FileNotFoundError, match="nothing was written"), \
            atomic.replacing(target):
        pass
    assert target.read_text() == "old"


def test_the_new_file_gets_the_umask_permissions_not_a_private_temp_files(tmp_path):
    old = os.umask(0o022)
    try:
        target = tmp_path / "README.md"
        atomic.write_bytes(target, b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_the_temp_file_sits_beside_the_target_and_is_hidden(tmp_path):
    target = tmp_path / "out.bin"
    with atomic.replacing(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".out.bin.")
        assert not target.exists()  # nothing visible under the target's name until the end
        tmp.write_bytes(b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"

"""Integrity of the on-disk attention store: checksums, damaged files, repair, check-cache."""

import json

import numpy as np
import pytest
from test_attention import _inputs  # the same random pair inputs as the extraction tests

from analysis_utils.__main__ import main as cli_main
from analysis_utils.engine import attention
from analysis_utils.engine.attention import (
    AttentionStore,
    CorruptStoreError,
    ModelInput,
    check_store,
    extract_attention,
    sum64,
)
from analysis_utils.engine.fingerprint import model_state

FIX = "python -m analysis_utils check-cache --fix"


@pytest.fixture
def counted(tiny_loaded, monkeypatch):
    """The tiny model with a list of the batch sizes its forward pass has run on."""
    real_forward = tiny_loaded.model.forward
    seen = []

    def counting(*args, **kwargs):
        seen.append(kwargs["input_ids"].shape[0])
        return real_forward(*args, **kwargs)

    monkeypatch.setattr(tiny_loaded.model, "forward", counting)
    return tiny_loaded, seen


def _store(loaded, tmp_path, items=None):
    items = items or _inputs(8)
    store = extract_attention(loaded, items, cache_dir=tmp_path, progress=False)
    expected = [np.array(store[i]) for i in range(len(store))]
    return items, store, expected


def _flip_byte(store, i, byte=5):
    """Change one byte in the middle of entry i of the maps file."""
    pos = int(store.offsets[i]) * 2 + byte
    with open(store.directory / "maps.f16", "r+b") as fh:
        fh.seek(pos)
        old = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([old[0] ^ 0x40]))


def _assert_names_folder_and_fix(err, directory):
    msg = str(err)
    assert str(directory) in msg
    assert FIX in msg


# --- the checksum itself ------------------------------------------------------------------

def test_sum64_is_the_documented_word_sum_and_catches_any_single_byte_change():
    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, 8 * 5 + 3, dtype=np.uint8).tobytes()  # partial last word
    words = np.frombuffer(data[:40], dtype="<u8").astype(object).sum()
    tail = int.from_bytes(data[40:] + bytes(5), "little")
    assert sum64(data) == (words + tail) % 2**64
    block = rng.random((2, 2, 5, 5)).astype(np.float16)
    assert sum64(block) == sum64(block.tobytes())
    for pos in range(len(data)):
        for bit in (0, 7):
            damaged = bytearray(data)
            damaged[pos] ^= 1 << bit
            assert sum64(bytes(damaged)) != sum64(data), (pos, bit)


def test_checksums_are_recorded_per_entry_and_match_the_file(tiny_loaded, tmp_path):
    _, store, _ = _store(tiny_loaded, tmp_path)
    meta = json.loads((store.directory / "manifest.json").read_text())
    assert meta["engine_version"] == attention.ENGINE_VERSION == "2"
    assert meta["checksum"] == "sum64" and len(meta["checksums"]) == len(store)
    raw = (store.directory / "maps.f16").read_bytes()
    for i in range(len(store)):
        start = int(store.offsets[i]) * 2
        assert start % 8 == 0
        assert int(meta["checksums"][i], 16) == sum64(raw[start:start + store[i].nbytes])
    # both ways of summing while writing: by layer (2 heads x n^2 x 2 bytes on 8-byte words,
    # n even) and in one go (n odd)
    assert {int(n) % 2 for n in store.lengths} == {0, 1}
    assert store.damaged_entries() == []
    assert (store.directory / "COMPLETE").read_text().split()[0] == store.key
    assert not (store.directory / "progress.json").exists()


# --- damage found on open and on read -----------------------------------------------------

def test_flipped_byte_is_refused_on_read_and_only_that_entry_is_reextracted(counted, tmp_path):
    loaded, seen = counted
    items, store, expected = _store(loaded, tmp_path)
    _flip_byte(store, 3)
    reopened = AttentionStore(store.directory)  # cheap checks pass: the size is right
    np.testing.assert_array_equal(reopened[2], expected[2])
    with pytest.raises(CorruptStoreError, match="entry 3 of maps.f16 does not match"):
        reopened.read(3)  # the positioned-read path (no memory map) checks too
    np.testing.assert_array_equal(reopened.read(4), expected[4])
    with pytest.raises(CorruptStoreError, match="entry 3 .* does not match its checksum") as ei:
        reopened[3]
    _assert_names_folder_and_fix(ei.value, store.directory)
    assert ei.value.entries == (3,)
    assert json.loads((store.directory / "DAMAGED").read_text()) == [3]

    seen.clear()
    with pytest.warns(UserWarning, match="fail their checksums"):
        again = extract_attention(loaded, items, cache_dir=tmp_path, progress=False)
    assert seen == [1]  # one forward pass, of the one damaged example
    for i in range(len(items)):
        np.testing.assert_array_equal(again[i], expected[i])
    assert not (again.directory / "DAMAGED").exists()
    assert check_store(again.directory).status == "ok"


def test_verify_true_finds_damage_that_was_never_read(counted, tmp_path):
    loaded, seen = counted
    items, store, expected = _store(loaded, tmp_path)
    _flip_byte(store, 0)
    _flip_byte(store, 6, byte=11)
    seen.clear()
    quick = extract_attention(loaded, items, cache_dir=tmp_path, progress=False)
    assert seen == []  # the default open does the cheap checks only
    with pytest.raises(CorruptStoreError):
        quick[6]
    with pytest.warns(UserWarning, match="2 entries fail their checksums"):
        again = extract_attention(loaded, items, cache_dir=tmp_path, progress=False,
                                  verify=True)
    assert sum(seen) == 2
    assert [i for i in range(len(items)) if not np.array_equal(again[i], expected[i])] == []


def test_truncated_maps_file_names_the_store_and_keeps_the_entries_before_the_cut(
        counted, tmp_path):
    loaded, seen = counted
    items, store, expected = _store(loaded, tmp_path)
    cut = int(store.offsets[5]) * 2 + 3  # inside entry 5: entries 0-4 are intact
    with open(store.directory / "maps.f16", "r+b") as fh:
        fh.truncate(cut)
    with pytest.raises(CorruptStoreError, match="maps.f16 is .* bytes, expected .*truncated") \
            as ei:
        AttentionStore(store.directory)
    _assert_names_folder_and_fix(ei.value, store.directory)
    assert "mmap length" not in str(ei.value)

    seen.clear()
    with pytest.warns(UserWarning, match="truncated"):
        again = extract_attention(loaded, items, cache_dir=tmp_path, progress=False)
    assert sum(seen) == len(items) - 5
    for i in range(len(items)):
        np.testing.assert_array_equal(again[i], expected[i])


def test_half_written_manifest_names_the_store_and_is_extracted_again(counted, tmp_path):
    loaded, seen = counted
    items, store, expected = _store(loaded, tmp_path)
    path = store.directory / "manifest.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(CorruptStoreError, match="manifest.json is not valid JSON") as ei:
        AttentionStore(store.directory)
    assert not isinstance(ei.value, json.JSONDecodeError)
    _assert_names_folder_and_fix(ei.value, store.directory)

    seen.clear()
    with pytest.warns(UserWarning, match="not valid JSON"):
        again = extract_attention(loaded, items, cache_dir=tmp_path, progress=False)
    assert sum(seen) == len(items)  # nothing can be trusted without the manifest
    for i in range(len(items)):
        np.testing.assert_array_equal(again[i], expected[i])


def test_inconsistent_manifest_or_marker_is_refused(tiny_loaded, tmp_path):
    _, store, _ = _store(tiny_loaded, tmp_path)
    d = store.directory
    meta = json.loads((d / "manifest.json").read_text())
    # Still valid JSON, self-consistent lengths, but no longer the manifest COMPLETE vouched for.
    meta["wall_time_s"] = 123.0
    (d / "manifest.json").write_text(json.dumps(meta))
    with pytest.raises(CorruptStoreError, match="changed after the store was completed"):
        AttentionStore(d)
    meta["lengths"][0] += 1
    (d / "manifest.json").write_text(json.dumps(meta))
    with pytest.raises(CorruptStoreError, match="offsets or total do not follow"):
        AttentionStore(d)
    meta["lengths"][0] -= 1
    (d / "manifest.json").write_text(json.dumps(meta))
    (d / "COMPLETE").write_text("0123456789abcdef01234567\n")
    with pytest.raises(CorruptStoreError, match="COMPLETE marker names key"):
        AttentionStore(d)


def test_old_format_store_is_never_read_as_valid(tiny_loaded, tmp_path, monkeypatch):
    items, store, _ = _store(tiny_loaded, tmp_path)
    state = model_state(tiny_loaded.model)
    assert attention.cache_key(tiny_loaded.identity, items, state) == store.key
    monkeypatch.setattr(attention, "ENGINE_VERSION", "1")
    assert attention.cache_key(tiny_loaded.identity, items, state) != store.key
    with pytest.raises(CorruptStoreError, match="engine version '2'.*reads '1' only") as ei:
        AttentionStore(store.directory)
    assert ei.value.stale
    stale = check_store(store.directory)
    assert stale.status == "stale" and not stale.problem and "delete the folder" in stale.detail


# --- interrupted runs --------------------------------------------------------------------

def test_resume_keeps_checksums_of_the_entries_done_before_the_crash(tiny_loaded, tmp_path,
                                                                     monkeypatch):
    items = _inputs(12)
    real_forward = tiny_loaded.model.forward
    calls = []

    def crashing(*args, **kwargs):
        if len(calls) == 2:
            raise KeyboardInterrupt("simulated crash")
        calls.append(1)
        return real_forward(*args, **kwargs)

    monkeypatch.setattr(tiny_loaded.model, "forward", crashing)
    with pytest.raises(KeyboardInterrupt):
        extract_attention(tiny_loaded, items, cache_dir=tmp_path, max_batch=3, flush_every_s=0,
                          progress=False)
    key_dir = next((tmp_path / "attention").iterdir())
    progress = json.loads((key_dir / "progress.json").read_text())
    assert len(progress["done"]) == len(progress["sums"]) == 6
    partial = check_store(key_dir)
    assert partial.status == "incomplete" and "6 of 12 entries done" in partial.detail

    monkeypatch.setattr(tiny_loaded.model, "forward", real_forward)
    store = extract_attention(tiny_loaded, items, cache_dir=tmp_path, max_batch=3,
                              progress=False)
    assert store.damaged_entries() == []
    assert [store[i].shape[-1] for i in range(len(items))] == [len(x) for x in items]


# --- the check-cache command -------------------------------------------------------------

def test_check_cache_reports_each_store_and_fix_leads_to_reextraction(counted, tmp_path,
                                                                      capsys):
    loaded, seen = counted
    sets = [_inputs(6, seed=s) for s in range(4)]
    stores = [_store(loaded, tmp_path, items) for items in sets]
    ok, flipped, truncated, manifest = (s[1].directory for s in stores)
    _flip_byte(stores[1][1], 4)
    with open(truncated / "maps.f16", "r+b") as fh:
        fh.truncate(100)
    (manifest / "manifest.json").write_text('{"key": "')

    assert cli_main(["check-cache", "--cache-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    lines = {ln.split()[1]: ln for ln in out.splitlines() if ln.split()[1:2]
             and ln.split()[1].startswith(str(tmp_path))}
    assert lines[str(ok)].startswith("ok ")
    assert lines[str(flipped)].startswith("corrupt") and "(entries 4)" in lines[str(flipped)]
    assert lines[str(truncated)].startswith("corrupt") and "truncated" in lines[str(truncated)]
    assert lines[str(manifest)].startswith("corrupt") and "manifest.json" in out
    assert f"{FIX} --cache-dir {tmp_path}" in out

    assert cli_main(["check-cache", "--fix", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "kept 5 of 6 entries" in out and "deleted" in out
    assert cli_main(["check-cache", "--cache-dir", str(tmp_path)]) == 0  # nothing corrupt left
    capsys.readouterr()

    seen.clear()
    for items, _, expected in stores:
        again = extract_attention(loaded, items, cache_dir=tmp_path, progress=False)
        for i in range(len(items)):
            np.testing.assert_array_equal(again[i], expected[i])
    # flipped: 1 entry; truncated at byte 100: all 6 (entry 0 is longer); manifest: all 6
    assert sum(seen) == 1 + 6 + 6
    assert cli_main(["check-cache", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 5 and all(ln.startswith("ok ") for ln in out[:4])


def test_check_cache_on_an_empty_cache(tmp_path, capsys):
    assert cli_main(["check-cache", "--cache-dir", str(tmp_path)]) == 0
    assert "no attention stores" in capsys.readouterr().out


# --- how the maps were made: recorded once, read back on every warm call -------------------

def test_manifest_records_time_device_and_date_without_changing_the_key(tiny_loaded, tmp_path):
    from analysis_utils.engine.attention import describe_device

    items = [ModelInput((2, 7, 8, 3)), ModelInput((2, 9, 3))]
    fresh = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    assert fresh.extracted_now
    meta = json.loads((fresh.directory / "manifest.json").read_text())
    assert meta["device"] == describe_device("cpu") and meta["device"].startswith("cpu (")
    assert len(meta["completed"]) == 20 and meta["completed"].endswith("Z")
    assert meta["wall_time_s"] >= 0 and "resumed_with" not in meta
    again = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    assert again.directory == fresh.directory and not again.extracted_now
    assert again.device == meta["device"] and again.completed == meta["completed"]
    note = again.extraction_note()
    assert note.startswith("extracted in ") and f" on {meta['device']}, " in note
    assert note.endswith(meta["completed"][:10])


def test_a_store_written_before_device_and_date_were_recorded_still_reads(tiny_loaded,
                                                                          tmp_path):
    import hashlib
    import os

    items = [ModelInput((2, 7, 8, 3))]
    store = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    meta = json.loads((store.directory / "manifest.json").read_text())
    for field in ("device", "completed"):
        del meta[field]
    text = json.dumps(meta)  # as engine version 2 wrote it before these fields
    (store.directory / "manifest.json").write_text(text)
    (store.directory / "COMPLETE").write_text(
        f"{meta['key']}\n{hashlib.sha256(text.encode()).hexdigest()}\n")
    os.utime(store.directory / "COMPLETE", (86400 * 365, 86400 * 365))  # 1971-01-01
    old = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    assert not old.extracted_now and old.device is None  # read, not extracted again
    assert old.extraction_note().endswith("(device not recorded), 1971-01-01")


def test_progress_bars_only_in_a_terminal(tiny_loaded, tmp_path, capsys, monkeypatch):
    extract_attention(tiny_loaded, [ModelInput((2, 7, 3))], cache_dir=tmp_path / "a")
    assert capsys.readouterr().err == ""  # pytest's stderr is not a terminal: no bar
    monkeypatch.setattr(attention, "show_progress", lambda: True)  # as in a terminal
    extract_attention(tiny_loaded, [ModelInput((2, 9, 3))], cache_dir=tmp_path / "b",
                      desc="bar here")
    assert "bar here" in capsys.readouterr().err
    extract_attention(tiny_loaded, [ModelInput((2, 8, 3))], cache_dir=tmp_path / "c",
                      desc="bar here", progress=False)  # an explicit choice still wins
    assert capsys.readouterr().err == ""


def test_read_entry_prefers_positioned_reads_over_the_memory_map():
    from analysis_utils.engine.attention import read_entry

    class Store(list):
        def read(self, i):
            return ("read", i)

    assert read_entry(Store([1, 2]), 1) == ("read", 1)
    assert read_entry([np.zeros(1), np.ones(1)], 1)[0] == 1.0

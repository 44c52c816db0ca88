"""Attention engine: batched extraction streamed to a content-addressed on-disk store.

Data flow::

    inputs (token ids [+ token-type ids])
      -> batches grouped by length, torch.inference_mode, eager attention
      -> each example's maps cropped to its real length n: (layers, heads, n, n)
      -> float16, checksummed, written into one flat file at a precomputed offset
      -> AttentionStore: store[i] is a (layers, heads, n_i, n_i) memory-mapped view,
         checked against its checksum the first time it is read

Cache layout, ``<cache>/attention/<key>/`` (engine version 2):

- ``manifest.json``: key, what the key was derived from, lengths and offsets (written first;
  rewritten at completion with ``checksums``, one per entry, and how the extraction went:
  ``wall_time_s``, ``device``, ``completed`` (UTC date and time), none of them part of the key);
- ``maps.f16``: the flat float16 array, preallocated to its final size; entry i starts at
  ``offsets[i]`` (items), rounded up to 8 bytes;
- ``progress.json``: indices and checksums of the entries flushed to disk (atomic replace after
  every flush), so an interrupted run resumes where it stopped;
- ``COMPLETE``: written last, atomically: the key and the sha256 of the final manifest. A store
  without it never reads as complete;
- ``DAMAGED`` (only after a failed read): entries found not to match their checksum; the next
  :func:`extract_attention` with the same inputs checks every entry and re-extracts the bad ones.

Checksums (:func:`sum64`): per entry, the sum modulo 2**64 of its bytes read as little-endian
uint64 words, computed from the block in memory just before it is written (no second read of
the file). It runs at memory speed (about 15 GB/s here, vs 2.5 GB/s for zlib.crc32), so it
catches flipped bytes, zeroed or foreign pages and truncation for a few percent of the time a
cold read of the maps takes; it does not notice 8-byte words swapped within one entry.

Opening a store checks the cheap parts (manifest parses and is consistent with itself, file
size, marker); each entry is checked when first read; ``python -m analysis_utils check-cache``
checks every entry of every store. The key hashes the model identity (name, weights hash, init,
seed), the exact input ids and token-type ids, the storage dtype and :data:`ENGINE_VERSION`; any
change gives a new key, so stores of an older format are never read.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from .. import paths
from . import atomic
from .fingerprint import model_state

# 2: per-entry checksums, entries aligned to 8 bytes, COMPLETE holds key + manifest sha256.
ENGINE_VERSION = "2"
STORE_DTYPE = np.float16
CHECKSUM = "sum64"
FIX_COMMAND = "python -m analysis_utils check-cache --fix"
_ALIGN_ITEMS = 8 // np.dtype(STORE_DTYPE).itemsize
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class ModelInput:
    """One model input: token ids and (optional) token-type ids, special tokens included."""

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return len(self.input_ids)


def as_inputs(items: Sequence) -> list[ModelInput]:
    """Accept ModelInput, mappings with ``input_ids``/``token_type_ids``, or objects with
    those attributes (e.g. corpora.Segment)."""
    out = []
    for it in items:
        if isinstance(it, ModelInput):
            out.append(it)
            continue
        get = it.get if isinstance(it, dict) else lambda k, it=it: getattr(it, k, None)
        ids, tt = get("input_ids"), get("token_type_ids")
        if ids is None or len(ids) == 0:
            raise ValueError("every input needs a non-empty input_ids sequence")
        if tt is not None and len(tt) != len(ids):
            raise ValueError("token_type_ids must have the same length as input_ids")
        out.append(ModelInput(tuple(int(i) for i in ids),
                              None if tt is None else tuple(int(t) for t in tt)))
    return out


def cache_key(identity: dict, inputs: Sequence[ModelInput], state: dict | None = None) -> str:
    """Content address of an extraction: model identity, the model's state at extraction time
    (``state``: :func:`~analysis_utils.engine.fingerprint.model_state`, i.e. the fingerprint
    of its in-memory weights and the active intervention), exact inputs, engine settings.
    A model changed in memory (a fine-tuning step) or run under an intervention gets a new
    key, never the plain model's maps."""
    h = hashlib.sha256()
    ident = {k: identity.get(k) for k in ("name", "source", "revision", "weights_sha256",
                                          "init", "seed", "num_layers", "num_heads")}
    h.update(json.dumps({"identity": ident, "state": state, "dtype": np.dtype(STORE_DTYPE).name,
                         "engine": ENGINE_VERSION}, sort_keys=True).encode())
    for x in inputs:
        h.update(np.asarray(x.input_ids, dtype=np.int64).tobytes())
        h.update(b"|" if x.token_type_ids is None
                 else np.asarray(x.token_type_ids, dtype=np.int64).tobytes())
        h.update(b";")
    return h.hexdigest()[:24]


# --- store format: layout, checksums, checks -------------------------------------------------

def sum64(data) -> int:
    """Checksum of one stored entry: the sum modulo 2**64 of its bytes read as little-endian
    uint64 words, a final partial word zero-padded.

    data: a contiguous array (any shape and dtype) or a bytes-like object. Any change confined
    to one 8-byte word changes the sum; so does random damage, except with probability 2**-64.

    >>> sum64(b"\\x01" + bytes(7) + b"\\x02")
    3
    """
    if isinstance(data, np.ndarray):
        b = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        b = np.frombuffer(data, dtype=np.uint8)
    k = b.size // 8 * 8
    total = int(np.add.reduce(b[:k].view("<u8"), dtype=np.uint64)) if k else 0
    if k < b.size:
        tail = np.zeros(8, dtype=np.uint8)
        tail[: b.size - k] = b[k:]
        total += int(tail.view("<u8")[0])
    return total & _MASK64


def _layout(lengths: np.ndarray, num_layers: int, num_heads: int):
    """(sizes, offsets, total) in items: entry i holds ``layers * heads * n_i**2`` items and
    starts 8-byte aligned, so its bytes can be summed as uint64 words in place."""
    sizes = num_layers * num_heads * np.asarray(lengths, dtype=np.int64) ** 2
    padded = -(-sizes // _ALIGN_ITEMS) * _ALIGN_ITEMS
    offsets = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
    return sizes, offsets, int(padded.sum())


def _fix_hint(directory: Path) -> str:
    root = directory.parent.parent if directory.parent.name == "attention" else None
    cmd = FIX_COMMAND + (f" --cache-dir {root}" if root is not None else "")
    return ("Fix: rerun extract_attention with the same inputs (it re-extracts only the damaged "
            f"entries), or run `{cmd}` to repair every store in the cache, or delete the folder "
            f"{directory}")


class CorruptStoreError(OSError):
    """An attention store whose files do not match what was written. The message names the
    store folder, what is wrong (``problem``; ``entries``: damaged entry indices, if known) and
    how to repair it. ``stale`` is True for a store of an older engine version."""

    def __init__(self, directory: str | os.PathLike, problem: str,
                 entries: Sequence[int] = (), stale: bool = False):
        self.directory = Path(directory)
        self.problem = problem
        self.entries = tuple(int(i) for i in entries)
        self.stale = stale
        super().__init__(f"attention store {self.directory}: {problem}. "
                         f"{_fix_hint(self.directory)}")


def _read_manifest(directory: Path, complete: bool) -> dict:
    """Parse manifest.json and check it against itself (version, dtype, layout, key = folder
    name; with ``complete``, one checksum per entry). Raises CorruptStoreError."""
    path = directory / "manifest.json"

    def bad(problem: str, stale: bool = False):
        return CorruptStoreError(directory, problem, stale=stale)

    try:
        raw = path.read_bytes()
        meta = json.loads(raw)
    except FileNotFoundError:
        raise bad("manifest.json is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise bad(f"manifest.json is not valid JSON ({err}); it was probably half-written") \
            from None
    if not isinstance(meta, dict):
        raise bad("manifest.json does not hold a JSON object")
    meta["_sha256"] = hashlib.sha256(raw).hexdigest()
    version = meta.get("engine_version")
    if version != ENGINE_VERSION:
        raise bad(f"written by attention engine version {version!r}; this version reads "
                  f"{ENGINE_VERSION!r} only (such stores are never read: their inputs get a new "
                  "key and are extracted again)", stale=True)
    try:
        key, n = meta["key"], int(meta["n_inputs"])
        L, H = int(meta["num_layers"]), int(meta["num_heads"])
        lengths = np.asarray(meta["lengths"], dtype=np.int64)
        offsets = np.asarray(meta["offsets"], dtype=np.int64)
        total = int(meta["total"])
    except (KeyError, TypeError, ValueError) as err:
        raise bad(f"manifest.json lacks or garbles a field ({err!r})") from None
    if key != directory.name:
        raise bad(f"manifest.json describes key {key!r}, not the folder's own key")
    if meta.get("dtype") != np.dtype(STORE_DTYPE).name or meta.get("checksum") != CHECKSUM:
        raise bad(f"manifest.json names dtype {meta.get('dtype')!r} and checksum "
                  f"{meta.get('checksum')!r}, expected {np.dtype(STORE_DTYPE).name!r} and "
                  f"{CHECKSUM!r}")
    if lengths.shape != (n,) or offsets.shape != (n,) or n == 0 or (lengths < 1).any() \
            or L < 1 or H < 1:
        raise bad(f"manifest.json lengths/offsets do not describe {n} inputs")
    _, want_offsets, want_total = _layout(lengths, L, H)
    if total != want_total or not np.array_equal(offsets, want_offsets):
        raise bad("manifest.json offsets or total do not follow from its lengths")
    if complete:
        sums = meta.get("checksums")
        if not isinstance(sums, list) or len(sums) != n:
            raise bad(f"manifest.json has no checksum list for its {n} entries")
        try:
            meta["_sums"] = np.array([int(c, 16) for c in sums], dtype=np.uint64)
        except (TypeError, ValueError):
            raise bad("manifest.json holds a checksum that is not a hex number") from None
    return meta


def _check_files(directory: Path, meta: dict) -> None:
    """The cheap checks of a complete store beyond the manifest: file size and marker."""
    maps = directory / "maps.f16"
    want = int(meta["total"]) * np.dtype(STORE_DTYPE).itemsize
    try:
        size = maps.stat().st_size
    except FileNotFoundError:
        raise CorruptStoreError(directory, "maps.f16 is missing") from None
    if size != want:
        raise CorruptStoreError(directory, f"maps.f16 is {size:,} bytes, expected {want:,} "
                                f"({'truncated' if size < want else 'too long'})")
    marker = (directory / "COMPLETE").read_text().split()
    if marker[:1] != [meta["key"]]:
        raise CorruptStoreError(directory, f"the COMPLETE marker names key {marker[:1]}, "
                                f"not {meta['key']!r}")
    if marker[1:2] != [meta["_sha256"]]:
        raise CorruptStoreError(directory, "manifest.json changed after the store was "
                                "completed (its sha256 differs from the COMPLETE marker)")


def _bad_entries(maps_path: Path, meta: dict, recorded: dict[int, int]) -> list[int]:
    """Indices in ``recorded`` (entry -> checksum) whose bytes in ``maps_path`` do not sum to
    it, read with positioned reads (no memory map), or that lie past the end of the file."""
    L, H = int(meta["num_layers"]), int(meta["num_heads"])
    sizes, offsets, _ = _layout(np.asarray(meta["lengths"]), L, H)
    itemsize = np.dtype(STORE_DTYPE).itemsize
    bad = []
    try:
        fd = os.open(maps_path, os.O_RDONLY)
    except FileNotFoundError:
        return sorted(recorded)
    try:
        for i in sorted(recorded):
            nbytes = int(sizes[i]) * itemsize
            buf = os.pread(fd, nbytes, int(offsets[i]) * itemsize)
            if len(buf) != nbytes or sum64(buf) != recorded[i]:
                bad.append(i)
    finally:
        os.close(fd)
    return bad


def _read_progress(path: Path, n: int) -> dict[int, int]:
    """progress.json -> {entry: checksum}; raises ValueError when unreadable or inconsistent."""
    try:
        p = json.loads(path.read_text())
        out = {int(i): int(s, 16) for i, s in zip(p["done"], p["sums"], strict=True)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"progress.json unreadable: {err!r}") from None
    if any(not 0 <= i < n for i in out):
        raise ValueError("progress.json names entries out of range")
    return out


def _write_progress(path: Path, done: dict[int, int]) -> None:
    order = sorted(done)
    atomic.write_text(path, json.dumps({"done": order,
                                         "sums": [f"{done[i]:016x}" for i in order]}))


def _mark_damaged(directory: Path, entries: Sequence[int]) -> None:
    """Record entries found damaged on read, for the next extract_attention (best effort: a
    read-only cache only loses the shortcut, not the error)."""
    path = directory / "DAMAGED"
    try:
        known = set(json.loads(path.read_text())) if path.exists() else set()
    except (OSError, ValueError, TypeError):
        known = set()
    try:
        atomic.write_text(path, json.dumps(sorted(known | {int(i) for i in entries})))
    except OSError:
        pass


@dataclass
class StoreCheck:
    """Outcome of :func:`check_store`. status: ``ok`` | ``incomplete`` (an interrupted run the
    next extraction resumes) | ``corrupt`` | ``stale`` (older engine version, never read)."""

    directory: Path
    status: str
    detail: str
    bad_entries: list[int] = field(default_factory=list)
    nbytes: int = 0

    @property
    def problem(self) -> bool:
        return self.status == "corrupt"


def check_store(directory: str | os.PathLike) -> StoreCheck:
    """Check one store completely: manifest, sizes, marker and every entry's checksum (the
    finished entries of an interrupted run against progress.json). Reads every entry."""
    d = Path(directory)
    complete = (d / "COMPLETE").exists()
    try:
        meta = _read_manifest(d, complete=complete)
        if complete:
            _check_files(d, meta)
    except CorruptStoreError as err:
        if err.stale:
            size = sum(f.stat().st_size for f in d.iterdir() if f.is_file())
            return StoreCheck(d, "stale", f"{err.problem}; delete the folder to free "
                              f"{size / 1e6:,.1f} MB", [], size)
        if not complete:
            return StoreCheck(d, "incomplete", f"interrupted before its manifest was usable "
                              f"({err.problem}); the next extraction starts it again")
        return StoreCheck(d, "corrupt", err.problem)
    n = int(meta["n_inputs"])
    nbytes = int(meta["total"]) * np.dtype(STORE_DTYPE).itemsize
    if complete:
        recorded = {i: int(s) for i, s in enumerate(meta["_sums"])}
    else:
        try:
            recorded = _read_progress(d / "progress.json", n)
        except ValueError as err:
            return StoreCheck(d, "incomplete", f"interrupted; {err}; the next extraction "
                              "starts it again")
        size = (d / "maps.f16").stat().st_size if (d / "maps.f16").exists() else -1
        if size != nbytes:
            return StoreCheck(d, "incomplete", "interrupted; maps.f16 has the wrong size; the "
                              "next extraction starts it again")
    bad = _bad_entries(d / "maps.f16", meta, recorded)
    if bad:
        shown = ", ".join(map(str, bad[:8])) + (", ..." if len(bad) > 8 else "")
        what = "entries" if complete else "finished entries of an interrupted run"
        return StoreCheck(d, "corrupt", f"{len(bad)} of {len(recorded)} {what} fail their "
                          f"checksums (entries {shown})", bad, nbytes)
    if not complete:
        return StoreCheck(d, "incomplete", f"partial: {len(recorded)} of {n} entries done (all "
                          "verify); the next extraction with the same inputs completes it", [],
                          nbytes)
    return StoreCheck(d, "ok", f"{n} entries verify, {nbytes / 1e6:,.1f} MB", [], nbytes)


def repair_store(directory: str | os.PathLike) -> str:
    """Turn a damaged store into an interrupted one that keeps every entry that verifies, so
    the next :func:`extract_attention` with the same inputs re-extracts only the rest. A store
    whose manifest cannot be trusted is deleted (all of it is extracted again). Returns what
    was done. Do not run it while an extraction into the same store is running."""
    d = Path(directory)
    complete = (d / "COMPLETE").exists()
    try:
        meta = _read_manifest(d, complete=complete)
    except CorruptStoreError as err:
        shutil.rmtree(d)
        return f"deleted ({err.problem}); the next extraction starts it again"
    n = int(meta["n_inputs"])
    if complete:
        recorded = {i: int(s) for i, s in enumerate(meta["_sums"])}
    else:
        try:
            recorded = _read_progress(d / "progress.json", n)
        except ValueError:
            recorded = {}
    bad = set(_bad_entries(d / "maps.f16", meta, recorded))
    good = {i: s for i, s in recorded.items() if i not in bad}
    # COMPLETE goes first: from here on the store never reads as complete, whatever happens.
    (d / "COMPLETE").unlink(missing_ok=True)
    with open(d / "maps.f16", "ab") as fh:  # preallocated size, as a fresh extraction has it
        fh.truncate(int(meta["total"]) * np.dtype(STORE_DTYPE).itemsize)
    _write_progress(d / "progress.json", good)
    (d / "DAMAGED").unlink(missing_ok=True)
    return (f"kept {len(good)} of {n} entries; the next extraction with these inputs "
            f"re-extracts the other {n - len(good)}")


class AttentionStore:
    """Read-only view of a completed extraction.

    ``store[i]``: ``(layers, heads, n_i, n_i)`` float16 memory-mapped array (no copy), checked
    against its recorded checksum the first time it is read (``verify_reads=False`` skips
    that). Iterating yields the maps in input order. ``lengths[i]`` is n_i. Opening checks the
    manifest, the file size and the COMPLETE marker; :meth:`damaged_entries` checks every entry.
    Raises :class:`CorruptStoreError` (folder, problem, fix) on any mismatch.
    """

    def __init__(self, directory: str | os.PathLike, *, verify_reads: bool = True):
        self.directory = Path(directory)
        if not (self.directory / "COMPLETE").exists():
            raise FileNotFoundError(
                f"{self.directory} is not a complete attention store (no COMPLETE marker); "
                "rerun extract_attention to resume it."
            )
        meta = _read_manifest(self.directory, complete=True)
        _check_files(self.directory, meta)
        self.checksums: np.ndarray = meta.pop("_sums")
        meta.pop("_sha256")
        self.meta = meta
        self.key: str = meta["key"]
        self.num_layers: int = meta["num_layers"]
        self.num_heads: int = meta["num_heads"]
        self.lengths = np.asarray(meta["lengths"], dtype=np.int64)
        self.offsets = np.asarray(meta["offsets"], dtype=np.int64)
        total = int(meta["total"])
        self._maps = np.memmap(self.directory / "maps.f16", dtype=STORE_DTYPE, mode="r",
                               shape=(total,))
        self.verify_reads = verify_reads
        self._verified = np.zeros(len(self.lengths), dtype=bool)
        #: How the maps were made, as the manifest records it (None where a store written
        #: before these fields were recorded lacks one): seconds the extraction took, the
        #: device, and the UTC time it completed.
        self.wall_time_s: float | None = meta.get("wall_time_s")
        self.device: str | None = meta.get("device")
        self.completed: str | None = meta.get("completed")
        #: False when this object came from the cache, True when the call extracted (or
        #: completed) the maps; set by :func:`extract_attention`.
        self.extracted_now: bool = False

    def extraction_note(self) -> str:
        """When and how the maps were extracted, for a reader: ``"extracted in 157 s on cpu
        (2 cores), 2025-05-01"``. A store that predates the ``device``/``completed`` fields
        gives the date its COMPLETE marker was written instead."""
        t = self.wall_time_s
        took = ("extraction time not recorded" if t is None
                else f"extracted in {t:.1f} s" if t < 10 else f"extracted in {t:.0f} s")
        when = self.completed[:10] if self.completed else None
        if when is None:
            stamp = (self.directory / "COMPLETE").stat().st_mtime
            when = time.strftime("%Y-%m-%d", time.gmtime(stamp))
        on = f" on {self.device}" if self.device else " (device not recorded)"
        return f"{took}{on}, {when}"

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int) -> np.ndarray:
        i = range(len(self))[i]
        n = int(self.lengths[i])
        start = int(self.offsets[i])
        size = self.num_layers * self.num_heads * n * n
        flat = self._maps[start:start + size]
        if self.verify_reads and not self._verified[i]:
            if sum64(flat) != int(self.checksums[i]):
                _mark_damaged(self.directory, [i])
                raise CorruptStoreError(
                    self.directory, f"entry {i} (bytes {start * flat.itemsize:,} to "
                    f"{(start + size) * flat.itemsize:,} of maps.f16) does not match its checksum: "
                    "the file changed after it was written", entries=[i])
            self._verified[i] = True
        return flat.reshape(self.num_layers, self.num_heads, n, n)

    def __iter__(self) -> Iterator[np.ndarray]:
        # positioned reads, not the memory map: mapped pages a pass touches count towards the
        # process's resident memory, so one pass over a store looked like the whole store held
        for i in range(len(self)):
            yield self.read(i)

    def read(self, i: int) -> np.ndarray:
        """Entry i as a fresh ``(layers, heads, n_i, n_i)`` array read with a positioned read
        (its pages never join this process's memory map) and checked against its checksum."""
        i = range(len(self))[i]
        n = int(self.lengths[i])
        nbytes = self.num_layers * self.num_heads * n * n * self._maps.itemsize
        with open(self.directory / "maps.f16", "rb") as fh:
            buf = os.pread(fh.fileno(), nbytes, int(self.offsets[i]) * self._maps.itemsize)
        if len(buf) != nbytes or sum64(buf) != int(self.checksums[i]):
            _mark_damaged(self.directory, [i])
            raise CorruptStoreError(self.directory, f"entry {i} of maps.f16 does not match its "
                                    "checksum: the file changed after it was written",
                                    entries=[i])
        return np.frombuffer(buf, dtype=STORE_DTYPE).reshape(self.num_layers, self.num_heads,
                                                             n, n)

    def damaged_entries(self) -> list[int]:
        """Check every entry against its checksum (reads the whole file); the bad indices."""
        recorded = {i: int(s) for i, s in enumerate(self.checksums)}
        bad = _bad_entries(self.directory / "maps.f16", self.meta, recorded)
        self._verified[:] = True
        self._verified[bad] = False
        return bad

    @property
    def nbytes(self) -> int:
        return int(self._maps.nbytes)


def length_batches(lengths: np.ndarray, todo: np.ndarray, max_tokens: int, max_batch: int):
    """Group example indices of similar length: sort by length, cut when the padded size
    (batch * longest) would pass ``max_tokens`` or the batch holds ``max_batch`` examples."""
    order = todo[np.argsort(lengths[todo], kind="stable")]
    batch: list[int] = []
    longest = 0
    for i in order:
        n = int(lengths[i])
        if batch and (len(batch) + 1) * max(longest, n) > max_tokens or len(batch) >= max_batch:
            yield batch
            batch, longest = [], 0
        batch.append(int(i))
        longest = max(longest, n)
    if batch:
        yield batch


def uses_token_types(model) -> bool:
    """Whether ``model`` takes segment ids: a ``token_type_ids`` argument and at least two
    token types (BERT: yes; MPNet: no such argument; RoBERTa: one type only, so a second
    segment's id 1 would index past its table)."""
    m = model.model if hasattr(model, "model") and not isinstance(model, torch.nn.Module) \
        else model
    accepts = "token_type_ids" in inspect.signature(type(m).forward).parameters
    return accepts and int(getattr(m.config, "type_vocab_size", 0) or 0) >= 2


def collate(inputs: list[ModelInput], pad_id: int, device: torch.device,
            token_types: bool = True) -> dict:
    """Pad ``inputs`` into one batch on ``device``. ``token_types=False`` leaves the segment ids
    out (models that take none, :func:`uses_token_types`); readers still record them for the
    analyses."""
    n = max(len(x) for x in inputs)
    ids = torch.full((len(inputs), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(inputs), n), dtype=torch.long)
    types = torch.zeros((len(inputs), n), dtype=torch.long)
    has_types = any(x.token_type_ids is not None for x in inputs)
    for b, x in enumerate(inputs):
        ids[b, : len(x)] = torch.tensor(x.input_ids)
        mask[b, : len(x)] = 1
        if x.token_type_ids is not None:
            types[b, : len(x)] = torch.tensor(x.token_type_ids)
    batch = {"input_ids": ids, "attention_mask": mask}
    if has_types and token_types:
        batch["token_type_ids"] = types
    return {k: v.to(device) for k, v in batch.items()}


def extract_attention(
    loaded,
    items: Sequence,
    *,
    cache_dir: str | os.PathLike | None = None,
    max_tokens: int = 8192,
    max_batch: int = 64,
    flush_every_s: float = 20.0,
    progress: bool | None = None,
    desc: str = "attention",
    verify: bool = False,
) -> AttentionStore:
    """Extract attention maps for ``items`` with ``loaded`` (a models.LoadedModel).

    items: ModelInput, dicts or objects with ``input_ids`` (+ ``token_type_ids``), special
    tokens already in place. Returns the AttentionStore; a complete cached store with the
    same key is returned without running the model after its cheap checks (manifest, size,
    marker; each entry is checked when first read); a partial one is resumed. A cached store
    that fails its checks is repaired instead of used: the entries that fail their checksums
    are re-extracted (the whole store when its manifest cannot be trusted). ``verify=True``
    also checks every entry up front (reads the whole store); so does the first call after a
    read found a damaged entry.

    progress: show a progress bar on stderr; None (default): only when stderr is a terminal,
    so a notebook rendered by papermill or a log file carries no bar.
    """
    if progress is None:
        progress = show_progress()
    inputs = as_inputs(items)
    if not inputs:
        raise ValueError("extract_attention got no inputs")
    max_pos = max_positions(loaded.model)
    too_long = [i for i, x in enumerate(inputs) if max_pos and len(x) > max_pos]
    if too_long:
        raise ValueError(f"{len(too_long)} inputs are longer than the model's "
                         f"{max_pos} positions (first: #{too_long[0]}); truncate them first")
    key = cache_key(loaded.identity, inputs, model_state(loaded.model))
    root = paths.cache_dir(cache_dir) / "attention" / key
    if (root / "COMPLETE").exists():
        store = _open_or_repair(root, verify)
        if store is not None:
            return store

    L, H = loaded.num_layers, loaded.num_heads
    lengths = np.array([len(x) for x in inputs], dtype=np.int64)
    _, offsets, total = _layout(lengths, L, H)
    root.mkdir(parents=True, exist_ok=True)
    manifest_path, maps_path, progress_path = (root / "manifest.json", root / "maps.f16",
                                               root / "progress.json")
    manifest = {
        "key": key, "engine_version": ENGINE_VERSION, "dtype": np.dtype(STORE_DTYPE).name,
        "identity": loaded.identity, "num_layers": L, "num_heads": H, "n_inputs": len(inputs),
        "lengths": lengths.tolist(), "offsets": offsets.tolist(), "total": total,
        "checksum": CHECKSUM,
    }
    done: dict[int, int] = {}  # entry -> checksum of the bytes written for it
    resumable = (manifest_path.exists() and maps_path.exists() and progress_path.exists()
                 and maps_path.stat().st_size == total * np.dtype(STORE_DTYPE).itemsize)
    if resumable:
        try:
            old = json.loads(manifest_path.read_text())
            if old.get("key") == key and old.get("total") == total:
                done = _read_progress(progress_path, len(inputs))
        except (json.JSONDecodeError, ValueError, AttributeError):
            done = {}
    if not done:
        (root / "COMPLETE").unlink(missing_ok=True)
        progress_path.unlink(missing_ok=True)
        maps_path.unlink(missing_ok=True)
        atomic.write_text(manifest_path, json.dumps(manifest))
        with open(maps_path, "wb") as fh:
            fh.truncate(total * np.dtype(STORE_DTYPE).itemsize)

    # Written with positioned writes, not through a memmap: the maps never become part of this
    # process's resident memory. Data reach the OS before progress.json names them, so a killed
    # process resumes correctly (durability against power loss is not attempted).
    fd = os.open(maps_path, os.O_WRONLY)
    itemsize = np.dtype(STORE_DTYPE).itemsize
    todo = np.array([i for i in range(len(inputs)) if i not in done], dtype=np.int64)
    pad_id = loaded.tokenizer.pad_token_id or 0
    model, device = loaded.model, loaded.device
    types = uses_token_types(model)
    t0, last_flush = time.perf_counter(), time.perf_counter()
    pending: list[tuple[int, int]] = []

    def flush() -> None:
        done.update(pending)
        pending.clear()
        _write_progress(progress_path, done)

    bar = tqdm(total=len(inputs), initial=len(done), desc=desc, disable=not progress,
               unit="input")
    try:
        with torch.inference_mode():
            for batch in length_batches(lengths, todo, max_tokens, max_batch):
                enc = collate([inputs[i] for i in batch], pad_id, device, types)
                out = model(**enc, output_attentions=True)
                if not out.attentions:
                    raise RuntimeError("the model returned no attentions; load it with "
                                       "attn_implementation='eager' (models.load_model does)")
                # float16 per layer on the model's device (no stacked copy of all layers),
                # then each example's cropped maps are copied once into a contiguous block
                # that is written straight from its buffer. Its checksum is taken before the
                # write, layer by layer while each copy is still in cache when the layers start
                # on 8-byte words (sum64 adds up over word-aligned parts), else in one go.
                layers16 = [a.to(torch.float16).cpu().numpy() for a in out.attentions]
                del out
                for b, i in enumerate(batch):
                    n = int(lengths[i])
                    block = np.empty((L, H, n, n), dtype=STORE_DTYPE)
                    by_layer = (H * n * n * itemsize) % 8 == 0
                    checksum = 0
                    for layer, a in enumerate(layers16):
                        block[layer] = a[b, :, :n, :n]
                        if by_layer:
                            checksum += sum64(block[layer])
                    checksum = checksum & _MASK64 if by_layer else sum64(block)
                    os.pwrite(fd, memoryview(block).cast("B"), int(offsets[i]) * itemsize)
                    pending.append((i, checksum))
                bar.update(len(batch))
                if time.perf_counter() - last_flush > flush_every_s:
                    flush()
                    last_flush = time.perf_counter()
            flush()
    finally:
        os.close(fd)
        bar.close()
    manifest["wall_time_s"] = round(time.perf_counter() - t0, 3)
    manifest["device"] = describe_device(device)
    manifest["completed"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if done_before := len(inputs) - len(todo):  # a resumed run timed only what it extracted
        manifest["resumed_with"] = done_before
    manifest["checksums"] = [f"{done[i]:016x}" for i in range(len(inputs))]
    text = json.dumps(manifest)
    atomic.write_text(manifest_path, text)
    (root / "DAMAGED").unlink(missing_ok=True)
    atomic.write_text(root / "COMPLETE", f"{key}\n{hashlib.sha256(text.encode()).hexdigest()}\n")
    progress_path.unlink(missing_ok=True)
    store = AttentionStore(root)
    store.extracted_now = True
    return store


def max_positions(model) -> int | None:
    """The longest input ``model`` can embed: ``config.max_position_embeddings``, less the
    offset at which positions start when the position embedding has a padding index
    (RoBERTa, MPNet: positions count from ``padding_idx + 1``, so all-mpnet-base-v2's 514
    embeddings hold 512 tokens). None when the config does not say."""
    max_pos = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if not max_pos:
        return None
    base = getattr(model, "base_model", model)
    emb = getattr(getattr(base, "embeddings", None), "position_embeddings", None)
    pad = getattr(emb, "padding_idx", None)
    return int(max_pos) - (int(pad) + 1 if pad is not None else 0)


def show_progress() -> bool:
    """Whether to draw progress bars: only when stderr is a terminal (a notebook rendered by
    papermill, a CI log or a redirected run gets none)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def describe_device(device) -> str:
    """The device as provenance names it: the GPU's name, or ``cpu (N cores, T threads)``."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{device.type} ({os.cpu_count()} cores, {torch.get_num_threads()} threads)"


def _open_or_repair(root: Path, verify: bool) -> AttentionStore | None:
    """The complete store at ``root`` if it passes its checks (every entry's checksum too with
    ``verify`` or after a read found damage), else None after :func:`repair_store` turned it
    into a partial store for extract_attention to resume."""
    try:
        store = AttentionStore(root)
        bad = store.damaged_entries() if verify or (root / "DAMAGED").exists() else []
    except CorruptStoreError as err:
        problem = err.problem
    else:
        if not bad:
            (root / "DAMAGED").unlink(missing_ok=True)
            return store
        problem = f"{len(bad)} entries fail their checksums (first: #{bad[0]})"
        del store
    action = repair_store(root)
    warnings.warn(f"attention store {root}: {problem}; {action}.", stacklevel=3)
    return None


# --- token -> word conversion ---------------------------------------------------------------

def token_to_word_index(word_ids: Sequence[int | None]) -> np.ndarray:
    """Map each token to a word index, special tokens (``None``) becoming their own words.

    word_ids: per token, the index of the word it belongs to (as the fast tokenizer's
    ``word_ids()``), ``None`` for special tokens. Returns ``(n_tokens,)`` int array of word
    positions in order of first appearance, e.g. ``[None, 0, 0, 1, None] -> [0, 1, 1, 2, 3]``.
    """
    out = np.empty(len(word_ids), dtype=np.int64)
    pos, prev = -1, object()
    for t, w in enumerate(word_ids):
        if w is None or w != prev:
            pos += 1
        out[t] = pos
        prev = w if w is not None else object()
    return out


def word_conversion_matrices(tok2word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R (words x tokens) averages the rows of a word's pieces; C (tokens x words) sums the
    columns. ``word_attn = R @ attn @ C`` (Clark et al.: attention TO a split word is summed
    over its pieces, attention FROM it is averaged, so rows still sum to 1)."""
    tok2word = np.asarray(tok2word)
    m = int(tok2word.max()) + 1
    C = np.zeros((len(tok2word), m), dtype=np.float32)
    C[np.arange(len(tok2word)), tok2word] = 1.0
    R = C.T / C.sum(axis=0)[:, None]
    return R, C


def word_level(attn: np.ndarray, tok2word: np.ndarray) -> np.ndarray:
    """attn: (..., n, n) token-level maps -> (..., m, m) word-level maps (float32).

    Equal to ``R @ attn @ C`` (:func:`word_conversion_matrices`). When each word's pieces are
    contiguous (``tok2word`` non-decreasing, as :func:`token_to_word_index` makes it) two
    ``np.add.reduceat`` passes compute it in O(n^2) per head; stacked float32 matrix products
    of these shapes ran up to seconds per input here once torch had started its threads."""
    attn = np.asarray(attn, dtype=np.float32)
    tok2word = np.asarray(tok2word, dtype=np.int64)
    if len(tok2word) and (np.diff(tok2word) < 0).any():
        R, C = word_conversion_matrices(tok2word)
        return R @ attn @ C
    starts = np.flatnonzero(np.r_[True, np.diff(tok2word) != 0])
    if len(starts) == attn.shape[-1]:
        return attn  # no split word: the token map is the word map
    sizes = np.diff(np.r_[starts, len(tok2word)]).astype(np.float32)
    cols = np.add.reduceat(attn, starts, axis=-1)
    return np.add.reduceat(cols, starts, axis=-2) / sizes[:, None]


def read_entry(store, i: int) -> np.ndarray:
    """Entry ``i`` of ``store``: an :class:`AttentionStore` by a positioned read
    (``store.read``), since indexing its memory map leaves every touched page resident in the
    process (notebook 06 peaked at 4.7 GB that way); any other sequence is indexed."""
    read = getattr(store, "read", None)
    return read(i) if read is not None else store[i]

"""Attention engine: batched extraction streamed to a content-addressed on-disk store.

Data flow::

    inputs (token ids [+ token-type ids])
      -> batches grouped by length, torch.inference_mode, eager attention
      -> each example's maps cropped to its real length n: (layers, heads, n, n)
      -> float16, written into one flat memory-mapped file at a precomputed offset
      -> AttentionStore: store[i] is a (layers, heads, n_i, n_i) memory-mapped view

Cache layout, ``<cache>/attention/<key>/``:

- ``manifest.json``: key, what the key was derived from, lengths and offsets (written first);
- ``maps.f16``: the flat float16 array, preallocated to its final size;
- ``progress.json``: indices of examples whose maps are flushed to disk (atomic replace after
  every flush), so an interrupted run resumes where it stopped;
- ``COMPLETE``: written last, atomically. A store without it never reads as complete.

The key hashes the model identity (name, weights hash, init, seed), the exact input ids and
token-type ids, the storage dtype and :data:`ENGINE_VERSION`; any change gives a new key.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from .. import paths

ENGINE_VERSION = "1"
STORE_DTYPE = np.float16


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


def cache_key(identity: dict, inputs: Sequence[ModelInput]) -> str:
    """Content address of an extraction: model identity + exact inputs + engine settings."""
    h = hashlib.sha256()
    ident = {k: identity.get(k) for k in ("name", "source", "revision", "weights_sha256",
                                          "init", "seed", "num_layers", "num_heads")}
    h.update(json.dumps({"identity": ident, "dtype": np.dtype(STORE_DTYPE).name,
                         "engine": ENGINE_VERSION}, sort_keys=True).encode())
    for x in inputs:
        h.update(np.asarray(x.input_ids, dtype=np.int64).tobytes())
        h.update(b"|" if x.token_type_ids is None
                 else np.asarray(x.token_type_ids, dtype=np.int64).tobytes())
        h.update(b";")
    return h.hexdigest()[:24]


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class AttentionStore:
    """Read-only view of a completed extraction.

    ``store[i]``: ``(layers, heads, n_i, n_i)`` float16 memory-mapped array (no copy).
    Iterating yields the maps in input order. ``lengths[i]`` is n_i.
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        if not (self.directory / "COMPLETE").exists():
            raise FileNotFoundError(
                f"{self.directory} is not a complete attention store (no COMPLETE marker); "
                "rerun extract_attention to resume it."
            )
        meta = json.loads((self.directory / "manifest.json").read_text())
        self.meta = meta
        self.key: str = meta["key"]
        self.num_layers: int = meta["num_layers"]
        self.num_heads: int = meta["num_heads"]
        self.lengths = np.asarray(meta["lengths"], dtype=np.int64)
        self.offsets = np.asarray(meta["offsets"], dtype=np.int64)
        total = int(meta["total"])
        self._maps = np.memmap(self.directory / "maps.f16", dtype=STORE_DTYPE, mode="r",
                               shape=(total,))
        self.wall_time_s: float | None = meta.get("wall_time_s")

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int) -> np.ndarray:
        n = int(self.lengths[i])
        start = int(self.offsets[i])
        size = self.num_layers * self.num_heads * n * n
        return self._maps[start:start + size].reshape(self.num_layers, self.num_heads, n, n)

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in range(len(self)):
            yield self[i]

    @property
    def nbytes(self) -> int:
        return int(self._maps.nbytes)


def _batches(lengths: np.ndarray, todo: np.ndarray, max_tokens: int, max_batch: int):
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


def _collate(inputs: list[ModelInput], pad_id: int, device: torch.device) -> dict:
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
    if has_types:
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
    progress: bool = True,
    desc: str = "attention",
) -> AttentionStore:
    """Extract attention maps for ``items`` with ``loaded`` (a models.LoadedModel).

    items: ModelInput, dicts or objects with ``input_ids`` (+ ``token_type_ids``), special
    tokens already in place. Returns the AttentionStore; a complete cached store with the
    same key is returned without running the model; a partial one is resumed.
    """
    inputs = as_inputs(items)
    if not inputs:
        raise ValueError("extract_attention got no inputs")
    max_pos = getattr(loaded.model.config, "max_position_embeddings", None)
    too_long = [i for i, x in enumerate(inputs) if max_pos and len(x) > max_pos]
    if too_long:
        raise ValueError(f"{len(too_long)} inputs are longer than the model's "
                         f"{max_pos} positions (first: #{too_long[0]}); truncate them first")
    key = cache_key(loaded.identity, inputs)
    root = paths.cache_dir(cache_dir) / "attention" / key
    if (root / "COMPLETE").exists():
        return AttentionStore(root)

    L, H = loaded.num_layers, loaded.num_heads
    lengths = np.array([len(x) for x in inputs], dtype=np.int64)
    sizes = L * H * lengths**2
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    total = int(sizes.sum())
    root.mkdir(parents=True, exist_ok=True)
    manifest_path, maps_path, progress_path = (root / "manifest.json", root / "maps.f16",
                                               root / "progress.json")
    manifest = {
        "key": key, "engine_version": ENGINE_VERSION, "dtype": np.dtype(STORE_DTYPE).name,
        "identity": loaded.identity, "num_layers": L, "num_heads": H, "n_inputs": len(inputs),
        "lengths": lengths.tolist(), "offsets": offsets.tolist(), "total": total,
    }
    done: set[int] = set()
    resumable = (manifest_path.exists() and maps_path.exists() and progress_path.exists()
                 and maps_path.stat().st_size == total * np.dtype(STORE_DTYPE).itemsize)
    if resumable:
        try:
            old = json.loads(manifest_path.read_text())
            if old.get("key") == key and old.get("total") == total:
                done = set(json.loads(progress_path.read_text())["done"])
        except (json.JSONDecodeError, KeyError):
            done = set()
    if not done:
        progress_path.unlink(missing_ok=True)
        maps_path.unlink(missing_ok=True)
        _atomic_write_text(manifest_path, json.dumps(manifest))
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
    t0, last_flush = time.perf_counter(), time.perf_counter()
    pending: list[int] = []

    def flush() -> None:
        done.update(pending)
        pending.clear()
        _atomic_write_text(progress_path, json.dumps({"done": sorted(done)}))

    bar = tqdm(total=len(inputs), initial=len(done), desc=desc, disable=not progress,
               unit="input")
    try:
        with torch.inference_mode():
            for batch in _batches(lengths, todo, max_tokens, max_batch):
                enc = _collate([inputs[i] for i in batch], pad_id, device)
                out = model(**enc, output_attentions=True)
                if not out.attentions:
                    raise RuntimeError("the model returned no attentions; load it with "
                                       "attn_implementation='eager' (models.load_model does)")
                # float16 per layer on the model's device (no stacked copy of all layers),
                # then each example's cropped maps are copied once into a contiguous block
                # that is written straight from its buffer.
                layers16 = [a.to(torch.float16).cpu().numpy() for a in out.attentions]
                del out
                for b, i in enumerate(batch):
                    n = int(lengths[i])
                    block = np.empty((L, H, n, n), dtype=STORE_DTYPE)
                    for layer, a in enumerate(layers16):
                        block[layer] = a[b, :, :n, :n]
                    os.pwrite(fd, memoryview(block).cast("B"), int(offsets[i]) * itemsize)
                    pending.append(i)
                bar.update(len(batch))
                if time.perf_counter() - last_flush > flush_every_s:
                    flush()
                    last_flush = time.perf_counter()
            flush()
    finally:
        os.close(fd)
        bar.close()
    manifest["wall_time_s"] = round(time.perf_counter() - t0, 3)
    _atomic_write_text(manifest_path, json.dumps(manifest))
    _atomic_write_text(root / "COMPLETE", key)
    progress_path.unlink(missing_ok=True)
    return AttentionStore(root)


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

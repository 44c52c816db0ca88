"""Cost of the attention store's checksums, measured in one run on a real store.

Extracts Wikipedia segments with the packaged model into a fresh temporary cache and prints:

1. write side: the time spent in ``sum64`` during the extraction (timed around each call, on
   the block just built in memory, before its pwrite) as a share of a cold read of maps.f16
   (target < 5%) and of the extraction; then the same work replayed three times on blocks
   rebuilt layer by layer from the store (best of three: less exposed to other processes);
2. read side: iterating ``store[i]`` from a cold page cache and reducing each entry (float32
   sum, the least work any analysis does), with and without the per-entry check on first read;
3. the full check of ``check-cache`` (every entry, positioned reads) from a cold page cache;
4. for comparison, zlib.crc32 and sum64 on the same entries, freshly copied (hot in cache).

"Cold" means the file's pages were dropped from the page cache with
``posix_fadvise(POSIX_FADV_DONTNEED)`` after an fsync (no root needed); on a virtual machine the
host may still cache the disk, so cold reads here can be faster than on bare hardware, which
only lowers the percentages of (1).

Usage: ``python benchmarks/bench_checksums.py [--model minilm] [--n 400]``. Run it once on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from analysis_utils.data import wikitext
from analysis_utils.engine import attention
from analysis_utils.engine.models import load_model


def _drop_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _cold_read(path: Path, chunk: int = 8 << 20) -> float:
    """Seconds to read the whole file sequentially after dropping it from the page cache."""
    _drop_cache(path)
    buf = bytearray(chunk)
    fd = os.open(path, os.O_RDONLY)
    t0 = time.perf_counter()
    try:
        while os.readv(fd, [buf]):
            pass
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def _replay_write_checksums(directory: Path) -> float:
    """Seconds of sum64 work of the write loop, replayed: each entry's block is rebuilt layer by
    layer (a copy, as the loop makes it) and summed the way extract_attention sums it. Entries
    come from positioned reads: pages touched through a memory map that stays open could not be
    dropped from the page cache for the cold measurements."""
    store = attention.AttentionStore(directory)
    spent = 0.0
    itemsize = store._maps.itemsize
    for i in range(len(store)):
        src = store.read(i)
        n = src.shape[-1]
        block = np.empty_like(src)
        by_layer = (store.num_heads * n * n * itemsize) % 8 == 0
        for layer in range(store.num_layers):
            block[layer] = src[layer]
            if by_layer:
                t0 = time.perf_counter()
                attention.sum64(block[layer])
                spent += time.perf_counter() - t0
        if not by_layer:
            t0 = time.perf_counter()
            attention.sum64(block)
            spent += time.perf_counter() - t0
    return spent


def _iterate(directory: Path, verify: bool, cold: bool) -> float:
    if cold:
        _drop_cache(directory / "maps.f16")
    store = attention.AttentionStore(directory, verify_reads=verify)
    t0 = time.perf_counter()
    for i in range(len(store)):
        store[i].sum(dtype=np.float32)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--n", type=int, default=400)
    args = ap.parse_args()

    lm = load_model(args.model)
    _, segset = wikitext.wikipedia_segments(lm.tokenizer, "valid,test", n=args.n, seed=0)
    inputs = attention.as_inputs(segset.segments)

    spent = [0.0]
    real_sum64 = attention.sum64

    def timed_sum64(data):
        t0 = time.perf_counter()
        out = real_sum64(data)
        spent[0] += time.perf_counter() - t0
        return out

    with tempfile.TemporaryDirectory() as tmp:
        attention.sum64 = timed_sum64
        try:
            t0 = time.perf_counter()
            store = attention.extract_attention(lm, inputs, cache_dir=tmp, progress=False)
            extract = time.perf_counter() - t0
        finally:
            attention.sum64 = real_sum64
        directory, n_entries, gb = store.directory, len(store), store.nbytes / 1e9
        del store  # no memory map may stay open on the file (see _replay_write_checksums)
        maps = directory / "maps.f16"
        cold = min(_cold_read(maps) for _ in range(3))
        print(f"model {lm.identity['name']}, {n_entries} segments, maps.f16 {gb:.3f} GB; "
              f"extraction {extract:.2f} s; cold read {cold:.3f} s ({gb / cold:.2f} GB/s)")
        print(f"[1] sum64 while writing: {spent[0] * 1000:.1f} ms = "
              f"{100 * spent[0] / cold:.1f}% of a cold read (target < 5%), "
              f"{100 * spent[0] / extract:.2f}% of the extraction")
        replay = min(_replay_write_checksums(directory) for _ in range(3))
        print(f"    replayed, best of 3: {replay * 1000:.1f} ms = {100 * replay / cold:.1f}% of a "
              f"cold read ({gb / replay:.1f} GB/s)")

        runs: dict[tuple[bool, bool], list[float]] = {}
        for _ in range(3):
            for cold_cache in (True, False):
                for verify in (False, True):
                    runs.setdefault((verify, cold_cache), []).append(
                        _iterate(directory, verify, cold_cache))
        plain, checked = min(runs[False, True]), min(runs[True, True])
        plain_w, checked_w = min(runs[False, False]), min(runs[True, False])
        print(f"[2] read every entry (float32 sum; best of 3), cold: {plain:.3f} s unchecked, "
              f"{checked:.3f} s checked on first read (+{100 * (checked / plain - 1):.1f}%); "
              f"warm: {plain_w:.3f} s vs {checked_w:.3f} s "
              f"(+{100 * (checked_w / plain_w - 1):.1f}%)")

        _drop_cache(maps)
        t0 = time.perf_counter()
        res = attention.check_store(directory)
        full = time.perf_counter() - t0
        print(f"[3] full check (check-cache) from cold: {full:.3f} s, "
              f"{100 * full / cold:.0f}% of a cold read; status {res.status}")

        t_crc = t_sum = 0.0
        store = attention.AttentionStore(directory)
        for i in range(len(store)):
            block = store.read(i).copy()
            t0 = time.perf_counter()
            zlib.crc32(block)
            t_crc += time.perf_counter() - t0
            block = store.read(i).copy()
            t0 = time.perf_counter()
            real_sum64(block)
            t_sum += time.perf_counter() - t0
        print(f"[4] on hot blocks: sum64 {gb / t_sum:.1f} GB/s ({100 * t_sum / cold:.1f}% of a "
              f"cold read), zlib.crc32 {gb / t_crc:.1f} GB/s ({100 * t_crc / cold:.1f}%)")


if __name__ == "__main__":
    main()

"""Benchmark of the attention engine, measured in one run on the same model and batches.

Prints three figures (targets from the foundation issue):

1. throughput of extraction with maps captured and stored, divided by that of a bare forward
   pass without attention output (target >= 0.85);
2. peak resident memory of extracting the segments, above the loaded model (target < 1.5 GB);
3. time to re-open the store from a warm cache, relative to extraction (target >= 20x faster).

Usage: ``python benchmarks/bench_extraction.py [--model minilm] [--n 1000] [--repeats 2]``.
The extraction runs into a fresh temporary cache each repeat; the bare pass uses exactly the
batches the engine forms. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from analysis_utils.data import wikitext
from analysis_utils.engine import attention
from analysis_utils.engine.models import load_model


def _segments(tokenizer, n: int):
    _, segset = wikitext.wikipedia_segments(tokenizer, "valid,test", n=n, seed=0)
    return attention.as_inputs(segset.segments)


def _bare(lm, inputs, max_tokens=8192, max_batch=64) -> float:
    lengths = np.array([len(x) for x in inputs])
    t0 = time.perf_counter()
    with torch.inference_mode():
        for batch in attention.length_batches(lengths, np.arange(len(inputs)), max_tokens, max_batch):
            enc = attention.collate([inputs[i] for i in batch], lm.tokenizer.pad_token_id or 0,
                                     lm.device)
            lm.model(**enc, output_attentions=False)
    return time.perf_counter() - t0


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(field)


def memory_child(model: str, n: int) -> None:
    """Run in a subprocess: peak RSS of one extraction above the loaded model + inputs."""
    lm = load_model(model)
    inputs = _segments(lm.tokenizer, n)
    _bare(lm, inputs[:64])  # warm-up allocations of the forward pass itself
    base = _rss_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    with tempfile.TemporaryDirectory() as tmp:
        attention.extract_attention(lm, inputs, cache_dir=tmp, progress=False)
        peak = _rss_kb("VmHWM")
    print(json.dumps({"base_mb": base / 1024, "peak_mb": peak / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args.model, args.n)
        return

    torch.manual_seed(0)
    lm = load_model(args.model)
    inputs = _segments(lm.tokenizer, args.n)
    n_tok = sum(len(x) for x in inputs)
    print(f"model {lm.identity['name']} ({lm.num_layers}x{lm.num_heads}) on {lm.device}, "
          f"torch threads {torch.get_num_threads()}; {len(inputs)} segments, {n_tok} tokens")
    _bare(lm, inputs[:64])  # warm-up

    bare, extract, warm = [], [], []
    for _ in range(args.repeats):
        bare.append(_bare(lm, inputs))
        tmp = tempfile.mkdtemp()
        try:
            t0 = time.perf_counter()
            store = attention.extract_attention(lm, inputs, cache_dir=tmp, progress=False)
            extract.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            again = attention.extract_attention(lm, inputs, cache_dir=tmp, progress=False)
            warm.append(time.perf_counter() - t0)
            assert again.directory == store.directory
            size_gb = store.nbytes / 1e9
        finally:
            shutil.rmtree(tmp)
    b, e, w = min(bare), min(extract), min(warm)
    print(f"bare forward (no attention output): {b:.2f} s  ({n_tok / b:,.0f} tokens/s)")
    print(f"extract + store float16 maps ({size_gb:.2f} GB): {e:.2f} s  ({n_tok / e:,.0f} tokens/s)")
    print(f"[1] throughput ratio extract/bare = {b / e:.3f}   (target >= 0.85)")

    out = subprocess.run([sys.executable, __file__, "--memory-child", "--model", args.model,
                          "--n", str(args.n)], check=True, capture_output=True, text=True)
    mem = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"[2] peak RSS above loaded model = {mem['peak_mb'] - mem['base_mb']:.0f} MB "
          f"(loaded: {mem['base_mb']:.0f} MB; target < 1500 MB)")
    print(f"[3] warm-cache rerun {w * 1000:.1f} ms vs extraction {e:.2f} s = {e / w:,.0f}x faster "
          f"(target >= 20x)")


if __name__ == "__main__":
    main()

"""Benchmark of the disabling sweep (notebook 07, Kovaleva et al. 2019 Figures 8-9), measured
in one run on one task with one model.

The full sweep (the unchanged model, every single head, every layer) is run twice over the
same length-sorted batches under ``torch.inference_mode``:

- naive: one full dev evaluation per change (``evaluate_changes(fast=False)``);
- fast: per batch one plain pass caches what enters each layer, then each change runs from
  its lowest changed layer upward (``evaluate_changes(fast=True)``).

It asserts that the logits are bit-identical and every change's metrics equal, and prints
wall and CPU time, the speed-up (target >= 1.8x) and evaluations per minute.

A third arm times the fast sweep with the full last layer (``first_token=False``): both arms
above run the last layer's feed-forward step on the first token only, the one position the
classifier reads (:mod:`analysis_utils.engine.first_token`). It prints that step's saving and
the largest logit difference, and asserts that the logits agree to float rounding and every
change's metrics are equal.

Shared machines are rarely idle, and a load that changes between two long runs decides
their ratio. So both ways are timed batch by batch, alternating which goes first: each call
gets the examples of one of the sweep's own length-sorted batches (which it runs as that one
batch), so the summed times are those of the two full sweeps, under the same load.

Without ``--model-dir`` (a fine-tuned sequence-classification folder) the packaged MiniLM
(6 layers x 12 heads) gets a randomly initialised classification head (seed 0): the metrics
are then meaningless, the timing and the identity check are not.

Usage: ``python benchmarks/bench_disabling.py [--task MRPC] [--n 200] [--threads 1]
[--model-dir DIR] [--mode uniform] [--device cpu]``. Run it on an otherwise idle machine; CPU
time is printed beside wall time because shared machines are rarely idle.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from analysis_utils.analyses import disabling, significance
from analysis_utils.data import glue
from analysis_utils.engine import attention as _attention
from analysis_utils.engine.models import minilm_path, resolve_device


def _labels(examples, model) -> np.ndarray:
    """Gold labels as the model's class ids (RTE/QNLI labels are strings)."""
    raw = [ex.label for ex in examples]
    if all(isinstance(x, (int, float)) for x in raw):
        return np.asarray(raw)
    label2id = {str(k): int(v) for k, v in (model.config.label2id or {}).items()}
    names = sorted(set(raw))
    mapping = label2id if set(names) <= set(label2id) else {k: i for i, k in enumerate(names)}
    return np.array([mapping[x] for x in raw])


def _timed(fn, device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="MRPC")
    ap.add_argument("--n", type=int, default=200, help="first n dev examples")
    ap.add_argument("--model-dir", default=None, help="fine-tuned model folder (default: "
                    "packaged MiniLM with a random classification head)")
    ap.add_argument("--mode", default="uniform", choices=disabling.MODES)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--max-tokens", type=int, default=2048,
                    help="padded tokens per batch (the sweep's batching)")
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    source = args.model_dir or str(minilm_path())
    tokenizer = AutoTokenizer.from_pretrained(source)
    examples = glue.read_glue(args.task, "dev", max_examples=args.n)
    torch.manual_seed(0)
    n_labels = 1 if args.task == "STS-B" else len({ex.label for ex in examples})
    kwargs = {} if args.model_dir else {"num_labels": max(n_labels, 2)}
    model = AutoModelForSequenceClassification.from_pretrained(
        source, attn_implementation="eager", **kwargs).to(device).eval()
    enc = glue.encode(examples, tokenizer)
    labels = _labels(examples, model)
    cfg = model.config
    changes = ([disabling.baseline_change()]
               + disabling.head_changes(cfg.num_hidden_layers, cfg.num_attention_heads, args.mode)
               + disabling.layer_changes(cfg.num_hidden_layers, cfg.num_attention_heads,
                                         args.mode))
    metrics = ({"pearson": significance.pearson} if args.task == "STS-B" else
               {"accuracy": significance.accuracy, "f1": significance.f1})
    n_tok = sum(len(x) for x in enc)
    print(f"{args.task} dev: {len(enc)} examples, {n_tok} tokens (mean {n_tok / len(enc):.1f}); "
          f"model {'fine-tuned ' + args.model_dir if args.model_dir else 'MiniLM + random head'}"
          f" ({cfg.num_hidden_layers}x{cfg.num_attention_heads}) on {device}, torch threads "
          f"{torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    print(f"sweep: {len(changes)} evaluations (1 baseline + "
          f"{cfg.num_hidden_layers * cfg.num_attention_heads} heads + {cfg.num_hidden_layers} "
          f"layers), mode {args.mode}; batches of <= {args.max_tokens} padded tokens")

    lengths = np.array([len(x) for x in enc])
    batches = list(_attention.length_batches(lengths, np.arange(len(enc)), args.max_tokens, 64))
    disabling.evaluate_changes(model, enc[:16], changes[:2], max_tokens=args.max_tokens)  # warm-up
    logits = {}
    arms = (True, False, "full")  # fast, naive, fast with the full last layer
    wall = {a: 0.0 for a in arms}
    cpu = {a: 0.0 for a in arms}
    for i, idx in enumerate(batches):
        sub = [enc[j] for j in idx]
        assert len(list(_attention.length_batches(lengths[idx], np.arange(len(idx)), args.max_tokens,
                                            64))) == 1
        for arm in arms[i % 3:] + arms[:i % 3]:  # each arm goes first in turn
            out, w, c = _timed(lambda arm=arm, sub=sub: disabling.evaluate_changes(
                model, sub, changes, fast=arm is not False, first_token=arm != "full",
                max_tokens=args.max_tokens), device)
            logits.setdefault(arm, np.zeros((len(changes), len(enc), out.shape[-1]),
                                            dtype=np.float32))[:, idx] = out
            wall[arm] += w
            cpu[arm] += c
    fast, naive, full = logits[True], logits[False], logits["full"]
    fast_wall, naive_wall, fast_cpu, naive_cpu = wall[True], wall[False], cpu[True], cpu[False]
    full_diff = float(np.abs(fast - full).max())
    preds_full = disabling.predictions_from_logits(full)
    same_full = bool(np.array_equal(preds_full, disabling.predictions_from_logits(fast)))
    from analysis_utils.engine.first_token import ATOL, RTOL
    assert np.allclose(fast, full, rtol=RTOL, atol=ATOL), f"first-token logits differ by {full_diff}"

    identical_logits = bool(np.array_equal(fast, naive))
    preds_fast = disabling.predictions_from_logits(fast)
    preds_naive = disabling.predictions_from_logits(naive)
    table = {name: [(float(m(labels, a)), float(m(labels, b)))
                    for a, b in zip(preds_fast, preds_naive, strict=True)]
             for name, m in metrics.items()}
    assert all(a == b for rows in table.values() for a, b in rows), "metrics differ"
    assert identical_logits, f"logits differ by up to {np.abs(fast - naive).max():.3g}"

    k = len(changes)
    result = {
        "task": args.task, "n": len(enc), "tokens": n_tok, "evaluations": k,
        "model": args.model_dir or "minilm+random-head", "device": str(device),
        "threads": torch.get_num_threads(), "mode": args.mode, "batches": len(batches),
        "max_tokens": args.max_tokens,
        "fast_wall_s": round(fast_wall, 2), "naive_wall_s": round(naive_wall, 2),
        "fast_cpu_s": round(fast_cpu, 2), "naive_cpu_s": round(naive_cpu, 2),
        "speedup_wall": round(naive_wall / fast_wall, 3),
        "speedup_cpu": round(naive_cpu / fast_cpu, 3),
        "evals_per_min_fast": round(60 * k / fast_wall, 1),
        "evals_per_min_naive": round(60 * k / naive_wall, 1),
        "identical_logits": identical_logits, "identical_metrics": True,
        "full_last_layer_wall_s": round(wall["full"], 2),
        "full_last_layer_cpu_s": round(cpu["full"], 2),
        "first_token_saving_wall": round(1 - fast_wall / wall["full"], 3),
        "first_token_max_logit_diff": full_diff,
        "first_token_same_predictions": same_full,
        "baseline": {name: rows[0][0] for name, rows in table.items()},
        "load_average_end": round(os.getloadavg()[0], 1), "machine": platform.processor(),
        "torch": torch.__version__,
    }
    print(f"naive (one full evaluation per change): {naive_wall:.1f} s wall, {naive_cpu:.1f} s "
          f"CPU -> {result['evals_per_min_naive']} evaluations/min")
    print(f"fast (cached layers below the change):  {fast_wall:.1f} s wall, {fast_cpu:.1f} s CPU "
          f"-> {result['evals_per_min_fast']} evaluations/min")
    print(f"speed-up {result['speedup_wall']:.2f}x wall, {result['speedup_cpu']:.2f}x CPU "
          f"(target >= 1.8x); logits bit-identical: {identical_logits}; metrics identical for "
          f"all {k} evaluations: True")
    print(f"fast with the full last layer:          {wall['full']:.1f} s wall, "
          f"{cpu['full']:.1f} s CPU; the first-token last layer saves "
          f"{result['first_token_saving_wall']:.1%} of the wall time; logits differ by at most "
          f"{full_diff:.2g}; predictions identical: {same_full}")
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()

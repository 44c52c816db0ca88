"""Benchmark of the fine-tuning engine: dynamic padding with length-grouped batches against
fixed 128-token padding (what Kovaleva et al.'s run_classifier.py did), on the same examples.

For each task (default MRPC and SST-2) it draws ``--n`` train examples (seeded), then trains
one epoch of the paper's settings (batch 32, lr 5e-5, max length 128) twice from the same
initial weights, through the same ``Trainer`` the notebook uses (no evaluation, no
checkpoints), once per padding scheme, and prints per scheme: examples per second, seconds
for the epoch (and CPU seconds of this process, which other jobs on a shared machine inflate
less than wall time), the share of real (non-padding) tokens in the batches, and the time one
epoch over the task's full train set would take at that rate per padded token (its batches
are counted with the same sampler: length grouping works in mega-batches of up to 50
batches, so a few hundred examples group worse than a full train set does). The last line
per task is the speed-up (target: at least 2x on SST-2, whose sentences are short).

Usage: ``python benchmarks/bench_finetune.py [--model minilm] [--tasks MRPC SST-2] [--n 256]
[--threads N] [--json FILE]``. Needs the gold data (``BERTOLOGY_DATA_DIR``). Run it on an
otherwise idle machine; on a shared one both schemes are slowed alike, so the ratio holds up
better than the absolute rates.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time

import numpy as np
import torch

from analysis_utils.engine.models import load_model
from analysis_utils.training import classifier, glue_data
from analysis_utils.training import trainer as ft_trainer
from analysis_utils.training.loop import seeded, torch_threads

SCHEMES = {
    "dynamic + length-grouped": {"dynamic_padding": True, "group_by_length": True},
    "fixed 128": {"dynamic_padding": False, "group_by_length": False},
}


def real_token_share(trainer, dataset) -> float:
    """Real tokens / all tokens (padding included) over one epoch of the trainer's batches."""
    real = padded = 0
    for batch in trainer.get_train_dataloader():
        real += int(batch["attention_mask"].sum())
        padded += batch["attention_mask"].numel()
    return real / padded


def padded_tokens(lengths, settings, seed: int) -> int:
    """Tokens one epoch feeds the model, padding included, with the batches the trainer
    forms (length grouping needs the whole set: its mega-batches are up to 50 batches)."""
    lengths = np.asarray(lengths)
    bs = settings.batch_size
    if not settings.dynamic_padding:
        return len(lengths) * settings.max_length
    if settings.group_by_length:
        sampler = ft_trainer._epoch_seeded_length_sampler(bs, lengths.tolist(), seed)
        sampler.set_epoch(0)
        order = np.fromiter(iter(sampler), dtype=np.int64)
    else:
        order = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(seed))
        order = order.numpy()
    ordered = lengths[order]
    return int(sum(len(b) * b.max() for b in np.split(ordered, range(bs, len(ordered), bs))))


def time_epoch(lm, task: str, dataset, settings, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, seeded(seed):
        model = classifier.build_classifier(lm, task, seed)
        trainer = ft_trainer.build_trainer(model, lm.tokenizer, dataset, None, settings, seed, tmp,
                                   save_checkpoints=False, progress=False)
        share = real_token_share(trainer, dataset)
        t0, c0 = time.perf_counter(), time.process_time()
        trainer.train()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"seconds": seconds, "cpu_seconds": cpu, "examples_per_s": len(dataset) / seconds,
            "real_token_share": share}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--tasks", nargs="+", default=["MRPC", "SST-2"])
    ap.add_argument("--n", type=int, default=256, help="train examples per task and scheme")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args()

    lm = load_model(args.model, device="cpu")
    base = ft_trainer.FinetuneSettings(epochs=1, eval_each_epoch=False)
    results = {"model": lm.identity["name"], "n": args.n, "device": "cpu",
               "threads": args.threads or torch.get_num_threads(), "tasks": {}}
    print(f"{lm.identity['name']}, one epoch of {args.n} train examples per task and scheme, "
          f"batch {base.batch_size}, max length {base.max_length}, "
          f"{results['threads']} torch threads")
    with torch_threads(args.threads):
        # warm-up: first-call costs (allocator, kernels) must not count against one scheme
        warm = glue_data.read_task(args.tasks[0], "train")[:2 * base.batch_size]
        time_epoch(lm, args.tasks[0], glue_data.task_dataset(args.tasks[0], warm, lm.tokenizer), base,
                   args.seed)
        for task in args.tasks:
            full = glue_data.read_task(task, "train")
            examples, _ = glue_data.subsample(full, args.n, seed=0)
            dataset = glue_data.task_dataset(task, examples, lm.tokenizer, base.max_length)
            full_lengths = glue_data.task_dataset(task, full, lm.tokenizer, base.max_length).lengths
            rows = {}
            for name, change in SCHEMES.items():
                r = time_epoch(lm, task, dataset, dataclasses.replace(base, **change), args.seed)
                scheme = dataclasses.replace(base, **change)
                # the full set's epoch costs what its padded tokens cost at this run's rate
                scale = (padded_tokens(full_lengths, scheme, args.seed)
                         / padded_tokens(dataset.lengths, scheme, args.seed))
                r["full_epoch_s"] = r["seconds"] * scale
                r["full_epoch_cpu_s"] = r["cpu_seconds"] * scale
                r["full_real_token_share"] = (sum(full_lengths)
                                              / padded_tokens(full_lengths, scheme, args.seed))
                rows[name] = r
                print(f"  {task:6s} {name:26s} {r['examples_per_s']:7.1f} examples/s  "
                      f"{r['seconds']:6.1f} s/epoch ({len(dataset)} examples, "
                      f"{r['cpu_seconds']:.1f} CPU s), real tokens "
                      f"{100 * r['real_token_share']:4.1f}%; full train set ({len(full)}, "
                      f"{100 * r['full_real_token_share']:4.1f}% real): "
                      f"{r['full_epoch_s'] / 60:5.1f} min/epoch "
                      f"({r['full_epoch_cpu_s'] / 60:.1f} CPU min)")
            fast, slow = rows["dynamic + length-grouped"], rows["fixed 128"]
            speedup = fast["examples_per_s"] / slow["examples_per_s"]
            rows["speedup"] = speedup
            rows["mean_length"] = float(np.mean(dataset.lengths))
            print(f"  {task:6s} speed-up {speedup:.2f}x (mean length "
                  f"{rows['mean_length']:.1f} word pieces)")
            results["tasks"][task] = rows
            sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()

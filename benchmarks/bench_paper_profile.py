"""What a full ``paper`` run (BERT-base: 12 layers x 12 heads, hidden 768) costs on this
machine, from measured rates of a randomly initialised model of that shape.

It builds the same folder as the ``bert_base_dir`` test fixture (``BertConfig()`` defaults,
the packaged uncased tokenizer, seed 0; random weights run exactly as fast as trained ones),
loads it with ``load_model`` and measures, through the package's own code:

1. attention extraction (forward with attention output, maps stored) per 128-token
   Wikipedia segment (notebooks 01, 03, 05);
2. the same per EWT dev sentence (notebooks 02, 04; also the rate of the GLUE and FrameNet
   inputs whose maps 05-07 extract);
3. one fine-tuning epoch with the paper's settings (batch 32, lr 5e-5, length 128,
   dynamic padding, length-grouped batches; the Trainer notebook 06 uses) per train example
   of SST-2 (single sentences) and MRPC (pairs), and per padded token;
4. on a sequence-classification head over the same encoder, per dev example of SST-2 and
   MRPC: a plain forward (dev scoring, baselines, pruning curves) and a whole disabling
   sweep of notebook 07 (the unchanged model, each of the 144 heads, each of the 12 layers;
   ``disabling.evaluate_changes``, fast path), timed on the unchanged model plus one head
   per layer and scaled to the 157 changes (a change costs the layers from its own up).

It then counts, from the data and each notebook's parameters cell (the defaults are the full
run; the ``paper`` profile changes only the model), the forward and training passes every
notebook makes, and prints the expected model time per notebook at these rates. The
notebooks' own analysis (statistics, probe and CNN training, JS distances, bootstrap) comes
on top; the committed default run's wall time (all-MiniLM-L6-v2, attention maps already
cached) is printed beside it as a rough measure of that part (it grows with the number of
heads, 144 here against 72).

Usage: ``python benchmarks/bench_paper_profile.py [--threads N] [--segments 16]
[--sentences 64] [--train 64] [--json FILE]``. Needs the gold data (``BERTOLOGY_DATA_DIR``).
Run it on an otherwise idle machine; another job on the same cores inflates every rate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from analysis_utils import params, paths
from analysis_utils.data import glue, manifest, ontogum, treebank, wikitext
from analysis_utils.data import labels as sheets
from analysis_utils.engine import attention, wordmaps
from analysis_utils.engine.models import load_model, quiet_loading, save_bert_base_shape
from analysis_utils.training import glue_data, plan, trainer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_finetune import padded_tokens, time_epoch  # noqa: E402


def defaults(prefix: str) -> dict:
    (source,) = sorted(paths.NOTEBOOKS_DIR.glob(f"{prefix}_*.py"))
    return params.read_parameters(source)


class Clock:
    """Wall and CPU seconds of this process for the block: ``clock.seconds`` is
    ``np.array([wall, cpu])``. With one torch thread, CPU seconds are what the block takes on
    an idle core; wall seconds include what other jobs on the machine took from it."""

    def __enter__(self) -> Clock:
        self._t = np.array([time.perf_counter(), time.process_time()])
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = np.array([time.perf_counter(), time.process_time()]) - self._t


def extraction_rate(lm, inputs) -> tuple[np.ndarray, int]:
    """([wall, cpu] seconds per input, tokens) of extracting and storing the maps of
    ``inputs``."""
    with tempfile.TemporaryDirectory() as tmp:
        attention.extract_attention(lm, inputs[:2], cache_dir=tmp, progress=False)  # warm-up
    with tempfile.TemporaryDirectory() as tmp, Clock() as clock:
        attention.extract_attention(lm, inputs, cache_dir=tmp, progress=False)
    return clock.seconds / len(inputs), sum(len(x.input_ids)
                                            for x in attention.as_inputs(inputs))


def classifier_rates(folder: Path, tok, task: str, n: int):
    """([wall, cpu] seconds per dev example of a plain forward, the same of a whole 157-change
    disabling sweep, pieces per example) of a BERT-base-shaped classifier on ``n`` dev
    examples of ``task``."""
    from transformers import AutoModelForSequenceClassification

    from analysis_utils.analyses import disabling

    with quiet_loading(True):
        model = AutoModelForSequenceClassification.from_pretrained(
            folder, num_labels=1 if task == "STS-B" else 2, attn_implementation="eager")
    inputs = glue.encode(glue.read_glue(task, max_examples=n), tok, max_tokens=128).inputs
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    every = disabling.head_changes(layers, heads) + disabling.layer_changes(layers, heads)
    sample = [c for c in disabling.head_changes(layers, heads) if c.heads[0][1] == 0]
    disabling.evaluate_changes(model, inputs[:2], [disabling.baseline_change()])  # warm-up
    with Clock() as clock:
        disabling.evaluate_changes(model, inputs, [disabling.baseline_change()])
    plain = clock.seconds
    with Clock() as clock:
        disabling.evaluate_changes(model, inputs, [disabling.baseline_change(), *sample])
    sampled = clock.seconds
    per_change = (sampled - plain) / len(sample)  # the plain pass is paid once per batch
    sweep = plain + per_change * len(every)
    return plain / n, sweep / n, sum(len(x.input_ids) for x in inputs) // n


def ewt(tok, splits: str) -> list:
    sentences = []
    for split in splits.split(","):
        sentences += treebank.read_conllu(
            manifest.require(f"ud-english-ewt/en_ewt-ud-{split}.conllu"))
    return wordmaps.encode_corpus(tok, [s.words for s in sentences], max_length=512).encoded


def glue_dev_tokens(tok, task: str, n: int | None = None, max_tokens: int = 128) -> int:
    enc = glue.encode(glue.read_glue(task, max_examples=n or None), tok, max_tokens=max_tokens)
    return sum(len(x.input_ids) for x in enc.inputs)


def framenet_tokens(tok) -> dict[str, int]:
    """Word pieces of the FrameNet sentences of each reading (06 scores all three, 07
    'exact'), as the notebooks encode them."""
    from analysis_utils.data import framenet

    exemplars = framenet.read_exemplars()
    return {name: sum(len(wordmaps.encode_words(tok, s.words))
                      for s in framenet.select_sentences(exemplars, name).sentences)
            for name in framenet.READINGS}


def count_work(tok, rates: dict) -> dict[str, dict]:
    """Model seconds per notebook at ``rates`` (seconds per token: ``long`` 128-piece inputs
    with maps, ``short`` sentences with maps; per padded token of a fine-tuning step, per
    token of a classifier forward and of a whole disabling sweep, ``*_single`` for SST-2 and
    CoLA, ``*_pair`` for the sentence-pair tasks), with what was counted."""
    out: dict[str, dict] = {}
    short, long_ = rates["short"], rates["long"]

    def rate(kind: str, task: str) -> float:
        return rates[f"{kind}_{'single' if task in ('SST-2', 'CoLA') else 'pair'}"]

    p = defaults("01")
    _, segset = wikitext.wikipedia_segments(tok, p["wikitext_splits"], n=p["n_segments"],
                                            max_tokens=p["max_tokens"], seed=p["seed"],
                                            policy=p["truncation"])
    seg_tokens = sum(len(s.input_ids) for s in segset.segments)
    mean_seg = seg_tokens / len(segset.segments)
    n_norm = min(p.get("n_norm_segments", 0), len(segset.segments))
    out["01"] = {"seconds": 2 * (seg_tokens + n_norm * mean_seg) * long_
                 + p["n_grad_segments"] * mean_seg * rates["train_pair"],
                 "work": f"{len(segset.segments)} segments x 2 models, again for the norms "
                         f"({n_norm}); gradients of {p['n_grad_segments']} segments (own "
                         "masked-LM head: no fitting)"}

    p = defaults("02")
    n = sum(len(e) for e in ewt(tok, p["ewt_splits"]))
    out["02"] = {"seconds": 2 * n * short,
                 "work": f"EWT {p['ewt_splits']} ({n:,} pieces) x 2 models"}

    p = defaults("03")
    docs = [d for split in p["ontogum_splits"].split(",")
            for d in ontogum.read_ontogum_split(paths.data_dir(), split)]
    from analysis_utils.analyses import coref

    wins = [w for d in docs for w in coref.windows(
        d, lambda ws: wordmaps.piece_counts(tok, ws), max_pieces=p["max_pieces"],
        n_special=wordmaps.n_special_tokens(tok), whole_sentences=p["whole_sentences"],
        first_only=p["first_only"])]
    n = sum(len(e) for e in wordmaps.encode_corpus(tok, [w.words for w in wins],
                                                   max_length=p["max_pieces"]).encoded)
    out["03"] = {"seconds": 2 * n * long_,
                 "work": f"{len(wins):,} OntoGUM windows ({n:,} pieces) x 2 models"}

    p = defaults("04")
    n = sum(len(e) for e in ewt(tok, "train,dev,test"))
    out["04"] = {"seconds": 2 * n * short,
                 "work": f"EWT train+dev+test ({n:,} pieces) x 2 models; probe training on top"}

    p = defaults("05")
    labels = sheets.load_labels()
    n_label_inputs = len(labels[["source", "example"]].drop_duplicates())
    tasks = glue.available_tasks()
    glue_tokens = sum(glue_dev_tokens(tok, t, p["glue_max_examples"]) for t in tasks)
    out["05"] = {"seconds": n_label_inputs * mean_seg * long_ + glue_tokens * short,
                 "work": f"segments cached by 01; {n_label_inputs} labelled inputs; "
                         f"{p['glue_max_examples']} dev examples x {len(tasks)} GLUE tasks"}

    p = defaults("06")
    runs = plan.runs(p["tasks"], p["seeds"], p["multi_seed_tasks"], p["train_subsets"],
                     p["random_init"])
    settings = trainer.FinetuneSettings(epochs=p["epochs"], batch_size=p["batch_size"],
                                   max_length=p["max_tokens"])
    train_s = eval_s = 0.0
    dev_tokens, train_tokens = {}, {}
    for task in plan.parse_tasks(p["tasks"]):
        dev_tokens[task] = glue_dev_tokens(tok, task)
        examples = glue_data.read_task(task, "train")
        limit = plan.parse_limits(p["train_subsets"]).get(task)
        if limit:
            examples, _ = glue_data.subsample(examples, limit, seed=p["subset_seed"])
        lengths = glue_data.task_dataset(task, examples, tok, settings.max_length).lengths
        train_tokens[task] = (padded_tokens(lengths, settings, seed=42), len(lengths))
    for r in runs:
        train_s += p["epochs"] * train_tokens[r.task][0] * rate("train", r.task)
        eval_s += p["epochs"] * dev_tokens[r.task] * rate("fwd", r.task)  # after every epoch
    pretrained = [r for r in runs if r.init == "pretrained"]
    baselines = sum((train_tokens[t][0] + 2 * dev_tokens[t]) * rate("fwd", t)
                    for t in dev_tokens)
    maps = sum(glue_dev_tokens(tok, t, p["n_examples"])
               * (2 + sum(r.task == t for r in pretrained)) for t in dev_tokens) * short
    padded = len(dev_tokens) * 2 * p["padded_examples"] * p["max_tokens"] * long_
    fn_tokens = framenet_tokens(tok)
    framenet = (sum(fn_tokens.values()) + fn_tokens["exact"]) * short  # + the control's
    out["06"] = {"seconds": train_s + eval_s + baselines + maps + padded + framenet,
                 "work": f"{len(runs)} fine-tuning runs x {p['epochs']} epochs "
                         f"({train_s[1] / 3600:.1f} CPU h of it), dev scoring, baselines, maps of "
                         f"{p['n_examples']} dev examples per task and model, FrameNet"}

    p = defaults("07")
    runs = plan.runs(p["tasks"], p["seeds"], p["multi_seed_tasks"], p["train_subsets"])
    modes = p["modes"].split(",")
    n_heads = 12 * 12
    changes = n_heads + 12 + 1  # every head, every layer, the unchanged model
    first_seed = {r.task: r.seed for r in reversed(runs)}
    sweep_s = importance_s = prune_s = 0.0
    for r in runs:
        first = first_seed[r.task] == r.seed
        n_modes = len(modes) if (first or not p["extras_first_seed_only"]) else 1
        sweep_s += n_modes * dev_tokens[r.task] * rate("sweep", r.task)
        mean_train = train_tokens[r.task][0] / train_tokens[r.task][1]
        importance_s += p["importance_examples"] * mean_train * rate("train", r.task)
        if first or not p["extras_first_seed_only"]:
            points = round(1 / p["prune_step"]) + 1
            prune_s += (points * (1 + p["n_random_orders"]) * dev_tokens[r.task]
                        * rate("fwd", r.task))
    out["07"] = {"seconds": sweep_s + importance_s + prune_s + 2 * fn_tokens["exact"] * short,
                 "work": f"{len(runs)} models x {changes} disabled heads/layers x full dev "
                         f"({sweep_s[1] / 3600:.1f} CPU h), importance, pruning curves"}
    return out


def committed_wall_time(prefix: str) -> float | None:
    prov = paths.RESULTS_DIR / f"{prefix}_provenance.json"
    return json.loads(prov.read_text()).get("wall_time_s") if prov.exists() else None


def _h(seconds: float) -> str:
    return f"{seconds / 3600:5.1f} h" if seconds >= 3600 else f"{seconds / 60:5.1f} min"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--segments", type=int, default=16)
    ap.add_argument("--sentences", type=int, default=64)
    ap.add_argument("--train", type=int, default=64, help="train examples per task timed")
    ap.add_argument("--dev", type=int, default=32, help="dev examples per task timed")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_bert_base_shape(Path(tmp) / "bert-base-shape-random")
        lm = load_model(str(folder), device="cpu")
        tok = lm.tokenizer
        print(f"{lm.label}: {lm.num_layers} layers x {lm.num_heads} heads, hidden "
              f"{lm.identity['hidden_size']}, on {attention.describe_device(lm.device)}; "
              f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"{time.strftime('%Y-%m-%d')}")
        _, segset = wikitext.wikipedia_segments(tok, "valid,test", n=args.segments, seed=1)
        seg_s, seg_tok = extraction_rate(lm, segset.segments)
        sents = ewt(tok, "dev")[:args.sentences]
        sent_s, sent_tok = extraction_rate(lm, [e.as_input() for e in sents])
        rates = {"long": seg_s * args.segments / seg_tok,
                 "short": sent_s * args.sentences / sent_tok}
        rows = [("forward + maps, 128-piece segment", seg_s, seg_tok / args.segments),
                ("forward + maps, EWT dev sentence", sent_s, sent_tok / args.sentences)]
        for task, key in (("SST-2", "single"), ("MRPC", "pair")):
            fwd, sweep, pieces = classifier_rates(folder, tok, task, args.dev)
            rates[f"fwd_{key}"], rates[f"sweep_{key}"] = fwd / pieces, sweep / pieces
            rows += [(f"classifier forward, {task} dev example", fwd, pieces),
                     (f"disabling sweep (157 changes), {task} dev", sweep, pieces)]
        base = trainer.FinetuneSettings(epochs=1, eval_each_epoch=False)
        for task, key in (("SST-2", "train_single"), ("MRPC", "train_pair")):
            examples, _ = glue_data.subsample(glue_data.read_task(task, "train"), args.train, seed=0)
            dataset = glue_data.task_dataset(task, examples, tok, base.max_length)
            r = time_epoch(lm, task, dataset, base, seed=42)
            seconds = np.array([r["seconds"], r["cpu_seconds"]])
            n_pad = padded_tokens(dataset.lengths, base, 42)
            rates[key] = seconds / n_pad
            rows.append((f"fine-tuning epoch, {task} train example",
                         seconds / len(dataset), n_pad / len(dataset)))
        print(f"\nmeasured, seconds per example (torch threads {torch.get_num_threads()}; wall "
              "time, and CPU time of this process = an idle core):")
        print(f"  {'':42s} {'wall':>7s} {'CPU':>7s} {'pieces':>7s}")
        for name, s, pieces in rows:
            print(f"  {name:42s} {s[0]:7.3f} {s[1]:7.3f} {pieces:7.1f}")

        work = count_work(tok, rates)
    total = np.zeros(2)
    print("\nexpected cost of `run --profile paper` here: model passes at the rates above "
          "(wall / CPU), plus the analysis:")
    print(f"  {'notebook':8s} {'wall':>9s} {'CPU':>9s}  {'MiniLM default run':>18s}  counted")
    for prefix, w in work.items():
        total += w["seconds"]
        wall = committed_wall_time(prefix)
        shown = _h(wall) if wall else "-"
        print(f"  {prefix:8s} {_h(w['seconds'][0]):>9s} {_h(w['seconds'][1]):>9s}  "
              f"{shown:>18s}  {w['work']}")
    analysis = sum(committed_wall_time(p) or 0 for p in work)
    print(f"  {'total':8s} {_h(total[0]):>9s} {_h(total[1]):>9s}  {_h(analysis):>18s}  "
          f"-> about {_h(total[1] + analysis).strip()} (CPU) to "
          f"{_h(total[0] + analysis).strip()} (wall) in all")
    print("(the MiniLM column: the committed default run's wall time, attention maps cached: "
          "roughly the analysis part, which grows with the heads, 144 here against 72)")
    print(f"(benchmark took {time.perf_counter() - t_start:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"rates_s_per_token_wall_cpu": {k: v.tolist() for k, v in rates.items()},
             "per_example_wall_cpu": [(n, s.tolist(), p) for n, s, p in rows],
             "work": {k: {"seconds_wall_cpu": v["seconds"].tolist(), "work": v["work"]}
                      for k, v in work.items()}}, indent=1))


if __name__ == "__main__":
    main()

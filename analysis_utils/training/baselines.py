"""Table 1's two rows without fine-tuning (Kovaleva et al. 2019), cached on disk.

- :func:`frozen_features_baseline`: "pre-trained BERT without fine-tuning" as this compendium
  measures it: a scikit-learn logistic regression (ridge regression for STS-B) trained on the
  frozen encoder's features;
- :func:`untrained_head_baseline`: the pre-trained encoder with a randomly initialised,
  untrained head, which is what the paper's numbers in that column look like (MRPC F1 0 with
  accuracy 31.6 is the share of the negative class in MRPC dev: every pair predicted
  "not equivalent").

Both are cached under ``<cache>/finetune_baselines/<key>/`` (predictions and metrics, no
weights) by :mod:`analysis_utils.training.finetune_cache`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .. import paths
from ..data.glue import GlueExample
from ..data.glue_metrics import compute_metrics
from ..engine.attention import uses_token_types
from ..engine.fingerprint import weights_fingerprint
from ..engine.models import LoadedModel, resolve_device
from .classifier import build_classifier, evaluate, load_encoder
from .finetune_cache import (
    BASELINE_SUBDIR,
    FINETUNE_VERSION,
    cache_key,
    data_key,
    fresh_tmp,
    model_key,
    publish,
    read_complete,
    versions,
    write_json,
)
from .glue_data import TaskDataset, ordered_metrics, task_data, task_dataset, task_spec
from .trainer import hf_progress_bars, progress_enabled

__all__ = ["Baseline", "frozen_features_baseline", "untrained_head_baseline"]


@dataclass
class Baseline:
    """A Table 1 baseline without fine-tuning. ``kind``: ``"frozen_features"`` or
    ``"untrained_head"``; ``details``: how it was computed (pooling, regulariser, subset)."""

    task: str
    kind: str
    metrics: dict[str, float]
    predictions: np.ndarray
    labels: np.ndarray
    seconds: float
    from_cache: bool
    folder: Path
    details: dict = field(default_factory=dict)


def _key_inputs(kind: str, lm: LoadedModel, task: str, seed: int | None, **rest) -> dict:
    """What the cache key of a ``kind`` baseline hashes: the fine-tuning code's version, the
    encoder ``lm`` (identity and weights fingerprint), ``task`` and ``seed``, then ``rest``
    (head, input length, data subsets) in the order given."""
    return {"finetune_version": FINETUNE_VERSION, "baseline": kind,
            "model": model_key(lm, weights_fingerprint(lm.model)), "task": task, "seed": seed,
            **rest}


def _cached_baseline(cache_dir, key_inputs: dict, task: str, kind: str, start: float
                     ) -> tuple[str, Path, Baseline | None]:
    """``(key, baselines folder, the cached Baseline or None)`` for ``key_inputs``."""
    key = cache_key(key_inputs)
    root = paths.cache_dir(cache_dir) / BASELINE_SUBDIR
    folder = root / key
    record = read_complete(folder, key)
    if record is None:
        return key, root, None
    with np.load(folder / "predictions.npz") as z:
        preds, labels = z["predictions"], z["labels"]
    cached = Baseline(task=task, kind=kind, metrics=ordered_metrics(task, record["metrics"]),
                      predictions=preds, labels=labels, seconds=time.perf_counter() - start,
                      from_cache=True, folder=folder, details=record["details"])
    return key, root, cached


def _store_baseline(root: Path, key: str, key_inputs: dict, task: str, kind: str,
                    preds: np.ndarray, labels: np.ndarray, details: dict,
                    start: float) -> Baseline:
    metrics = compute_metrics(task, preds, labels)
    root.mkdir(parents=True, exist_ok=True)
    tmp = fresh_tmp(root, key)
    np.savez(tmp / "predictions.npz", predictions=preds, labels=labels)
    seconds = time.perf_counter() - start
    write_json(tmp / "result.json", {"key": key, "key_inputs": key_inputs, "metrics": metrics,
                                     "details": details, "seconds": seconds,
                                     "versions": versions()})
    publish(tmp, root / key, key)
    return Baseline(task=task, kind=kind, metrics=metrics, predictions=preds, labels=labels,
                    seconds=seconds, from_cache=False, folder=root / key, details=details)


def _features(model: nn.Module, dataset: TaskDataset, tokenizer, pooling: str,
              batch_size: int) -> np.ndarray:
    """(n, hidden) last-layer features: the [CLS] vector or the mean over real tokens."""
    from transformers import DataCollatorWithPadding

    collate = DataCollatorWithPadding(tokenizer, padding="longest")
    device = next(model.parameters()).device
    order = np.argsort(dataset.lengths, kind="stable")
    out = np.zeros((len(dataset), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            batch = collate([{k: v for k, v in dataset[int(i)].items() if k != "labels"}
                             for i in idx])
            batch = {k: v.to(device) for k, v in batch.items()}
            h = model(**batch).last_hidden_state
            if pooling == "cls":
                feats = h[:, 0]
            else:
                mask = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
                feats = (h * mask).sum(1) / mask.sum(1)
            out[idx] = feats.float().cpu().numpy()
    return out


def frozen_features_baseline(
    model_name: str = "minilm",
    task: str = "MRPC",
    *,
    pooling: str = "cls",
    C: float = 1.0,
    max_train: int | None = None,
    subset_seed: int = 0,
    max_dev: int | None = None,
    max_length: int = 128,
    batch_size: int = 64,
    train_examples: Sequence[GlueExample] | None = None,
    dev_examples: Sequence[GlueExample] | None = None,
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    progress: bool | None = None,
) -> Baseline:
    """Table 1's "pre-trained, no fine-tuning" as measured here: a task head trained on the
    frozen encoder's features, the encoder itself untouched.

    Features: the last layer's [CLS] vector (``pooling="cls"``, what the fine-tuned head
    sees, through the pooler) or the mean over real tokens (``"mean"``, all-MiniLM-L6-v2's
    own sentence embedding). Head: scikit-learn, on standardised features:
    ``LogisticRegression(C=C)`` (lbfgs, deterministic: no seed) for classification,
    ``Ridge(alpha=1/C)`` for STS-B. The paper's own numbers in this column look like an
    untrained head instead (:func:`untrained_head_baseline`); report which one a table shows.
    Cached under ``<cache>/finetune_baselines/`` (predictions, metrics; no weights).
    """
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if pooling not in ("cls", "mean"):
        raise ValueError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
    start = time.perf_counter()
    spec = task_spec(task)
    show = progress_enabled(progress)
    train_ex, idx, n_available, dev_ex = task_data(task, data_dir, train_examples, dev_examples,
                                                   max_train, subset_seed, max_dev)
    with hf_progress_bars(show):
        lm = load_encoder(model_name, "pretrained", 0)
    head = {"kind": "ridge" if spec.is_regression else "logistic_regression", "C": C,
            "pooling": pooling, "standardised": True, "library": "scikit-learn"}
    key_inputs = _key_inputs("frozen_features", lm, task, None, head=head, max_length=max_length,
                             train=data_key(train_ex, idx, max_train, subset_seed, n_available),
                             dev=data_key(dev_ex, None, max_dev, None, len(dev_ex)))
    key, root, cached = _cached_baseline(cache_dir, key_inputs, task, "frozen_features", start)
    if cached is not None:
        return cached
    model = lm.model.to(resolve_device(device)).eval()
    types = uses_token_types(model)
    train_ds = task_dataset(task, train_ex, lm.tokenizer, max_length, types)
    dev_ds = task_dataset(task, dev_ex, lm.tokenizer, max_length, types)
    x_train = _features(model, train_ds, lm.tokenizer, pooling, batch_size)
    x_dev = _features(model, dev_ds, lm.tokenizer, pooling, batch_size)
    if spec.is_regression:
        clf = make_pipeline(StandardScaler(), Ridge(alpha=1.0 / C))
    else:
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
    clf.fit(x_train, train_ds.labels)
    preds = clf.predict(x_dev)
    details = {**head, "n_train": len(train_ex),
               "train_subset": None if idx is None else {"max_train": max_train,
                                                         "subset_seed": subset_seed,
                                                         "indices": idx.tolist()}}
    return _store_baseline(root, key, key_inputs, task, "frozen_features", np.asarray(preds),
                           dev_ds.labels, details, start)


def untrained_head_baseline(
    model_name: str = "minilm",
    task: str = "MRPC",
    seed: int = 42,
    *,
    max_dev: int | None = None,
    max_length: int = 128,
    batch_size: int = 64,
    dev_examples: Sequence[GlueExample] | None = None,
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    progress: bool | None = None,
) -> Baseline:
    """The pre-trained encoder with a classification head initialised from ``seed`` and never
    trained, scored on the dev set: the likeliest reading of the paper's "pre-trained BERT
    without fine-tuning" column (its MRPC and QQP F1 of 0 mean every pair went to class 0).
    Needs no train file, so it also runs on QNLI. Cached under
    ``<cache>/finetune_baselines/``."""
    start = time.perf_counter()
    show = progress_enabled(progress)
    _, _, _, dev_ex = task_data(task, data_dir, None, dev_examples, None, 0, max_dev,
                                need_train=False)
    with hf_progress_bars(show):
        lm = load_encoder(model_name, "pretrained", seed)
    key_inputs = _key_inputs("untrained_head", lm, task, seed, max_length=max_length,
                             dev=data_key(dev_ex, None, max_dev, None, len(dev_ex)))
    key, root, cached = _cached_baseline(cache_dir, key_inputs, task, "untrained_head", start)
    if cached is not None:
        return cached
    model = build_classifier(lm, task, seed).to(resolve_device(device)).eval()
    ev = evaluate(model, lm.tokenizer, task, dev_ex, max_length=max_length,
                  batch_size=batch_size)
    return _store_baseline(root, key, key_inputs, task, "untrained_head", ev.predictions,
                           ev.labels, {"seed": seed, "head": "randomly initialised, untrained"},
                           start)

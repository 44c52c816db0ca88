"""GLUE examples as fine-tuning reads them (Kovaleva et al. 2019, Table 1): which tasks have
train and dev files, reading a split with a message that says what to do when it is missing,
seeded train subsets, a digest of examples for cache keys, and the encoded dataset the
Trainer and :func:`~analysis_utils.training.classifier.evaluate` take.

>>> train, idx = subsample(read_task("MRPC", "train"), 64, seed=0)     # doctest: +SKIP
>>> ds = task_dataset("MRPC", train, tokenizer, max_length=128)        # doctest: +SKIP
>>> len(ds), ds.labels.shape                                           # doctest: +SKIP
(64, (64,))
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence

import numpy as np
import torch

from ..data import glue
from ..data.glue import GlueExample
from ..data.glue_metrics import TASKS as METRIC_TASKS
from ..data.manifest import DataMissingError

__all__ = ["TaskDataset", "finetune_tasks", "read_task", "subsample", "examples_digest",
           "task_dataset", "task_spec", "task_data", "ordered_metrics"]


def finetune_tasks(data_dir: str | os.PathLike | None = None, *,
                   include_excluded: bool = True) -> list[str]:
    """Tasks with a train and a dev file, in Table 1 order (CoLA, which the paper excluded,
    last unless ``include_excluded=False``): those the data manifest lists (MRPC, STS-B,
    SST-2, RTE, CoLA), which :func:`read_task` then requires, so a missing or corrupt file
    fails loudly instead of dropping out of the table, plus any added by hand (QNLI train)."""
    both = set(glue.available_tasks("train", data_dir)) & set(glue.available_tasks("dev", data_dir))
    return [t for t, spec in METRIC_TASKS.items()
            if t in both and (spec.in_paper or include_excluded)]


def read_task(task: str, split: str, data_dir: str | os.PathLike | None = None,
              max_examples: int | None = None) -> list[GlueExample]:
    """``glue.read_glue`` with a message that says what to do when a split is not in the data
    bundle (QNLI train, QQP, MNLI): the reader needs the file, not a download command."""
    if task not in glue.TASKS:
        raise ValueError(f"{task}: the GLUE reader has no column layout for it (it reads "
                         f"{', '.join(glue.TASKS)}); the data bundle holds no {task} files")
    try:
        return glue.read_glue(task, split, data_dir=data_dir, max_examples=max_examples)
    except DataMissingError as err:
        if task in glue.available_tasks(split, data_dir):
            raise  # a manifest file: its own message names the command that fetches it
        raise DataMissingError(
            f"{task} has no {split} split in the data directory ({err}). The bundle ships "
            f"train and dev for {', '.join(finetune_tasks(data_dir)) or 'no task'}; to use "
            f"{task}, put GLUE's {task}/{split}.tsv at {glue.glue_path(task, split, data_dir)} "
            "(files outside the manifest are read without a checksum)."
        ) from None


def subsample(examples: Sequence, max_n: int | None, seed: int = 0
              ) -> tuple[list, np.ndarray | None]:
    """A seeded random subset of at most ``max_n`` examples, kept in file order.

    Returns ``(subset, indices)``; ``indices`` is None when nothing was dropped."""
    examples = list(examples)
    if max_n is None or max_n >= len(examples):
        return examples, None
    if max_n < 1:
        raise ValueError(f"max_n must be at least 1, got {max_n}")
    idx = np.sort(np.random.default_rng(seed).choice(len(examples), size=max_n, replace=False))
    return [examples[i] for i in idx], idx


def examples_digest(examples: Sequence[GlueExample]) -> str:
    """sha256 over the texts and labels of ``examples``, in order."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps([ex.text_a, ex.text_b, ex.label], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


class TaskDataset(torch.utils.data.Dataset):
    """Encoded examples of one task. Item i: ``input_ids``, ``token_type_ids`` (only with
    ``token_types``: a model with no table for a second segment, RoBERTa's one type or
    MPNet's none, gets none, as :func:`~analysis_utils.engine.attention.uses_token_types`
    decides for the engine's batches), ``attention_mask`` (lists, unpadded) and ``labels``
    (class id, or float score for STS-B). ``labels``: (n,) array; ``report``:
    ``glue.encode``'s truncation report."""

    def __init__(self, task: str, encoded: glue.EncodedSet, labels: np.ndarray,
                 token_types: bool = True):
        self.task = task
        self.labels = labels
        self.report = encoded.report
        self.lengths = [len(x) for x in encoded]
        self._items = [{"input_ids": list(x.input_ids),
                        **({"token_type_ids": list(x.token_type_ids)} if token_types else {}),
                        "attention_mask": [1] * len(x), "labels": y.item()}
                       for x, y in zip(encoded, labels, strict=True)]

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> dict:
        return self._items[i]


def task_dataset(task: str, examples: Sequence[GlueExample], tokenizer,
                 max_length: int = 128, token_types: bool = True) -> TaskDataset:
    """Encode ``examples`` as the models see them (``glue.encode``: ``[CLS] a [SEP] b [SEP]``,
    truncated longest-first to ``max_length``) with label ids from the task table."""
    spec = task_spec(task)
    labels = np.asarray([spec.label_id(ex.label) for ex in examples],
                        dtype=np.float32 if spec.is_regression else np.int64)
    return TaskDataset(task, glue.encode(list(examples), tokenizer, max_tokens=max_length), labels,
                       token_types)


def task_spec(task: str):
    """The :class:`~analysis_utils.data.glue_metrics.GlueTask` of ``task``; an unknown name
    raises ``ValueError`` listing the known ones."""
    if task not in METRIC_TASKS:
        raise ValueError(f"unknown GLUE task {task!r}; known: {', '.join(METRIC_TASKS)}")
    return METRIC_TASKS[task]


def task_data(task, data_dir, train_examples, dev_examples, max_train, subset_seed, max_dev,
              need_train=True):
    """``(train subset, its indices or None, n train examples available, dev examples)`` of
    ``task``: the given example lists or the gold files, the train set subsampled
    (:func:`subsample`) to ``max_train`` and the dev set cut to its first ``max_dev`` rows."""
    if train_examples is None and need_train:
        train_examples = read_task(task, "train", data_dir)
    if dev_examples is None:
        dev_examples = read_task(task, "dev", data_dir, max_examples=max_dev)
    elif max_dev is not None:
        dev_examples = list(dev_examples)[:max_dev]
    if not dev_examples:
        raise ValueError(f"{task}: no dev examples to score")
    n_available = len(train_examples) if train_examples is not None else 0
    train, idx = (subsample(train_examples, max_train, subset_seed) if need_train
                  else ([], None))
    return train, idx, n_available, list(dev_examples)


def ordered_metrics(task: str, metrics: dict) -> dict[str, float]:
    """Metrics in the task's order (JSON files keep them sorted by name)."""
    return {m: metrics[m] for m in task_spec(task).metrics if m in metrics}

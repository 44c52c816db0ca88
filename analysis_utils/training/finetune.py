"""Fine-tuning on GLUE for Kovaleva et al. 2019 (Sections 3 and 4.3, Table 1), cached on disk.

Three rows of Table 1, one function each:

- :func:`finetune` ``(model_name, task, seed, settings, init=...) -> FineTuned``: the encoder
  (``init="pretrained"``: the checkpoint; ``init="random"``: the same architecture randomly
  initialised from ``seed``) plus a fresh classification head, fine-tuned with transformers'
  ``Trainer`` and scored on the dev set;
- :func:`frozen_features_baseline`: "pre-trained BERT without fine-tuning" as this compendium
  measures it: a scikit-learn logistic regression (ridge regression for STS-B) trained on the
  frozen encoder's features;
- :func:`untrained_head_baseline`: the pre-trained encoder with a randomly initialised,
  untrained head, which is what the paper's numbers in that column look like (MRPC F1 0 with
  accuracy 31.6 is the share of the negative class in MRPC dev: every pair predicted
  "not equivalent").

The model name resolves as in :func:`analysis_utils.engine.models.load_model` (``"minilm"``
-> the packaged all-MiniLM-L6-v2, a folder, or a hub id); the encoder comes from
``load_model`` itself, so ``init`` means the same here as everywhere else in the compendium.
Classifiers are ``AutoModelForSequenceClassification`` with eager attention (attention maps
can be extracted from them and :func:`~analysis_utils.engine.interventions.intervene` works
on them); STS-B is a regression (one output, MSE loss).

Settings (:class:`FinetuneSettings`) default to the paper's (its authors' fork of
pytorch-pretrained-BERT's ``run_classifier.py``): batch 32, 3 epochs, learning rate 5e-5 with
10% linear warm-up then linear decay, max length 128, weight decay 0.01 (not on biases and
LayerNorm), Adam epsilon 1e-6, gradient clipping at 1.0, seed 42. Two deliberate deviations,
neither of which changes what the paper measures: batches are padded to their longest input
and grouped by length (the paper padded every input to 128 tokens; see
``benchmarks/bench_finetune.py``), and the optimiser is torch's AdamW (BertAdam skipped Adam's
bias correction and clipped each tensor's gradient separately).

Cache, ``<cache>/finetune/<key>/`` (the key: :func:`cache_key`): a model folder
(``config.json``, ``model.safetensors``, tokenizer files) that ``load_model(folder)`` also
opens, plus ``predictions.npz`` (dev ``logits``, ``predictions``, ``labels``),
``log_history.json`` / ``.csv`` (the Trainer's training curve: loss, learning rate, gradient
norm every ``logging_steps`` steps, dev metrics after each epoch), ``result.json`` (what the
key was derived from, metrics, train subset, wall time, weights fingerprint, versions) and
``COMPLETE`` (the key and the sha256 of every other file but the weights, which are checked
against their recorded fingerprint when loaded). An entry is assembled in
``<key>.tmp-<pid>/``, ``COMPLETE`` written last, then the folder renamed into place: a folder
named ``<key>`` is complete or absent. Training checkpoints live in ``<key>.work/`` (one kept,
written every epoch or every ``checkpoint_steps``); a later call with the same key resumes from
the last one that was completely written, and the work folder is removed once the entry is
published. The key hashes the encoder's in-memory weights (:func:`weights_fingerprint`),
task, seed, every setting, the exact train and dev examples (so a train subset is part of
it) and :data:`FINETUNE_VERSION`; a complete entry is returned without training, after
checking that the loaded weights have the fingerprint recorded when it was written.

Progress bars (the Trainer's, and transformers' weight-loading bar) show only when stderr is
a terminal; in a notebook or a log file nothing is printed (the curve is in ``log_history``).

Example::

    >>> ft = finetune("minilm", "MRPC", seed=42)            # doctest: +SKIP
    >>> ft.metrics                                          # doctest: +SKIP
    {'f1': 0.88..., 'accuracy': 0.83...}
    >>> ft.curve[["step", "loss"]].dropna().tail(1)         # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from .. import paths
from ..data import glue
from ..data.glue import GlueExample
from ..data.glue_metrics import TASKS as METRIC_TASKS
from ..data.glue_metrics import compute_metrics
from ..data.manifest import DataMissingError
from ..engine.fingerprint import weights_fingerprint
from ..engine.models import LoadedModel, load_model, resolve_device
from .loop import seeded, torch_threads

__all__ = ["FINETUNE_VERSION", "FinetuneSettings", "FineTuned", "Baseline", "Evaluation",
           "TaskDataset", "finetune", "evaluate", "predict", "frozen_features_baseline",
           "untrained_head_baseline", "finetune_key", "finetune_tasks", "read_task", "subsample",
           "task_dataset", "build_classifier", "build_trainer", "cache_key", "examples_digest",
           "progress_enabled"]

#: Bumped whenever a change here would change what a cached entry holds.
FINETUNE_VERSION = "1"
CACHE_SUBDIR = "finetune"
BASELINE_SUBDIR = "finetune_baselines"
INITS = ("pretrained", "random")


# --------------------------------------------------------------------------------------------
# settings and results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FinetuneSettings:
    """Everything about a fine-tuning run that can change its result (all part of the cache key).

    Defaults are Kovaleva et al.'s (Devlin et al.'s GLUE recipe, as in the authors' fork):
    ``batch_size`` 32, ``epochs`` 3, ``learning_rate`` 5e-5, ``max_length`` 128 word pieces,
    ``warmup_ratio`` 0.1 of all steps then linear decay to 0, ``weight_decay`` 0.01,
    ``adam_epsilon`` 1e-6, ``max_grad_norm`` 1.0.

    ``dynamic_padding``: pad each batch to its longest input (False: to ``max_length``, as the
    paper did); ``group_by_length``: transformers' ``LengthGroupedSampler`` (shuffled
    mega-batches of 50 batches, sorted by length inside; shuffled from ``(seed, epoch)``),
    which cuts padding further.
    ``eval_each_epoch``: score the dev set after every epoch (the curve's ``eval_*`` rows).
    ``logging_steps``: training-loss rows in the curve. ``num_threads``: torch CPU threads while
    training (None: leave torch's setting); it can change float reductions, hence the key.
    ``optim``: a ``TrainingArguments.optim`` name; plain ``adamw_torch`` behaves the same on
    CPU and GPU.
    """

    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    max_length: int = 128
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    adam_epsilon: float = 1e-6
    max_grad_norm: float = 1.0
    lr_scheduler: str = "linear"
    optim: str = "adamw_torch"
    dynamic_padding: bool = True
    group_by_length: bool = True
    eval_each_epoch: bool = True
    eval_batch_size: int = 64
    logging_steps: int = 10
    num_threads: int | None = None

    def __post_init__(self):
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must lie in [0, 1), got {self.warmup_ratio}")
        for name in ("epochs", "batch_size", "max_length", "eval_batch_size", "logging_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> FinetuneSettings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


@dataclass
class Evaluation:
    """Dev-set scores: ``logits`` (n, num_labels), ``predictions`` (n,) class ids (argmax) or
    scores (STS-B), ``labels`` (n,), ``metrics`` as :func:`glue_metrics.compute_metrics`."""

    task: str
    logits: np.ndarray
    predictions: np.ndarray
    labels: np.ndarray
    metrics: dict[str, float]


@dataclass
class FineTuned:
    """A fine-tuned classifier ready for evaluation, and how it was made.

    model: ``AutoModelForSequenceClassification`` (eager attention, eval mode, on ``device``);
    tokenizer: its tokenizer; identity: the encoder's :class:`LoadedModel` identity with
    ``name`` extended by the task and a ``finetune`` record (task, seed, key, fingerprint);
    metrics, predictions, logits, labels: on the dev set; log_history: the Trainer's log
    (:attr:`curve` as a DataFrame); train_seconds: wall time of the run that trained it (the
    last session when it was resumed); seconds: this call; from_cache: no training ran;
    folder: the cache entry (a model folder); record: its ``result.json``.
    """

    model: nn.Module
    tokenizer: object
    identity: dict
    task: str
    seed: int
    init: str
    settings: FinetuneSettings
    metrics: dict[str, float]
    predictions: np.ndarray
    logits: np.ndarray
    labels: np.ndarray
    log_history: list[dict]
    train_seconds: float
    seconds: float
    from_cache: bool
    folder: Path
    key: str
    record: dict = field(default_factory=dict, repr=False)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def curve(self) -> pd.DataFrame:
        """The training curve, one row per log event (``step``, ``epoch``, ``loss``,
        ``learning_rate``, ``grad_norm``; ``eval_<metric>`` rows after each epoch)."""
        return pd.DataFrame(self.log_history)

    @property
    def loaded(self) -> LoadedModel:
        """The fine-tuned encoder (without its head) as a :class:`LoadedModel`, for
        ``extract_attention`` and the other engine functions; it shares the weights."""
        return LoadedModel(model=self.model.base_model, tokenizer=self.tokenizer,
                           device=self.device, identity=self.identity, location=str(self.folder))


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


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


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
    """Encoded examples of one task. Item i: ``input_ids``, ``token_type_ids``,
    ``attention_mask`` (lists, unpadded) and ``labels`` (class id, or float score for
    STS-B). ``labels``: (n,) array; ``report``: ``glue.encode``'s truncation report."""

    def __init__(self, task: str, encoded: glue.EncodedSet, labels: np.ndarray):
        self.task = task
        self.labels = labels
        self.report = encoded.report
        self.lengths = [len(x) for x in encoded]
        self._items = [{"input_ids": list(x.input_ids), "token_type_ids": list(x.token_type_ids),
                        "attention_mask": [1] * len(x), "labels": y.item()}
                       for x, y in zip(encoded, labels, strict=True)]

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> dict:
        return self._items[i]


def task_dataset(task: str, examples: Sequence[GlueExample], tokenizer,
                 max_length: int = 128) -> TaskDataset:
    """Encode ``examples`` as the models see them (``glue.encode``: ``[CLS] a [SEP] b [SEP]``,
    truncated longest-first to ``max_length``) with label ids from the task table."""
    spec = _spec(task)
    labels = np.asarray([spec.label_id(ex.label) for ex in examples],
                        dtype=np.float32 if spec.is_regression else np.int64)
    return TaskDataset(task, glue.encode(list(examples), tokenizer, max_tokens=max_length), labels)


def _spec(task: str):
    if task not in METRIC_TASKS:
        raise ValueError(f"unknown GLUE task {task!r}; known: {', '.join(METRIC_TASKS)}")
    return METRIC_TASKS[task]


def _collator(tokenizer, settings: FinetuneSettings):
    from transformers import DataCollatorWithPadding

    if settings.dynamic_padding:
        return DataCollatorWithPadding(tokenizer, padding="longest")
    return DataCollatorWithPadding(tokenizer, padding="max_length", max_length=settings.max_length)


# --------------------------------------------------------------------------------------------
# progress bars
# --------------------------------------------------------------------------------------------


def progress_enabled(progress: bool | None = None) -> bool:
    """``progress`` when given, else whether stderr is a terminal (False in a notebook kernel,
    a papermill run, a pipe or a log file)."""
    if progress is not None:
        return bool(progress)
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def _hf_progress_bars(enabled: bool) -> Iterator[None]:
    """Silence transformers' own bars (weight loading) when ``enabled`` is False; restore."""
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    if not enabled:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if before:
            hf_logging.enable_progress_bar()


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------


def build_classifier(lm: LoadedModel, task: str, seed: int) -> nn.Module:
    """``AutoModelForSequenceClassification`` around ``lm``'s encoder: the encoder weights are
    copied from ``lm.model`` (so ``init`` is whatever ``load_model`` made of it), the head is
    initialised from ``seed``. Eager attention; STS-B gets one output and an MSE loss. The
    model is on ``lm.device``."""
    from transformers import AutoModelForSequenceClassification

    spec = _spec(task)
    config = copy.deepcopy(lm.model.config)
    config.num_labels = spec.num_labels
    config.problem_type = "regression" if spec.is_regression else "single_label_classification"
    if spec.label_names is not None:
        config.id2label = dict(enumerate(spec.label_names))
        config.label2id = {n: i for i, n in enumerate(spec.label_names)}
    with seeded(seed):
        model = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager")
    model.base_model.load_state_dict(lm.model.state_dict(), strict=True)
    return model.to(lm.device)


def _load_encoder(model_name: str, init: str, seed: int) -> LoadedModel:
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r} (Table 1 compares a "
                         "pre-trained and a randomly initialised encoder)")
    return load_model(model_name, init=init, seed=seed, device="cpu")


# --------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------


def _module(model) -> nn.Module:
    return model.model if not isinstance(model, nn.Module) and hasattr(model, "model") else model


def predict(model, dataset: TaskDataset, tokenizer, *, batch_size: int = 64) -> np.ndarray:
    """Logits (n, num_labels) of a sequence-classification ``model`` (or a FineTuned) on
    ``dataset``, in dataset order. Batches of similar length (sorted), padded to their
    longest input; eval mode and no grad inside, the model's mode is restored after."""
    from transformers import DataCollatorWithPadding

    module = _module(model)
    device = next(module.parameters()).device
    collate = DataCollatorWithPadding(tokenizer, padding="longest")
    order = np.argsort(dataset.lengths, kind="stable")
    out: np.ndarray | None = None
    was_training = module.training
    module.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                batch = collate([{k: v for k, v in dataset[int(i)].items() if k != "labels"}
                                 for i in idx])
                logits = module(**{k: v.to(device) for k, v in batch.items()}).logits
                logits = logits.float().cpu().numpy()
                if out is None:
                    out = np.zeros((len(dataset), logits.shape[1]), dtype=np.float32)
                out[idx] = logits
    finally:
        module.train(was_training)
    return out if out is not None else np.zeros((0, 1), dtype=np.float32)


def _predictions(task: str, logits: np.ndarray) -> np.ndarray:
    return logits[:, 0] if _spec(task).is_regression else logits.argmax(axis=1)


def evaluate(model, tokenizer, task: str, examples, *, max_length: int = 128,
             batch_size: int = 64) -> Evaluation:
    """Score a sequence-classification model on ``examples`` (GlueExample list or a
    :class:`TaskDataset`) with the task's GLUE metrics. Runs under any active
    :func:`~analysis_utils.engine.interventions.intervene` context, e.g. to disable heads::

        with intervene(ft.model, uniform=[(3, 0)]):
            evaluate(ft.model, ft.tokenizer, "MRPC", dev).metrics
    """
    ds = examples if isinstance(examples, TaskDataset) else task_dataset(
        task, examples, tokenizer, max_length)
    logits = predict(model, ds, tokenizer, batch_size=batch_size)
    preds = _predictions(task, logits)
    return Evaluation(task=task, logits=logits, predictions=preds, labels=ds.labels,
                      metrics=compute_metrics(task, preds, ds.labels))


# --------------------------------------------------------------------------------------------
# trainer
# --------------------------------------------------------------------------------------------


def _epoch_seeded_length_sampler(batch_size: int, lengths: list[int], seed: int):
    """transformers' ``LengthGroupedSampler`` whose shuffle is drawn from ``(seed, epoch)``.

    The stock sampler draws from torch's global RNG when an epoch starts, whose state then
    depends on everything before (dropout, evaluation); a run resumed in the middle of an
    epoch restores that state only after the epoch's order was drawn, so it saw another
    order than the uninterrupted run. The Trainer calls ``set_epoch`` before every epoch."""
    from transformers.trainer_pt_utils import LengthGroupedSampler

    class EpochSeeded(LengthGroupedSampler):
        def __init__(self):
            super().__init__(batch_size, lengths=lengths, generator=torch.Generator())
            self.epoch = 0

        def set_epoch(self, epoch: int) -> None:
            self.epoch = int(epoch)

        def __iter__(self):
            self.generator.manual_seed(seed * 1_000_003 + self.epoch)
            return super().__iter__()

    return EpochSeeded()


def build_trainer(model: nn.Module, tokenizer, train: TaskDataset, dev: TaskDataset | None,
                  settings: FinetuneSettings, seed: int, output_dir: str | os.PathLike, *,
                  device: torch.device | None = None, checkpoint_steps: int | None = None,
                  save_checkpoints: bool = True, progress: bool | None = None,
                  callbacks: Sequence = ()):
    """A ``transformers.Trainer`` configured from ``settings``.

    Checkpoints go to ``output_dir`` every epoch (or every ``checkpoint_steps`` steps), one
    kept (none with ``save_checkpoints=False``, e.g. for timing); the dev set is scored
    after each epoch when ``dev`` is given and ``settings.eval_each_epoch``. Without progress
    bars the Trainer's PrinterCallback is removed too (it prints every log line). Length
    grouping uses a sampler seeded per epoch (:func:`_epoch_seeded_length_sampler`), so
    resuming reproduces the uninterrupted run."""
    from transformers import PrinterCallback, Trainer, TrainingArguments

    device = resolve_device(device)
    show = progress_enabled(progress)
    task = train.task
    evaluate_epochs = dev is not None and settings.eval_each_epoch
    args = TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=settings.eval_batch_size,
        num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler,
        warmup_steps=settings.warmup_ratio,  # a float in [0, 1) is a share of all steps
        weight_decay=settings.weight_decay,
        adam_epsilon=settings.adam_epsilon,
        max_grad_norm=settings.max_grad_norm,
        optim=settings.optim,
        train_sampling_strategy="group_by_length" if settings.group_by_length else "random",
        logging_strategy="steps",
        logging_steps=settings.logging_steps,
        logging_first_step=True,
        eval_strategy="epoch" if evaluate_epochs else "no",
        save_strategy=("no" if not save_checkpoints
                       else "steps" if checkpoint_steps else "epoch"),
        save_steps=checkpoint_steps or 500,
        save_total_limit=1,
        seed=seed,
        data_seed=seed,
        disable_tqdm=not show,
        report_to="none",
        use_cpu=device.type == "cpu",
        dataloader_pin_memory=device.type == "cuda",
        remove_unused_columns=False,
    )

    def metrics(pred) -> dict[str, float]:
        logits = pred.predictions[0] if isinstance(pred.predictions, tuple) else pred.predictions
        return compute_metrics(task, _predictions(task, np.asarray(logits)), pred.label_ids)

    class _Trainer(Trainer):
        def _get_train_sampler(self, train_dataset=None):
            if settings.group_by_length:
                return _epoch_seeded_length_sampler(
                    settings.batch_size, (train_dataset or train).lengths, seed)
            return super()._get_train_sampler(train_dataset)

    trainer = _Trainer(model=model, args=args, train_dataset=train,
                      eval_dataset=dev if evaluate_epochs else None,
                      processing_class=tokenizer, data_collator=_collator(tokenizer, settings),
                      compute_metrics=metrics if evaluate_epochs else None,
                      callbacks=list(callbacks))
    if not show:
        trainer.remove_callback(PrinterCallback)
    return trainer


# --------------------------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------------------------


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "-" for c in text).strip("-")


def cache_key(key_inputs: dict) -> str:
    """Folder name of a cache entry: readable prefix (model, task, init, seed) + 20 hex digits
    of the sha256 of ``key_inputs`` (see :func:`finetune`)."""
    m = key_inputs["model"]
    prefix = f"{_slug(m['name'])}-{key_inputs['task']}-{m['init']}"
    if key_inputs.get("seed") is not None:
        prefix += f"-seed{key_inputs['seed']}"
    return f"{prefix}-{_sha(key_inputs)[:20]}"


def _model_key(lm: LoadedModel, fingerprint: str) -> dict:
    ident = lm.identity
    return {"name": ident["name"], "source": ident["source"], "revision": ident.get("revision"),
            "init": ident["init"], "init_seed": ident.get("seed"),
            "weights_fingerprint": fingerprint}


def _data_key(examples: Sequence[GlueExample], indices: np.ndarray | None,
              max_n: int | None, subset_seed: int | None, n_available: int) -> dict:
    return {"n": len(examples), "sha256": examples_digest(examples), "max_n": max_n,
            "subset_seed": subset_seed if indices is not None else None,
            "n_available": n_available}


def _versions() -> dict:
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version()}


def _write_json(path: Path, obj) -> None:
    with open(path, "w") as fh:
        json.dump(obj, fh, indent=1, sort_keys=True, default=_json_default)
        fh.flush()
        os.fsync(fh.fileno())


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _complete(folder: Path, key: str) -> dict | None:
    """``result.json`` of a complete entry: its ``COMPLETE`` marker names ``key`` and every
    file it lists still has its recorded sha256 (weights are checked by fingerprint when
    loaded instead). None for anything else."""
    marker = folder / "COMPLETE"
    if not marker.is_file():
        return None
    try:
        done = json.loads(marker.read_text())
        files = done.get("sha256", {})
        if done.get("key") != key or "result.json" not in files:
            return None
        if any(_file_sha(folder / name) != sha for name, sha in files.items()):
            return None
        return json.loads((folder / "result.json").read_text())
    except (OSError, ValueError):
        return None


def _publish(tmp: Path, final: Path, key: str) -> None:
    """Mark ``tmp`` complete (the marker, written last, holds the key and the sha256 of every
    file but the weights) and rename it to ``final``."""
    files = {p.name: _file_sha(p) for p in sorted(tmp.iterdir())
             if p.is_file() and p.suffix != ".safetensors"}
    _write_json(tmp / "COMPLETE", {"key": key, "sha256": files,
                                   "finetune_version": FINETUNE_VERSION})
    if final.exists():  # an incomplete leftover (a complete one was returned before we trained)
        if _complete(final, key) is not None:
            shutil.rmtree(tmp)  # another process finished the same key first: keep theirs
            return
        shutil.rmtree(final)
    os.replace(tmp, final)


def _fresh_tmp(root: Path, key: str) -> Path:
    for old in root.glob(f"{key}.tmp-*"):  # left by a process killed while writing
        shutil.rmtree(old, ignore_errors=True)
    tmp = root / f"{key}.tmp-{os.getpid()}"
    tmp.mkdir(parents=True)
    return tmp


def _last_checkpoint(work: Path) -> Path | None:
    """The newest checkpoint in ``work`` that was written completely (the Trainer writes
    ``trainer_state.json`` after weights, optimiser, scheduler and RNG states); newer ones
    that were cut off while being written are removed."""
    def step(p: Path) -> int:
        tail = p.name.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else -1

    def complete(ckpt: Path) -> bool:
        needed = ("trainer_state.json", "model.safetensors", "optimizer.pt", "scheduler.pt")
        if step(ckpt) < 0 or not all((ckpt / f).is_file() for f in needed):
            return False
        try:  # written last, and not atomically
            json.loads((ckpt / "trainer_state.json").read_text())
        except (OSError, ValueError):
            return False
        return True

    for ckpt in sorted(work.glob("checkpoint-*"), key=step, reverse=True):
        if complete(ckpt):
            return ckpt
        shutil.rmtree(ckpt, ignore_errors=True)
    return None


# --------------------------------------------------------------------------------------------
# fine-tuning
# --------------------------------------------------------------------------------------------


def _task_data(task, data_dir, train_examples, dev_examples, max_train, subset_seed, max_dev,
               need_train=True):
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


@dataclass
class _Plan:
    lm: LoadedModel
    key: str
    key_inputs: dict
    train: list
    indices: np.ndarray | None
    n_available: int
    dev: list


def _plan(model_name, task, seed, settings, init, max_train, subset_seed, max_dev,
          train_examples, dev_examples, data_dir) -> _Plan:
    _spec(task)  # an unknown task fails before any data or model is read
    train_ex, idx, n_available, dev_ex = _task_data(task, data_dir, train_examples, dev_examples,
                                                    max_train, subset_seed, max_dev)
    if not train_ex:
        raise ValueError(f"{task}: no training examples")
    lm = _load_encoder(model_name, init, seed)
    key_inputs = {
        "finetune_version": FINETUNE_VERSION,
        "model": _model_key(lm, weights_fingerprint(lm.model)), "task": task,
        "seed": seed, "settings": settings.as_dict(),
        "train": _data_key(train_ex, idx, max_train, subset_seed, n_available),
        "dev": _data_key(dev_ex, None, max_dev, None, len(dev_ex)),
    }
    return _Plan(lm, cache_key(key_inputs), key_inputs, train_ex, idx, n_available, dev_ex)


def finetune_key(model_name: str = "minilm", task: str = "MRPC", seed: int = 42,
                 settings: FinetuneSettings | None = None, init: str = "pretrained",
                 max_train: int | None = None, *, subset_seed: int = 0,
                 max_dev: int | None = None,
                 train_examples: Sequence[GlueExample] | None = None,
                 dev_examples: Sequence[GlueExample] | None = None,
                 data_dir: str | os.PathLike | None = None) -> tuple[str, dict]:
    """``(key, key_inputs)`` of the cache entry :func:`finetune` would use with the same
    arguments, without training (it loads the encoder to fingerprint its weights)."""
    plan = _plan(model_name, task, seed, settings or FinetuneSettings(), init, max_train,
                 subset_seed, max_dev, train_examples, dev_examples, data_dir)
    return plan.key, plan.key_inputs


def finetune(
    model_name: str = "minilm",
    task: str = "MRPC",
    seed: int = 42,
    settings: FinetuneSettings | None = None,
    init: str = "pretrained",
    max_train: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    *,
    subset_seed: int = 0,
    max_dev: int | None = None,
    train_examples: Sequence[GlueExample] | None = None,
    dev_examples: Sequence[GlueExample] | None = None,
    data_dir: str | os.PathLike | None = None,
    checkpoint_steps: int | None = None,
    progress: bool | None = None,
    callbacks: Sequence = (),
) -> FineTuned:
    """Fine-tune ``model_name`` on ``task`` (or return the cached result) and score the dev set.

    model_name: ``"minilm"``, a model folder or a hub id (as ``load_model``); init:
    ``"pretrained"`` or ``"random"`` (every encoder weight drawn from ``seed``); seed: head
    initialisation, dropout, data order (and the random encoder); settings: default
    :class:`FinetuneSettings` (the paper's).
    max_train: train on a seeded random subset of this many examples (``subset_seed``, the
    same subset for every training seed; recorded); max_dev: score the first ``max_dev`` dev
    rows only. train_examples, dev_examples: GlueExample lists instead of the gold files
    (tests, your own data). device: auto-detected (CUDA when available).
    checkpoint_steps: save a resumable checkpoint every this many steps (default: each epoch);
    progress: progress bars (default: only when stderr is a terminal); callbacks: extra
    ``TrainerCallback`` objects. None of these three is part of the cache key.

    Returns a :class:`FineTuned`; a complete cache entry with the same key is loaded without
    training; an interrupted run with the same key resumes from its last checkpoint.
    Raises ``DataMissingError`` for a task without a train file (QNLI, QQP, MNLI here).
    """
    start = time.perf_counter()
    settings = settings or FinetuneSettings()
    show = progress_enabled(progress)
    with _hf_progress_bars(show):
        plan = _plan(model_name, task, seed, settings, init, max_train, subset_seed, max_dev,
                     train_examples, dev_examples, data_dir)
        return _finetune(plan, task, seed, init, settings, start, cache_dir=cache_dir,
                         device=resolve_device(device), checkpoint_steps=checkpoint_steps,
                         show=show, callbacks=callbacks, max_train=max_train,
                         subset_seed=subset_seed)


def _finetune(plan: _Plan, task: str, seed: int, init: str, settings: FinetuneSettings,
              start: float, *, cache_dir, device: torch.device, checkpoint_steps, show: bool,
              callbacks, max_train, subset_seed) -> FineTuned:
    dev_device = device
    lm, key, key_inputs = plan.lm, plan.key, plan.key_inputs
    train_ex, idx, dev_ex = plan.train, plan.indices, plan.dev
    root = paths.cache_dir(cache_dir) / CACHE_SUBDIR
    final = root / key
    record = _complete(final, key)
    if record is not None:
        ft = _load_entry(final, key, record, lm, dev_device)
        if ft is not None:
            ft.seconds = time.perf_counter() - start
            return ft

    root.mkdir(parents=True, exist_ok=True)
    work = root / f"{key}.work"
    work.mkdir(exist_ok=True)
    _write_json(work / "key.json", key_inputs)
    tokenizer = lm.tokenizer
    train_ds = task_dataset(task, train_ex, tokenizer, settings.max_length)
    dev_ds = task_dataset(task, dev_ex, tokenizer, settings.max_length)
    t0 = time.perf_counter()
    with seeded(seed), torch_threads(settings.num_threads):
        model = build_classifier(lm, task, seed)
        trainer = build_trainer(model, tokenizer, train_ds, dev_ds, settings, seed, work,
                                device=dev_device, checkpoint_steps=checkpoint_steps,
                                progress=show, callbacks=callbacks)
        resume = _last_checkpoint(work)
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        model = trainer.model.eval()
        ev = evaluate(model, tokenizer, task, dev_ds, batch_size=settings.eval_batch_size)
        log_history = list(trainer.state.log_history)
    train_seconds = time.perf_counter() - t0
    fingerprint = weights_fingerprint(model)

    tmp = _fresh_tmp(root, key)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    np.savez(tmp / "predictions.npz", logits=ev.logits, predictions=ev.predictions,
             labels=ev.labels)
    _write_json(tmp / "log_history.json", log_history)
    pd.DataFrame(log_history).to_csv(tmp / "log_history.csv", index=False)
    record = {
        "key": key, "key_inputs": key_inputs, "metrics": ev.metrics,
        "train_seconds": train_seconds, "resumed_from_step": _step(resume),
        "global_steps": trainer.state.global_step,
        "weights_fingerprint": fingerprint,
        "train_subset": None if idx is None else {"max_train": max_train,
                                                  "subset_seed": subset_seed,
                                                  "n_available": plan.n_available,
                                                  "indices": idx.tolist()},
        "train_encoding": train_ds.report, "dev_encoding": dev_ds.report,
        "device": str(dev_device), "torch_threads": torch.get_num_threads(),
        "versions": _versions(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    _write_json(tmp / "result.json", record)
    _publish(tmp, final, key)
    shutil.rmtree(work, ignore_errors=True)
    return FineTuned(
        model=model, tokenizer=tokenizer, identity=_finetuned_identity(lm, task, seed, key,
                                                                       fingerprint),
        task=task, seed=seed, init=init, settings=settings, metrics=ev.metrics,
        predictions=ev.predictions, logits=ev.logits, labels=ev.labels,
        log_history=log_history, train_seconds=train_seconds,
        seconds=time.perf_counter() - start, from_cache=False, folder=final, key=key,
        record=record)


def _ordered(task: str, metrics: dict) -> dict[str, float]:
    """Metrics in the task's order (JSON files keep them sorted by name)."""
    return {m: metrics[m] for m in _spec(task).metrics if m in metrics}


def _step(checkpoint: Path | None) -> int | None:
    return None if checkpoint is None else int(checkpoint.name.rsplit("-", 1)[-1])


def _finetuned_identity(lm: LoadedModel, task: str, seed: int, key: str, fingerprint: str) -> dict:
    return {**lm.identity, "name": f"{lm.identity['name']} + {task}",
            "finetune": {"task": task, "seed": seed, "key": key,
                         "weights_fingerprint": fingerprint}}


def _load_entry(folder: Path, key: str, record: dict, lm: LoadedModel,
                device: torch.device) -> FineTuned | None:
    """The cached FineTuned, or None (entry removed) when its weights do not match the
    fingerprint recorded at writing time."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(
        folder, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if weights_fingerprint(model) != record["weights_fingerprint"]:
        import warnings

        warnings.warn(f"cached fine-tuned weights in {folder} do not match their recorded "
                      "fingerprint; the entry is removed and the model trained again",
                      stacklevel=3)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    model.to(device)
    with np.load(folder / "predictions.npz") as z:
        logits, preds, labels = z["logits"], z["predictions"], z["labels"]
    log_history = json.loads((folder / "log_history.json").read_text())
    ki = record["key_inputs"]
    return FineTuned(
        model=model, tokenizer=tokenizer,
        identity=_finetuned_identity(lm, ki["task"], ki["seed"], key,
                                     record["weights_fingerprint"]),
        task=ki["task"], seed=ki["seed"], init=ki["model"]["init"],
        settings=FinetuneSettings.from_dict(ki["settings"]),
        metrics=_ordered(ki["task"], record["metrics"]),
        predictions=preds, logits=logits, labels=labels, log_history=log_history,
        train_seconds=record["train_seconds"], seconds=0.0, from_cache=True, folder=folder,
        key=key, record=record)


# --------------------------------------------------------------------------------------------
# baselines without fine-tuning
# --------------------------------------------------------------------------------------------


def _cached_baseline(root: Path, key: str, task: str, kind: str, start: float) -> Baseline | None:
    folder = root / key
    record = _complete(folder, key)
    if record is None:
        return None
    with np.load(folder / "predictions.npz") as z:
        preds, labels = z["predictions"], z["labels"]
    return Baseline(task=task, kind=kind, metrics=_ordered(task, record["metrics"]),
                    predictions=preds, labels=labels, seconds=time.perf_counter() - start,
                    from_cache=True, folder=folder, details=record["details"])


def _store_baseline(root: Path, key: str, key_inputs: dict, task: str, kind: str,
                    preds: np.ndarray, labels: np.ndarray, details: dict,
                    start: float) -> Baseline:
    metrics = compute_metrics(task, preds, labels)
    root.mkdir(parents=True, exist_ok=True)
    tmp = _fresh_tmp(root, key)
    np.savez(tmp / "predictions.npz", predictions=preds, labels=labels)
    seconds = time.perf_counter() - start
    _write_json(tmp / "result.json", {"key": key, "key_inputs": key_inputs, "metrics": metrics,
                                      "details": details, "seconds": seconds,
                                      "versions": _versions()})
    _publish(tmp, root / key, key)
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
    spec = _spec(task)
    show = progress_enabled(progress)
    train_ex, idx, n_available, dev_ex = _task_data(task, data_dir, train_examples, dev_examples,
                                                    max_train, subset_seed, max_dev)
    with _hf_progress_bars(show):
        lm = _load_encoder(model_name, "pretrained", 0)
    head = {"kind": "ridge" if spec.is_regression else "logistic_regression", "C": C,
            "pooling": pooling, "standardised": True, "library": "scikit-learn"}
    key_inputs = {"finetune_version": FINETUNE_VERSION, "baseline": "frozen_features",
                  "model": _model_key(lm, weights_fingerprint(lm.model)), "task": task,
                  "seed": None, "head": head, "max_length": max_length,
                  "train": _data_key(train_ex, idx, max_train, subset_seed, n_available),
                  "dev": _data_key(dev_ex, None, max_dev, None, len(dev_ex))}
    key = cache_key(key_inputs)
    root = paths.cache_dir(cache_dir) / BASELINE_SUBDIR
    cached = _cached_baseline(root, key, task, "frozen_features", start)
    if cached is not None:
        return cached
    model = lm.model.to(resolve_device(device)).eval()
    train_ds = task_dataset(task, train_ex, lm.tokenizer, max_length)
    dev_ds = task_dataset(task, dev_ex, lm.tokenizer, max_length)
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
    _, _, _, dev_ex = _task_data(task, data_dir, None, dev_examples, None, 0, max_dev,
                                 need_train=False)
    with _hf_progress_bars(show):
        lm = _load_encoder(model_name, "pretrained", seed)
    key_inputs = {"finetune_version": FINETUNE_VERSION, "baseline": "untrained_head",
                  "model": _model_key(lm, weights_fingerprint(lm.model)), "task": task,
                  "seed": seed, "max_length": max_length,
                  "dev": _data_key(dev_ex, None, max_dev, None, len(dev_ex))}
    key = cache_key(key_inputs)
    root = paths.cache_dir(cache_dir) / BASELINE_SUBDIR
    cached = _cached_baseline(root, key, task, "untrained_head", start)
    if cached is not None:
        return cached
    model = build_classifier(lm, task, seed).to(resolve_device(device)).eval()
    ev = evaluate(model, lm.tokenizer, task, dev_ex, max_length=max_length,
                  batch_size=batch_size)
    return _store_baseline(root, key, key_inputs, task, "untrained_head", ev.predictions,
                           ev.labels, {"seed": seed, "head": "randomly initialised, untrained"},
                           start)

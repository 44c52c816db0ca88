"""Fine-tuning on GLUE for Kovaleva et al. 2019 (Sections 3 and 4.3, Table 1), cached on disk.

:func:`finetune` ``(model_name, task, seed, settings, init=...) -> FineTuned``: the encoder
(``init="pretrained"``: the checkpoint; ``init="random"``: the same architecture randomly
initialised from ``seed``) plus a fresh classification head, fine-tuned with transformers'
``Trainer`` and scored on the dev set. The other concerns live beside it in ``training/``:
:mod:`~analysis_utils.training.glue_data` (tasks, examples, subsets, encoded datasets),
:mod:`~analysis_utils.training.classifier` (the classifier, :func:`evaluate`),
:mod:`~analysis_utils.training.trainer` (:class:`FinetuneSettings`, the Trainer),
:mod:`~analysis_utils.training.finetune_cache` (keys, complete entries, checkpoints) and
:mod:`~analysis_utils.training.baselines` (Table 1's rows without fine-tuning).

The model name resolves as in :func:`analysis_utils.engine.models.load_model` (``"minilm"``
-> the packaged all-MiniLM-L6-v2, a folder, or a hub id); the encoder comes from
``load_model`` itself, so ``init`` means the same here as everywhere else in the compendium.

Cache, ``<cache>/finetune/<key>/`` (the key: :func:`~analysis_utils.training.finetune_cache.
cache_key`): a model folder (``config.json``, ``model.safetensors``, tokenizer files) that
``load_model(folder)`` also opens, plus ``predictions.npz`` (dev ``logits``, ``predictions``,
``labels``), ``log_history.json`` / ``.csv`` (the Trainer's training curve: loss, learning
rate, gradient norm every ``logging_steps`` steps, dev metrics after each epoch),
``result.json`` (what the key was derived from, metrics, train subset, wall time, weights
fingerprint, versions) and ``COMPLETE``. Training checkpoints live in ``<key>.work/`` (one
kept, written every epoch or every ``checkpoint_steps``); a later call with the same key
resumes from the last one that was completely written, and the work folder is removed once the
entry is published. The key hashes the encoder's in-memory weights
(:func:`weights_fingerprint`), task, seed, every setting, the exact train and dev examples (so
a train subset is part of it) and ``FINETUNE_VERSION``; the numeric precision and the device
kind enter it only when they differ from the CPU float32 run (settings ``precision`` other
than float32; ``device_kind`` other than ``cpu``), so a bf16- or GPU-trained model has a key of
its own while every CPU float32 key stays what it was before they existed. A complete entry is
returned without training, after checking that the loaded weights have the fingerprint
recorded when it was written.

The names of the modules beside it that notebooks 06 and 07 call as ``finetune.NAME``
(``finetune_tasks``, ``read_task``, ``subsample``, ``task_dataset``, the two baselines) are
importable from here too.

Example::

    >>> ft = finetune("minilm", "MRPC", seed=42)            # doctest: +SKIP
    >>> ft.metrics                                          # doctest: +SKIP
    {'f1': 0.88..., 'accuracy': 0.83...}
    >>> ft.curve[["step", "loss"]].dropna().tail(1)         # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from .. import paths
from ..data.glue import GlueExample
from ..data.manifest import sha256_file
from ..engine import memory
from ..engine.attention import uses_token_types
from ..engine.fingerprint import weights_fingerprint
from ..engine.models import LoadedModel, resolve_device
from .baselines import frozen_features_baseline, untrained_head_baseline
from .classifier import build_classifier, evaluate, load_encoder
from .finetune_cache import (
    CACHE_SUBDIR,
    FINETUNE_VERSION,
    cache_key,
    data_key,
    fresh_tmp,
    last_checkpoint,
    model_key,
    publish,
    read_complete,
    versions,
    write_json,
)
from .glue_data import (
    finetune_tasks,
    ordered_metrics,
    read_task,
    subsample,
    task_data,
    task_dataset,
    task_spec,
)
from .loop import seeded, torch_threads
from .trainer import (
    FinetuneSettings,
    build_trainer,
    hf_progress_bars,
    precision_applied,
    progress_enabled,
    validate_precision,
)

__all__ = ["FineTuned", "FinetuneSettings", "finetune", "finetune_key",
           # for notebooks 06 and 07, which call them as finetune.NAME
           "finetune_tasks", "read_task", "subsample", "task_dataset",
           "frozen_features_baseline", "untrained_head_baseline"]


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

    def release(self) -> None:
        """Drop the model from memory and give the freed pages back to the operating system
        (:func:`~analysis_utils.engine.memory.release`); its weights stay in the cache entry
        ``folder`` and :meth:`reload` brings them back (notebooks hold one fine-tuned model at a
        time; without the release glibc would keep each dropped model's pages resident)."""
        self.model = None
        memory.release()

    def reload(self, device: str | torch.device | None = None) -> FineTuned:
        """The model loaded again from the cache entry after :meth:`release` (no-op when it is
        loaded), its weights checked against the fingerprint recorded when they were trained;
        ``device`` None / "": CUDA when available. Returns ``self``."""
        if self.model is not None:
            return self
        from transformers import AutoModelForSequenceClassification

        try:
            with hf_progress_bars(progress_enabled(None)):  # no bars in a notebook's output
                model = AutoModelForSequenceClassification.from_pretrained(
                    self.folder, attn_implementation="eager").eval()
        except OSError as err:
            raise FileNotFoundError(
                f"the cached fine-tuned model {self.key} is gone from {self.folder} ({err}); "
                "run the notebook again (or `python -m analysis_utils plan run`)") from None
        if weights_fingerprint(model) != self.record.get("weights_fingerprint"):
            raise ValueError(f"the weights in {self.folder} no longer match the fingerprint "
                             f"recorded for {self.key}: run the notebook again to retrain it")
        self.model = model.to(resolve_device(device or None))
        return self

    @property
    def loaded(self) -> LoadedModel:
        """The fine-tuned encoder (without its head) as a :class:`LoadedModel`, for
        ``extract_attention`` and the other engine functions; it shares the weights."""
        return LoadedModel(model=self.model.base_model, tokenizer=self.tokenizer,
                           device=self.device, identity=self.identity, location=str(self.folder))


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
          train_examples, dev_examples, data_dir, device_kind: str = "cpu") -> _Plan:
    """What a fine-tune reads and its key. ``device_kind`` (``"cpu"``, ``"cuda"``, ...) enters
    the key inputs only when it is not ``"cpu"``, as ``settings.precision`` enters them only
    when it is not float32 (:meth:`FinetuneSettings.as_dict`): the keys of CPU float32 runs
    are the ones they had before either existed."""
    task_spec(task)  # an unknown task fails before any data or model is read
    train_ex, idx, n_available, dev_ex = task_data(task, data_dir, train_examples, dev_examples,
                                                   max_train, subset_seed, max_dev)
    if not train_ex:
        raise ValueError(f"{task}: no training examples")
    lm = load_encoder(model_name, init, seed)
    key_inputs = {
        "finetune_version": FINETUNE_VERSION,
        "model": model_key(lm, weights_fingerprint(lm.model)), "task": task,
        "seed": seed, "settings": settings.as_dict(),
        "train": data_key(train_ex, idx, max_train, subset_seed, n_available),
        "dev": data_key(dev_ex, None, max_dev, None, len(dev_ex)),
    }
    if device_kind != "cpu":  # a GPU-trained model has its own key
        key_inputs["device_kind"] = device_kind
    return _Plan(lm, cache_key(key_inputs), key_inputs, train_ex, idx, n_available, dev_ex)


def finetune_key(model_name: str = "minilm", task: str = "MRPC", seed: int = 42,
                 settings: FinetuneSettings | None = None, init: str = "pretrained",
                 max_train: int | None = None, *, subset_seed: int = 0,
                 max_dev: int | None = None,
                 train_examples: Sequence[GlueExample] | None = None,
                 dev_examples: Sequence[GlueExample] | None = None,
                 data_dir: str | os.PathLike | None = None,
                 device: str | torch.device | None = None) -> tuple[str, dict]:
    """``(key, key_inputs)`` of the cache entry :func:`finetune` would use with the same
    arguments, without training (it loads the encoder to fingerprint its weights). ``device``:
    the one the fine-tune runs on (None / "": CUDA when available, as :func:`finetune`); only
    its kind counts."""
    plan = _plan(model_name, task, seed, settings or FinetuneSettings(), init, max_train,
                 subset_seed, max_dev, train_examples, dev_examples, data_dir,
                 resolve_device(device or None).type)
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
    (tests, your own data). device: auto-detected (CUDA when available); its kind is part of
    the key when it is not the CPU. ``settings.precision`` is applied around training and the
    final scoring (:func:`~analysis_utils.training.trainer.precision_applied`; tf32 needs
    CUDA).
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
    dev = resolve_device(device)
    validate_precision(settings.precision, dev.type)  # before anything is read or written
    with hf_progress_bars(show):
        plan = _plan(model_name, task, seed, settings, init, max_train, subset_seed, max_dev,
                     train_examples, dev_examples, data_dir, dev.type)
        return _finetune(plan, task, seed, init, settings, start, cache_dir=cache_dir,
                         device=dev, checkpoint_steps=checkpoint_steps,
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
    record = read_complete(final, key)
    if record is not None:
        ft = _load_entry(final, key, record, lm, dev_device)
        if ft is not None:
            ft.seconds = time.perf_counter() - start
            return ft

    root.mkdir(parents=True, exist_ok=True)
    work = root / f"{key}.work"
    work.mkdir(exist_ok=True)
    write_json(work / "key.json", key_inputs)
    tokenizer = lm.tokenizer
    types = uses_token_types(lm.model)
    train_ds = task_dataset(task, train_ex, tokenizer, settings.max_length, types)
    dev_ds = task_dataset(task, dev_ex, tokenizer, settings.max_length, types)
    t0 = time.perf_counter()
    with seeded(seed), torch_threads(settings.num_threads), \
            precision_applied(settings.precision, dev_device):
        model = build_classifier(lm, task, seed)
        trainer = build_trainer(model, tokenizer, train_ds, dev_ds, settings, seed, work,
                                device=dev_device, checkpoint_steps=checkpoint_steps,
                                progress=show, callbacks=callbacks)
        resume = last_checkpoint(work)
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        model = trainer.model.eval()
        ev = evaluate(model, tokenizer, task, dev_ds, batch_size=settings.eval_batch_size)
        log_history = list(trainer.state.log_history)
    train_seconds = time.perf_counter() - t0
    fingerprint = weights_fingerprint(model)

    tmp = fresh_tmp(root, key)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    np.savez(tmp / "predictions.npz", logits=ev.logits, predictions=ev.predictions,
             labels=ev.labels)
    write_json(tmp / "log_history.json", log_history)
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
        "device": str(dev_device), "precision": settings.precision,
        "torch_threads": torch.get_num_threads(),
        "versions": versions(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_json(tmp / "result.json", record)
    publish(tmp, final, key)
    shutil.rmtree(work, ignore_errors=True)
    return FineTuned(
        model=model, tokenizer=tokenizer, identity=_finetuned_identity(lm, task, seed, key,
                                                                       fingerprint),
        task=task, seed=seed, init=init, settings=settings, metrics=ev.metrics,
        predictions=ev.predictions, logits=ev.logits, labels=ev.labels,
        log_history=log_history, train_seconds=train_seconds,
        seconds=time.perf_counter() - start, from_cache=False, folder=final, key=key,
        record=record)


def _step(checkpoint: Path | None) -> int | None:
    return None if checkpoint is None else int(checkpoint.name.rsplit("-", 1)[-1])


def _finetuned_identity(lm: LoadedModel, task: str, seed: int, key: str, fingerprint: str) -> dict:
    return {**lm.identity, "name": f"{lm.identity['name']} + {task}",
            "finetune": {"task": task, "seed": seed, "key": key,
                         "weights_fingerprint": fingerprint}}


def _drop_entry(folder: Path, why: str) -> None:
    """Warn that the cached entry ``folder`` is unusable (``why``) and remove it, so the caller
    trains the model again."""
    import warnings

    warnings.warn(f"cached fine-tuned model in {folder} {why}; the entry is removed and the "
                  "model trained again", stacklevel=4)
    shutil.rmtree(folder, ignore_errors=True)


#: Tokenizers loaded from cache entries, by the content of their files: every fine-tune of
#: one encoder saves the same tokenizer, and notebook 06 holds 50 FineTuned at once. One
#: MiniLM tokenizer is about 10 MB resident, so a copy each added 500 MB (measured with
#: ``benchmarks/bench_cell_memory.py notebooks/06_finetuning_drift.py``). Weak values: a
#: tokenizer no FineTuned holds any more is freed.
_TOKENIZERS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                    "added_tokens.json", "vocab.txt", "vocab.json", "merges.txt",
                    "spiece.model", "sentencepiece.bpe.model", "chat_template.jinja")


def shared_tokenizer(folder: Path, load):
    """``load(folder)``, or the tokenizer already loaded from a folder whose tokenizer files
    are byte for byte the same (the same object: tokenizers carry no per-model state here)."""
    h = hashlib.sha256()
    for name in _TOKENIZER_FILES:
        f = Path(folder) / name
        if f.is_file():
            h.update(f"{name}\0{sha256_file(f)}\n".encode())
    key = h.hexdigest()
    tok = _TOKENIZERS.get(key)
    if tok is None:
        tok = load(folder)
        _TOKENIZERS[key] = tok
    return tok


def _load_entry(folder: Path, key: str, record: dict, lm: LoadedModel,
                device: torch.device) -> FineTuned | None:
    """The cached FineTuned, or None (entry removed, with a warning) when its weights cannot be
    read (a truncated or missing ``model.safetensors``: the marker does not checksum the
    weights) or do not match the fingerprint recorded at writing time."""
    from safetensors import SafetensorError
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            folder, attn_implementation="eager").eval()
        tokenizer = shared_tokenizer(folder, AutoTokenizer.from_pretrained)
    except (OSError, ValueError, SafetensorError) as err:
        _drop_entry(folder, f"cannot be read ({type(err).__name__}: {err})")
        return None
    if weights_fingerprint(model) != record["weights_fingerprint"]:
        _drop_entry(folder, "has weights that do not match their recorded fingerprint")
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
        metrics=ordered_metrics(ki["task"], record["metrics"]),
        predictions=preds, logits=logits, labels=labels, log_history=log_history,
        train_seconds=record["train_seconds"], seconds=0.0, from_cache=True, folder=folder,
        key=key, record=record)

"""Sequence classifiers around the compendium's encoders, and scoring them on GLUE dev sets.

:func:`build_classifier` puts a seeded, fresh ``AutoModelForSequenceClassification`` head on
an encoder from :func:`~analysis_utils.engine.models.load_model` (eager attention, so attention
maps can be extracted and heads disabled); STS-B is a regression (one output, MSE loss).
:func:`evaluate` scores any such model with the task's GLUE metrics, also under an active
:func:`~analysis_utils.engine.interventions.intervene` context.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..data.glue_metrics import compute_metrics
from ..engine.attention import uses_token_types
from ..engine.models import LoadedModel, load_model
from .glue_data import TaskDataset, task_dataset, task_spec
from .loop import seeded

__all__ = ["INITS", "Evaluation", "build_classifier", "load_encoder", "predict",
           "predictions_from_logits", "evaluate"]

INITS = ("pretrained", "random")


@dataclass
class Evaluation:
    """Dev-set scores: ``logits`` (n, num_labels), ``predictions`` (n,) class ids (argmax) or
    scores (STS-B), ``labels`` (n,), ``metrics`` as :func:`glue_metrics.compute_metrics`."""

    task: str
    logits: np.ndarray
    predictions: np.ndarray
    labels: np.ndarray
    metrics: dict[str, float]


def build_classifier(lm: LoadedModel, task: str, seed: int) -> nn.Module:
    """``AutoModelForSequenceClassification`` around ``lm``'s encoder: the encoder weights are
    copied from ``lm.model`` (so ``init`` is whatever ``load_model`` made of it), the head is
    initialised from ``seed``. Eager attention; STS-B gets one output and an MSE loss. The
    model is on ``lm.device``."""
    from transformers import AutoModelForSequenceClassification

    spec = task_spec(task)
    config = copy.deepcopy(lm.model.config)
    config.num_labels = spec.num_labels
    config.problem_type = "regression" if spec.is_regression else "single_label_classification"
    if spec.label_names is not None:
        config.id2label = dict(enumerate(spec.label_names))
        config.label2id = {n: i for i, n in enumerate(spec.label_names)}
    with seeded(seed):
        model = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager")
    result = model.base_model.load_state_dict(lm.model.state_dict(), strict=False)
    # Every weight of the task model's encoder must come from lm; the only weights of lm it may
    # leave out are whole modules its architecture lacks (RoBERTa's and MPNet's classifiers
    # build their encoder without the pooler, which classifies from the first token's state)
    base = model.base_model
    dropped = sorted({k.split(".")[0] for k in result.unexpected_keys})
    if result.missing_keys or any(getattr(base, name, None) is not None for name in dropped):
        raise RuntimeError(f"{type(model).__name__}: the encoder's weights do not fit its task "
                           f"model (missing {result.missing_keys[:5]}, unexpected "
                           f"{result.unexpected_keys[:5]})")
    return model.to(lm.device)


def load_encoder(model_name: str, init: str, seed: int) -> LoadedModel:
    """``load_model(model_name, init=init, seed=seed)`` on the CPU, ``init`` checked against
    :data:`INITS`."""
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r} (Table 1 compares a "
                         "pre-trained and a randomly initialised encoder)")
    return load_model(model_name, init=init, seed=seed, device="cpu")


def _module(model) -> nn.Module:
    return model.model if not isinstance(model, nn.Module) and hasattr(model, "model") else model


def predict(model, dataset: TaskDataset, tokenizer, *, batch_size: int = 64) -> np.ndarray:
    """Logits (n, num_labels) of a sequence-classification ``model`` (or a FineTuned) on
    ``dataset``, in dataset order. Batches of similar length (sorted), padded to their
    longest input; eval mode and no grad inside, the model's mode is restored after."""
    from transformers import DataCollatorWithPadding

    module = _module(model)
    device = next(module.parameters()).device
    types = uses_token_types(module)  # a dataset built with segment ids the model has no table for
    collate = DataCollatorWithPadding(tokenizer, padding="longest")
    order = np.argsort(dataset.lengths, kind="stable")
    out: np.ndarray | None = None
    was_training = module.training
    module.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                batch = collate([{k: v for k, v in dataset[int(i)].items()
                                  if k != "labels" and (types or k != "token_type_ids")}
                                 for i in idx])
                logits = module(**{k: v.to(device) for k, v in batch.items()}).logits
                logits = logits.float().cpu().numpy()
                if out is None:
                    out = np.zeros((len(dataset), logits.shape[1]), dtype=np.float32)
                out[idx] = logits
    finally:
        module.train(was_training)
    return out if out is not None else np.zeros((0, 1), dtype=np.float32)


def predictions_from_logits(task: str, logits: np.ndarray) -> np.ndarray:
    """(n,) predictions from (n, num_labels) logits: the score for STS-B, else the argmax."""
    return logits[:, 0] if task_spec(task).is_regression else logits.argmax(axis=1)


def evaluate(model, tokenizer, task: str, examples, *, max_length: int = 128,
             batch_size: int = 64) -> Evaluation:
    """Score a sequence-classification model on ``examples`` (GlueExample list or a
    :class:`TaskDataset`) with the task's GLUE metrics. Runs under any active
    :func:`~analysis_utils.engine.interventions.intervene` context, e.g. to disable heads::

        with intervene(ft.model, uniform=[(3, 0)]):
            evaluate(ft.model, ft.tokenizer, "MRPC", dev).metrics
    """
    ds = examples if isinstance(examples, TaskDataset) else task_dataset(
        task, examples, tokenizer, max_length, uses_token_types(_module(model)))
    logits = predict(model, ds, tokenizer, batch_size=batch_size)
    preds = predictions_from_logits(task, logits)
    return Evaluation(task=task, logits=logits, predictions=preds, labels=ds.labels,
                      metrics=compute_metrics(task, preds, ds.labels))

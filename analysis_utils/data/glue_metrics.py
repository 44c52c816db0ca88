"""GLUE metrics as GLUE defines them, and the task table of Kovaleva et al. 2019 (Table 1).

Metrics (thin wrappers over scikit-learn and scipy; every function takes ``(labels,
predictions)`` as 1-D arrays and returns a float in [0, 1], or [-1, 1] for correlations;
Table 1 of the paper prints them x100):

- :func:`accuracy` (SST-2, RTE, QNLI, MNLI, WNLI, and with F1 for MRPC and QQP);
- :func:`f1` of the positive class 1 ("equivalent" / "duplicate"; MRPC, QQP), 0 when nothing
  is predicted positive (as the paper's 0 for an untrained head);
- :func:`pearson`, :func:`spearman` (STS-B, a regression on 0-5 scores), NaN for constant
  predictions (a correlation is undefined there);
- :func:`matthews` correlation (CoLA).

:func:`compute_metrics` ``(task, predictions, labels) -> {metric: value}`` applies a task's
metrics in :data:`TASKS` order (the paper's order: F1 before accuracy). :func:`task_table`
lists the tasks: metrics, which one is primary, label names, whether the paper used the task
and why not where it did not.

Example::

    >>> compute_metrics("MRPC", [1, 0, 1, 1], [1, 0, 0, 1])
    {'f1': 0.8, 'accuracy': 0.75}
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from sklearn import metrics as skm

__all__ = ["GlueTask", "TASKS", "METRICS", "PAPER_TASKS", "EXCLUDED_BY_PAPER", "accuracy", "f1",
           "pearson", "spearman", "matthews", "compute_metrics", "constant_score", "primary_metric",
           "task_table",
           "paper_cell"]


def _arrays(labels, predictions) -> tuple[np.ndarray, np.ndarray]:
    y, p = np.asarray(labels).reshape(-1), np.asarray(predictions).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"labels ({y.shape[0]}) and predictions ({p.shape[0]}) differ in length")
    if y.size == 0:
        raise ValueError("no predictions to score")
    return y, p


def accuracy(labels, predictions) -> float:
    """Share of exact matches (``sklearn.metrics.accuracy_score``)."""
    return float(skm.accuracy_score(*_arrays(labels, predictions)))


def f1(labels, predictions) -> float:
    """Binary F1 of class 1 (``sklearn.metrics.f1_score``, ``zero_division=0``)."""
    y, p = _arrays(labels, predictions)
    return float(skm.f1_score(y, p, pos_label=1, average="binary", zero_division=0))


def matthews(labels, predictions) -> float:
    """Matthews correlation (``sklearn.metrics.matthews_corrcoef``; 0 for a constant guess)."""
    return float(skm.matthews_corrcoef(*_arrays(labels, predictions)))


def _correlation(fn, labels, predictions) -> float:
    y, p = _arrays(labels, predictions)
    if np.ptp(p.astype(float)) == 0 or np.ptp(y.astype(float)) == 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(fn(y.astype(float), p.astype(float)).statistic)


def pearson(labels, predictions) -> float:
    """Pearson's r (``scipy.stats.pearsonr``); NaN when either side is constant."""
    return _correlation(stats.pearsonr, labels, predictions)


def spearman(labels, predictions) -> float:
    """Spearman's rho (``scipy.stats.spearmanr``); NaN when either side is constant."""
    return _correlation(stats.spearmanr, labels, predictions)


#: metric name -> function(labels, predictions)
METRICS: dict[str, Callable[[Sequence, Sequence], float]] = {
    "accuracy": accuracy, "f1": f1, "pearson": pearson, "spearman": spearman,
    "matthews": matthews,
}


@dataclass(frozen=True)
class GlueTask:
    """One GLUE task as this compendium trains and scores it.

    ``labels``: the label values as the GLUE files spell them, in class-id order (None for
    the STS-B regression); ``label_names``: readable names for the model config;
    ``metrics``: in the order the paper prints them; ``primary``: the one a single-number
    summary (head disabling, pruning curves) uses; ``in_paper``: one of Kovaleva et al.'s
    seven tasks; ``note``: why the paper left it out, or how the paper reports it.
    """

    name: str
    metrics: tuple[str, ...]
    primary: str
    labels: tuple[str, ...] | None
    label_names: tuple[str, ...] | None
    in_paper: bool
    note: str = ""

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_labels(self) -> int:
        """Output units of the classification head (1 for regression)."""
        return 1 if self.labels is None else len(self.labels)

    def label_id(self, value) -> int | float:
        """The class id of a label as read from the GLUE file (a float for STS-B)."""
        if self.labels is None:
            return float(value)
        try:
            return self.labels.index(str(value))
        except ValueError:
            raise ValueError(f"{self.name}: label {value!r} is not one of {self.labels}") from None


_BINARY = ("0", "1")
_NLI2 = ("entailment", "not_entailment")

#: Every GLUE task, in the order of Kovaleva et al.'s Table 1, then the two they excluded.
TASKS: dict[str, GlueTask] = {t.name: t for t in (
    GlueTask("MRPC", ("f1", "accuracy"), "f1", _BINARY, ("not_equivalent", "equivalent"), True,
             "reported as F1 / accuracy"),
    GlueTask("STS-B", ("pearson", "spearman"), "pearson", None, None, True,
             "the paper prints one unnamed number; compared here with Pearson's r"),
    GlueTask("SST-2", ("accuracy",), "accuracy", _BINARY, ("negative", "positive"), True),
    GlueTask("QQP", ("f1", "accuracy"), "f1", _BINARY, ("not_duplicate", "duplicate"), True,
             "reported as F1 / accuracy"),
    GlueTask("RTE", ("accuracy",), "accuracy", _NLI2, _NLI2, True),
    GlueTask("QNLI", ("accuracy",), "accuracy", _NLI2, _NLI2, True),
    GlueTask("MNLI", ("accuracy",), "accuracy", ("contradiction", "entailment", "neutral"),
             ("contradiction", "entailment", "neutral"), True, "matched dev set (MNLI-m)"),
    GlueTask("CoLA", ("matthews",), "matthews", _BINARY, ("unacceptable", "acceptable"), False,
             "excluded by the paper: GLUE's human baseline is only 66.4, attributed to problems "
             "with the acceptability-judgement methodology, and CoLA is not in SuperGLUE"),
    GlueTask("WNLI", ("accuracy",), "accuracy", ("0", "1"), ("not_entailment", "entailment"),
             False, "excluded by the paper: the dataset is too small"),
)}

PAPER_TASKS: tuple[str, ...] = tuple(t for t, spec in TASKS.items() if spec.in_paper)
EXCLUDED_BY_PAPER: dict[str, str] = {t: s.note for t, s in TASKS.items() if not s.in_paper}


def _task(task: str) -> GlueTask:
    if task not in TASKS:
        raise ValueError(f"unknown GLUE task {task!r}; known: {', '.join(TASKS)}")
    return TASKS[task]


def compute_metrics(task: str, predictions, labels) -> dict[str, float]:
    """The task's GLUE metrics, in :data:`TASKS` order.

    predictions, labels: (n,) class ids (argmax of the logits), or scores for STS-B.
    """
    spec = _task(task)
    return {name: METRICS[name](labels, predictions) for name in spec.metrics}


def constant_score(task: str, labels) -> float:
    """The task's primary metric (x100) for the best constant prediction on ``labels``: every
    class tried for a classification task (the majority class for accuracy, the positive
    class for MRPC's F1, 0 for Matthews); NaN for STS-B, whose correlations are undefined for a
    constant. What a model with every head removed can fall to, not below.

    >>> constant_score("RTE", [0, 1, 1, 1])
    75.0
    """
    t = _task(task)
    if t.is_regression:
        return float("nan")
    y = np.asarray(labels).reshape(-1)
    metric = primary_metric(task)
    return 100 * max(compute_metrics(task, np.full_like(y, c), y)[metric]
                     for c in range(t.num_labels))


def primary_metric(task: str) -> str:
    """Name of the task's single summary metric (F1 for MRPC and QQP, as GLUE's leaderboard
    lists first; Pearson for STS-B; Matthews for CoLA; accuracy otherwise)."""
    return _task(task).primary


def paper_cell(task: str, metrics: dict[str, float], digits: int = 1) -> str:
    """A result as the paper's Table 1 prints it: x100, several metrics joined by ``" / "``
    (``"87.9 / 82.3"`` for MRPC F1 / accuracy); ``"-"`` for a missing or NaN value."""
    def fmt(name: str) -> str:
        v = metrics.get(name)
        return "-" if v is None or not np.isfinite(v) else f"{100 * v:.{digits}f}"

    shown = (_task(task).primary,) if task == "STS-B" else _task(task).metrics
    return " / ".join(fmt(m) for m in shown)


def task_table() -> pd.DataFrame:
    """One row per task: ``task, metrics, primary, num_labels, labels, in_paper, note``."""
    return pd.DataFrame([{
        "task": t.name, "metrics": ", ".join(t.metrics), "primary": t.primary,
        "num_labels": t.num_labels,
        "labels": "score 0-5 (regression)" if t.labels is None else ", ".join(t.label_names),
        "in_paper": t.in_paper, "note": t.note,
    } for t in TASKS.values()])

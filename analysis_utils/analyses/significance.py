"""Is a change in a dev-set metric more than chance? Paired tests for comparing two sets of
predictions on the same examples (notebook 07: every gain from disabling a head).

A dev set of a few hundred examples moves by a point when a handful of predictions flip, so
each reported difference gets:

- :func:`paired_bootstrap` / :func:`bootstrap_many`: percentile confidence interval of
  ``metric(b) - metric(a)`` from resampling the examples with replacement (both prediction
  sets resampled with the same indices), and a two-sided bootstrap p-value, for any metric;
  :func:`bootstrap_many` compares many prediction sets against one with common resamples;
- :func:`mcnemar`: McNemar's test for accuracy (exact binomial, or chi-square with continuity
  correction), from the two discordant counts;
- :func:`holm`, :func:`benjamini_hochberg`: adjusted p-values for a family of tests (all
  heads of a model): Holm controls the family-wise error rate, Benjamini-Hochberg the false
  discovery rate.

Metrics (:func:`accuracy`, :func:`f1`, :func:`matthews`, :func:`pearson`, :func:`spearman`,
the GLUE dev metrics) take ``(y_true, y_pred)`` and work along the last axis, so the bootstrap
evaluates a whole block of resamples, ``(resamples, n)``, in one call; any other metric
function works too (one call per resample) unless marked with :func:`vectorized`.

Example::

    >>> import numpy as np
    >>> y = np.array([1, 0, 1, 1, 0, 1, 0, 0])
    >>> a = np.array([1, 0, 0, 1, 1, 1, 0, 1])   # 5 of 8 right
    >>> b = np.array([1, 0, 1, 1, 1, 1, 0, 0])   # 7 of 8 right
    >>> float(accuracy(y, b) - accuracy(y, a))
    0.25
    >>> r = mcnemar(a == y, b == y)
    >>> (r.b, r.c, round(r.p_value, 3))           # 0 lost, 2 gained: p = 2 * 0.5**2
    (0, 2, 0.5)
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(3).tolist()
    [0.03, 0.06, 0.06, 0.02]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["accuracy", "f1", "matthews", "pearson", "spearman", "vectorized", "is_vectorized",
           "BootstrapResult", "paired_bootstrap", "bootstrap_many", "McNemarResult", "mcnemar",
           "holm", "benjamini_hochberg"]

Metric = Callable[[np.ndarray, np.ndarray], float]


# --- metrics along the last axis ------------------------------------------------------------


def vectorized(fn):
    """Mark ``fn(y_true, y_pred)`` as working along the last axis of 2-D inputs
    ``(resamples, n)`` and returning ``(resamples,)``; the bootstrap then calls it once per
    block of resamples instead of once per resample."""
    fn.vectorized = True
    return fn


def is_vectorized(metric) -> bool:
    return bool(getattr(metric, "vectorized", False))


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out if out.ndim else float(out)


@vectorized
def accuracy(y_true, y_pred):
    """Share of exact matches, along the last axis."""
    return np.mean(np.asarray(y_true) == np.asarray(y_pred), axis=-1)


def _confusion(y_true, y_pred, positive=1):
    t, p = np.asarray(y_true) == positive, np.asarray(y_pred) == positive
    tp = np.sum(t & p, axis=-1)
    fp = np.sum(~t & p, axis=-1)
    fn = np.sum(t & ~p, axis=-1)
    tn = np.sum(~t & ~p, axis=-1)
    return tp, fp, fn, tn


@vectorized
def f1(y_true, y_pred):
    """F1 of the positive class 1 (GLUE's MRPC/QQP F1); 0 when there is no positive at all."""
    tp, fp, fn, _ = _confusion(y_true, y_pred)
    return _safe_divide(2 * tp, 2 * tp + fp + fn)


@vectorized
def matthews(y_true, y_pred):
    """Matthews correlation of binary labels 0/1 (GLUE's CoLA metric); 0 when a margin is
    empty (as scikit-learn)."""
    tp, fp, fn, tn = (np.asarray(x, dtype=float) for x in _confusion(y_true, y_pred))
    den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return _safe_divide(tp * tn - fp * fn, den)


@vectorized
def pearson(y_true, y_pred):
    """Pearson correlation along the last axis (GLUE's STS-B metric); NaN for a constant
    input."""
    x = np.asarray(y_true, dtype=float)
    y = np.asarray(y_pred, dtype=float)
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (x * y).sum(axis=-1) / den
    return out if np.ndim(out) else float(out)


@vectorized
def spearman(y_true, y_pred):
    """Spearman rank correlation (Pearson of average ranks) along the last axis."""
    from scipy.stats import rankdata  # scipy comes with scikit-learn

    return pearson(rankdata(y_true, axis=-1), rankdata(y_pred, axis=-1))


# --- paired bootstrap -----------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapResult:
    """``diff = metric(b) - metric(a)`` on the data; ``lo``, ``hi``: percentile interval at
    level ``ci``; ``p_value``: two-sided, ``2 * min(P*(d <= 0), P*(d >= 0))`` over the
    resamples with add-one smoothing (the smallest level at which the percentile interval
    would exclude 0)."""

    diff: float
    lo: float
    hi: float
    p_value: float
    n_boot: int
    ci: float


def _resample_blocks(n: int, n_boot: int, seed: int, block: int):
    """Index blocks ``(m, n)``; the same stream for the same ``(n, seed, block)``."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < n_boot:
        m = min(block, n_boot - done)
        yield rng.integers(0, n, size=(m, n))
        done += m


def _metric_on(metric: Metric, y: np.ndarray, y_idx: np.ndarray, p: np.ndarray,
               idx: np.ndarray) -> np.ndarray:
    """``metric`` on each resample: ``idx`` (m, n) indices, ``y_idx = y[idx]``."""
    if is_vectorized(metric):
        return np.asarray(metric(y_idx, p[idx]), dtype=float)
    return np.array([metric(y[i], p[i]) for i in idx], dtype=float)


def _bootstrap_p(diffs: np.ndarray) -> np.ndarray:
    n_boot = diffs.shape[-1]
    below = (diffs <= 0).sum(axis=-1) + 1
    above = (diffs >= 0).sum(axis=-1) + 1
    return np.minimum(1.0, 2 * np.minimum(below, above) / (n_boot + 1))


def bootstrap_many(y_true, pred_base, preds, metric: Metric, *, n_boot: int = 10_000,
                   ci: float = 0.95, seed: int = 0, block: int = 500,
                   return_diffs: bool = False):
    """Paired bootstrap of ``metric(preds[k]) - metric(pred_base)`` for every ``k``, with the
    same resamples for all (common random numbers: a given ``seed`` gives every comparison
    the interval :func:`paired_bootstrap` gives it alone).

    y_true, pred_base: (n,); preds: (K, n). Returns a dict of (K,) arrays ``diff``, ``lo``,
    ``hi``, ``p_value``, plus ``diffs`` (K, n_boot) when ``return_diffs``. Memory grows with
    ``block * n``; time with ``K * n_boot * n``.
    """
    y = np.asarray(y_true)
    base = np.asarray(pred_base)
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != len(y) or base.shape != y.shape:
        raise ValueError(f"expected y_true and pred_base of shape (n,) and preds (K, n); got "
                         f"{y.shape}, {base.shape}, {preds.shape}")
    if n_boot < 1 or not 0 < ci < 1:
        raise ValueError("n_boot must be >= 1 and ci in (0, 1)")
    observed = np.array([metric(y, p) for p in preds], dtype=float) - metric(y, base)
    diffs = np.empty((len(preds), n_boot))
    start = 0
    for idx in _resample_blocks(len(y), n_boot, seed, block):
        y_idx = y[idx]
        ref = _metric_on(metric, y, y_idx, base, idx)
        for k, p in enumerate(preds):
            diffs[k, start:start + len(idx)] = _metric_on(metric, y, y_idx, p, idx) - ref
        start += len(idx)
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(diffs, [alpha, 1 - alpha], axis=1)
    out = {"diff": observed, "lo": lo, "hi": hi, "p_value": _bootstrap_p(diffs)}
    if return_diffs:
        out["diffs"] = diffs
    return out


def paired_bootstrap(y_true, pred_a, pred_b, metric: Metric, *, n_boot: int = 10_000,
                     ci: float = 0.95, seed: int = 0, block: int = 500) -> BootstrapResult:
    """Percentile interval of ``metric(y_true, pred_b) - metric(y_true, pred_a)``: resample
    the n examples with replacement ``n_boot`` times (``np.random.default_rng(seed)``, so the
    same call gives the same interval), evaluate both prediction sets on each resample.

    y_true, pred_a, pred_b: (n,) arrays (labels, predicted classes or scores).
    """
    r = bootstrap_many(y_true, pred_a, np.asarray(pred_b)[None], metric, n_boot=n_boot, ci=ci,
                       seed=seed, block=block)
    return BootstrapResult(diff=float(r["diff"][0]), lo=float(r["lo"][0]),
                           hi=float(r["hi"][0]), p_value=float(r["p_value"][0]),
                           n_boot=n_boot, ci=ci)


# --- McNemar --------------------------------------------------------------------------------


@dataclass(frozen=True)
class McNemarResult:
    """``b``: examples ``a`` gets right and ``b`` wrong; ``c``: the reverse; ``statistic``:
    ``min(b, c)`` (exact) or the chi-square value; ``p_value``: two-sided."""

    b: int
    c: int
    statistic: float
    p_value: float
    exact: bool


def _binom_two_sided_half(k: int, n: int) -> float:
    """Two-sided p of ``k`` successes in ``n`` fair trials: ``min(1, 2 P(X <= min(k, n-k)))``,
    in exact integer arithmetic."""
    if n == 0:
        return 1.0
    k = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2 ** n)


def mcnemar(correct_a, correct_b, *, exact: bool = True,
            correction: bool = True) -> McNemarResult:
    """McNemar's test of two classifiers on the same examples, from the discordant pairs.

    correct_a, correct_b: (n,) booleans (prediction == label). exact: binomial test of ``b``
    successes in ``b + c`` trials with p = 1/2 (always valid); else the chi-square statistic
    ``(|b - c| - 1)^2 / (b + c)`` (``- 1`` only with ``correction``), one degree of freedom,
    a large-sample approximation. Two-sided; ``p = 1`` when no example is discordant.
    """
    a = np.asarray(correct_a, dtype=bool)
    b_ = np.asarray(correct_b, dtype=bool)
    if a.shape != b_.shape or a.ndim != 1:
        raise ValueError(f"correct_a and correct_b must be (n,) of the same length, got "
                         f"{a.shape} and {b_.shape}")
    b = int(np.sum(a & ~b_))
    c = int(np.sum(~a & b_))
    n = b + c
    if exact:
        return McNemarResult(b, c, float(min(b, c)), _binom_two_sided_half(b, n), True)
    if n == 0:
        return McNemarResult(b, c, 0.0, 1.0, False)
    stat = max(abs(b - c) - (1 if correction else 0), 0) ** 2 / n
    # chi-square with one degree of freedom: P(X > s) = erfc(sqrt(s / 2))
    return McNemarResult(b, c, float(stat), float(math.erfc(math.sqrt(stat / 2))), False)


# --- multiple comparisons -------------------------------------------------------------------


def _as_pvalues(p) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(p, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p-values must be a 1-D array, got shape {p.shape}")
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return p, ok


def _adjusted(p, adjust) -> np.ndarray:
    """``p`` adjusted in the input's order: ``adjust(sorted_p, m)`` on the m non-NaN p-values
    sorted ascending, capped at 1; NaN entries stay NaN."""
    p, ok = _as_pvalues(p)
    out = np.full_like(p, np.nan)
    vals = p[ok]
    if len(vals):
        order = np.argsort(vals, kind="stable")
        res = np.empty(len(vals))
        res[order] = np.minimum(adjust(vals[order], len(vals)), 1.0)
        out[ok] = res
    return out


def holm(p) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (family-wise error rate), in the input's order:
    sorted ascending, ``p_(i) * (m - i + 1)``, made non-decreasing, capped at 1. NaN entries
    stay NaN and do not count in ``m``."""
    return _adjusted(p, lambda v, m: np.maximum.accumulate(v * (m - np.arange(m))))


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in the input's order:
    sorted ascending, ``p_(i) * m / i``, made non-decreasing from the top, capped at 1. NaN
    entries stay NaN and do not count in ``m``."""
    def step_up(v, m):
        return np.minimum.accumulate((v * m / np.arange(1, m + 1))[::-1])[::-1]

    return _adjusted(p, step_up)

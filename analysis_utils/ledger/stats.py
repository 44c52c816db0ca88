"""The tests behind the claims ledger: pure functions over numbers, no tables.

Each returns a one-sided p-value (or an interval) for a claim's effect against its null, so
that a verdict is a test that could have failed. They need only what the notebooks save (a
mean over independent units, a correct count, per-seed scores), and say what they assume:

- :func:`hoeffding_p` / :func:`hoeffding_interval`: a mean of ``n`` independent values that
  lie in ``[0, width]`` (an attention share averaged over one text segment lies in [0, 1]);
  distribution-free, so conservative.
- :func:`binom_greater`: ``k`` correct of ``n`` against a fixed accuracy ``p0``.
- :func:`count_greater`: ``k`` of ``m`` units pass a rule that each passes with probability
  ``q`` under the null (for "2 of 72 heads stand out").
- :func:`overlap_greater`: two sets of ``a`` and ``b`` of ``N`` items share ``k``
  (hypergeometric), and :func:`expected_overlap` what chance gives.
- :func:`welch_greater`: seed scores of one probe above another's (or above a constant).
- :func:`bootstrap_below`: a statistic of ``n`` independent units (text segments) below a
  threshold, by resampling the units (for a ratio of pooled means, which no closed form
  covers).

>>> round(hoeffding_p(0.9, 0.5, 100), 6)
0.0
>>> round(expected_overlap(40, 28, 72), 1)
15.6
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .resample import make_rng

__all__ = ["hoeffding_p", "hoeffding_interval", "binom_greater", "count_greater",
           "overlap_greater", "expected_overlap", "welch_greater", "normal_tail", "bonferroni",
           "seed_interval", "bootstrap_below"]


def _check_n(n) -> int:
    if n is None or not np.isfinite(n) or int(n) < 1:
        raise ValueError(f"a test needs at least one independent unit, got n={n!r}")
    return int(n)


def hoeffding_p(mean: float, threshold: float, n: int, width: float = 1.0) -> float:
    """One-sided p for "the true mean exceeds ``threshold``" given a sample ``mean`` of ``n``
    independent values in an interval of length ``width`` (Hoeffding: ``exp(-2 n t^2 / w^2)``,
    ``t = mean - threshold``); 1 when the mean is not above the threshold. For "below",
    call with both signs flipped: ``hoeffding_p(-mean, -threshold, n, width)``."""
    n = _check_n(n)
    t = float(mean) - float(threshold)
    if not np.isfinite(t) or t <= 0:
        return 1.0
    return float(min(1.0, math.exp(-2.0 * n * (t / width) ** 2)))


def hoeffding_interval(mean: float, n: int, width: float = 1.0,
                       alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided ``1 - alpha`` interval for a mean of ``n`` independent values in an interval
    of length ``width``: ``mean +- width * sqrt(log(2 / alpha) / (2 n))``."""
    n = _check_n(n)
    half = width * math.sqrt(math.log(2.0 / alpha) / (2.0 * n))
    return float(mean) - half, float(mean) + half


def binom_greater(k: int, n: int, p0: float) -> float:
    """One-sided exact binomial p for "accuracy above ``p0``" with ``k`` correct of ``n``."""
    n = _check_n(n)
    if not 0 <= k <= n:
        raise ValueError(f"correct count {k} outside 0..{n}")
    p0 = float(np.clip(p0, 0.0, 1.0))
    if p0 >= 1.0:
        return 1.0
    return float(stats.binom.sf(int(k) - 1, n, p0))


def count_greater(k: int, m: int, q: float) -> float:
    """P(at least ``k`` of ``m`` units pass) when each passes independently with ``q``."""
    m = _check_n(m)
    return float(stats.binom.sf(int(k) - 1, m, float(q)))


def normal_tail(z: float) -> float:
    """P(Z > z) for a standard normal: the share of units a "z > n_sd" rule passes by
    chance."""
    return float(stats.norm.sf(z))


def expected_overlap(a: int, b: int, total: int) -> float:
    """How many items two random sets of sizes ``a`` and ``b`` drawn from ``total`` share on
    average: ``a * b / total``."""
    return a * b / _check_n(total)


def overlap_greater(k: int, a: int, b: int, total: int) -> float:
    """One-sided hypergeometric p for "sets of sizes ``a`` and ``b`` of ``total`` share at
    least ``k`` items"."""
    total = _check_n(total)
    return float(stats.hypergeom.sf(int(k) - 1, total, int(a), int(b)))


def welch_greater(a, b) -> float:
    """One-sided p for "mean of ``a`` above mean of ``b``" over seeds: Welch's t-test; ``b``
    of one value is a constant (one-sample t-test). NaN with fewer than 2 values in ``a``."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 2 or len(b) < 1:
        return float("nan")
    if len(b) == 1:
        if np.std(a, ddof=1) == 0:
            return 0.0 if a.mean() > b[0] else 1.0
        return float(stats.ttest_1samp(a, b[0], alternative="greater").pvalue)
    if np.std(a, ddof=1) == 0 and np.std(b, ddof=1) == 0:
        return 0.0 if a.mean() > b.mean() else 1.0
    return float(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)


def seed_interval(values, alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided t interval of the mean over seeds (NaN, NaN with fewer than 2 seeds)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(1 - alpha / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean() - half), float(v.mean() + half)


def bonferroni(p: float, m: int) -> float:
    """``p`` corrected for picking the best of ``m`` candidates: ``min(1, p * m)``."""
    return float(min(1.0, p * _check_n(m)))


def bootstrap_below(statistic, n: int, threshold: float, n_boot: int = 2000, seed: int = 0,
                    alpha: float = 0.05) -> tuple[float, float, float]:
    """One-sided bootstrap test of "the statistic lies below ``threshold``" over ``n``
    independent units: ``statistic(weights)`` computes it with each unit counted
    ``weights[i]`` times (all ones: the sample itself); ``n_boot`` resamples with replacement
    (seeded, so the result is reproducible). Returns ``(p, lo, hi)``: ``p = (1 + #{draws at or
    above the threshold}) / (n_boot + 1)``, a draw whose statistic is undefined counting as
    above; ``lo, hi``: the two-sided ``1 - alpha`` percentile interval of the finite draws."""
    n = _check_n(n)
    rng = make_rng(seed)
    draws = np.array([statistic(rng.multinomial(n, np.full(n, 1.0 / n)))
                      for _ in range(int(n_boot))], dtype=float)
    above = int(np.sum(~np.isfinite(draws) | (draws >= threshold)))
    finite = draws[np.isfinite(draws)]
    if len(finite) == 0:
        return 1.0, float("nan"), float("nan")
    lo, hi = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return (1 + above) / (int(n_boot) + 1), float(lo), float(hi)

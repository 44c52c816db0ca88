"""Paired tests of notebook 07 against hand-computed cases and independent references
(scipy, scikit-learn)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import f1_score, matthews_corrcoef

from analysis_utils.analyses import significance as sig


def _two_classifiers(n=4000, seed=3):
    """Labels and two classifiers whose accuracies differ by exactly 0.05 in expectation:
    A is right with p 0.70; B copies A, except that it corrects A on a random 1/6 of A's
    errors (+0.05) ... and nothing else."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    a_right = rng.random(n) < 0.70
    b_right = a_right | (~a_right & (rng.random(n) < 0.05 / 0.30))
    a = np.where(a_right, y, 1 - y)
    b = np.where(b_right, y, 1 - y)
    return y, a, b


def test_bootstrap_interval_contains_the_true_difference_and_is_seeded():
    y, a, b = _two_classifiers()
    r = sig.paired_bootstrap(y, a, b, sig.accuracy, n_boot=2000, seed=0)
    assert r.diff == pytest.approx(sig.accuracy(y, b) - sig.accuracy(y, a))
    assert r.lo < 0.05 < r.hi
    assert r.lo > 0 and r.p_value < 0.01  # a real gain of 5 points on 4,000 examples
    again = sig.paired_bootstrap(y, a, b, sig.accuracy, n_boot=2000, seed=0)
    assert again == r
    other = sig.paired_bootstrap(y, a, b, sig.accuracy, n_boot=2000, seed=1)
    assert (other.lo, other.hi) != (r.lo, r.hi)
    assert other.lo == pytest.approx(r.lo, abs=0.005)
    # the same resamples for every row of bootstrap_many: row k == paired_bootstrap alone
    many = sig.bootstrap_many(y, a, np.stack([a, b, y]), sig.accuracy, n_boot=2000, seed=0)
    assert (many["lo"][1], many["hi"][1], many["p_value"][1]) == (r.lo, r.hi, r.p_value)
    assert many["diff"][0] == many["lo"][0] == many["hi"][0] == 0 and many["p_value"][0] == 1
    assert many["diff"][2] == pytest.approx(1 - sig.accuracy(y, a))


def test_bootstrap_hand_made_small_case():
    y = np.array([1, 1, 1, 1])
    a = np.array([1, 1, 0, 0])
    b = np.array([1, 1, 1, 0])
    r = sig.paired_bootstrap(y, a, b, sig.accuracy, n_boot=5000, seed=0, ci=0.8)
    # one of four examples gained: a resample's diff is (copies of example 3) / 4, with
    # P(0 copies) = 0.32, P(<= 1) = 0.74, P(<= 2) = 0.95: the 10% and 90% quantiles are 0, 0.5
    assert r.diff == 0.25
    assert r.lo == 0.0 and r.hi == 0.5
    # P*(d <= 0) = P(example 3 never drawn) = (3/4)^4 = 0.316; two-sided p about 0.63
    assert r.p_value == pytest.approx(2 * 0.75 ** 4, abs=0.03)


def test_generic_metric_without_vectorisation_gives_the_same_interval():
    y, a, b = _two_classifiers(n=300)
    vec = sig.paired_bootstrap(y, a, b, sig.f1, n_boot=300, seed=5)
    plain = sig.paired_bootstrap(y, a, b, lambda t, p: f1_score(t, p), n_boot=300, seed=5)
    assert plain.diff == pytest.approx(vec.diff)
    assert plain.lo == pytest.approx(vec.lo) and plain.hi == pytest.approx(vec.hi)
    assert plain.p_value == pytest.approx(vec.p_value)


def test_mcnemar_hand_computed_case():
    # 10 examples right only under A, 2 right only under B, 30 right under both, 8 under none
    a = np.array([1] * 10 + [0] * 2 + [1] * 30 + [0] * 8, dtype=bool)
    b = np.array([0] * 10 + [1] * 2 + [1] * 30 + [0] * 8, dtype=bool)
    exact = sig.mcnemar(a, b)
    assert (exact.b, exact.c) == (10, 2)
    # P(X <= 2 | n=12, p=1/2) = (1 + 12 + 66) / 4096; two-sided: twice that
    assert exact.p_value == 2 * 79 / 4096
    chi = sig.mcnemar(a, b, exact=False)
    assert chi.statistic == pytest.approx(49 / 12)  # (|10 - 2| - 1)^2 / 12
    assert chi.p_value == pytest.approx(0.0433, abs=5e-5)
    assert chi.p_value == pytest.approx(stats.chi2.sf(49 / 12, df=1), rel=1e-12)
    no_corr = sig.mcnemar(a, b, exact=False, correction=False)
    assert no_corr.statistic == pytest.approx(64 / 12)
    same = sig.mcnemar(a, a)
    assert (same.b, same.c, same.p_value) == (0, 0, 1.0)
    assert sig.mcnemar(a, a, exact=False).p_value == 1.0
    assert sig.mcnemar(b, a).p_value == exact.p_value  # symmetric


@pytest.mark.parametrize("b,c", [(0, 1), (1, 0), (3, 3), (7, 1), (1, 19), (40, 25),
                                 (100, 70), (0, 300)])
def test_mcnemar_exact_equals_scipy_binomtest(b, c):
    a_right = np.array([True] * b + [False] * c + [True] * 5)
    b_right = np.array([False] * b + [True] * c + [True] * 5)
    r = sig.mcnemar(a_right, b_right)
    assert r.p_value == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-10)


def test_holm_and_benjamini_hochberg_hand_computed():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> Holm x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running
    # max 0.02, 0.03, 0.06, 0.06; BH x4/1, x4/2, x4/3, x4/4 = 0.02, 0.02, 0.04, 0.04
    np.testing.assert_allclose(sig.holm(p), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(sig.benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02])
    # capped at 1; NaN stays NaN and does not count in m
    np.testing.assert_allclose(sig.holm([0.6, np.nan, 0.2]), [0.6, np.nan, 0.4])
    np.testing.assert_allclose(sig.benjamini_hochberg([0.6, np.nan, 0.2]), [0.6, np.nan, 0.4])
    np.testing.assert_allclose(sig.holm([0.5, 0.5, 0.5]), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(sig.benjamini_hochberg([0.5, 0.5, 0.5]), [0.5, 0.5, 0.5])
    q = [0.2, 0.01, 0.04, 0.02, 0.9]
    # sorted .01 .02 .04 .2 .9 -> x5/1 .05, x5/2 .05, x5/3 .0667, x5/4 .25, x5/5 .9
    np.testing.assert_allclose(sig.benjamini_hochberg(q), [0.25, 0.05, 0.2 / 3, 0.05, 0.9])
    # Holm: .01x5=.05, .02x4=.08, .04x3=.12, .2x2=.4, .9x1=.9
    np.testing.assert_allclose(sig.holm(q), [0.4, 0.05, 0.12, 0.08, 0.9])
    assert sig.holm([]).shape == (0,)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        sig.holm([1.5])


def test_metrics_match_references_along_the_last_axis():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (5, 60))
    p = rng.integers(0, 2, (5, 60))
    def rows(fn, u, v):
        return [fn(a, b) for a, b in zip(u, v, strict=True)]

    np.testing.assert_allclose(sig.f1(y, p), rows(f1_score, y, p))
    np.testing.assert_allclose(sig.matthews(y, p), rows(matthews_corrcoef, y, p))
    np.testing.assert_allclose(sig.accuracy(y, p), (y == p).mean(1))
    s, t = rng.normal(size=(4, 50)), rng.normal(size=(4, 50))
    t[:, :10] = t[:, 10:20]  # ties for the ranks
    np.testing.assert_allclose(sig.pearson(s, t), rows(lambda a, b: stats.pearsonr(a, b)[0], s, t))
    np.testing.assert_allclose(sig.spearman(s, t),
                               rows(lambda a, b: stats.spearmanr(a, b)[0], s, t))
    assert isinstance(sig.f1(y[0], p[0]), float) and isinstance(sig.pearson(s[0], t[0]), float)
    assert sig.f1(np.zeros(4), np.zeros(4)) == 0.0
    assert sig.matthews(np.ones(4), np.ones(4)) == 0.0
    assert math.isnan(sig.pearson(np.ones(4), np.arange(4.0)))

"""GLUE metrics: hand-computed cases, agreement with scikit-learn and scipy called directly, the
paper's degenerate cases (an untrained head that predicts one class), and the task table."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

from analysis_utils.data import glue_metrics as gm


def test_hand_computed_binary_case():
    # labels 1 1 0 0 1 0 1 0, predictions 1 0 0 1 1 0 1 1:
    # TP = 3 (items 0, 4, 6), FN = 1 (item 1), FP = 2 (items 3, 7), TN = 2 (items 2, 5)
    y = [1, 1, 0, 0, 1, 0, 1, 0]
    p = [1, 0, 0, 1, 1, 0, 1, 1]
    assert gm.accuracy(y, p) == pytest.approx(5 / 8)
    # precision 3/5, recall 3/4, F1 = 2 * 3 / (2 * 3 + 2 + 1) = 6/9
    assert gm.f1(y, p) == pytest.approx(2 / 3)
    # MCC = (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (6 - 2) / sqrt(5*4*4*3)
    assert gm.matthews(y, p) == pytest.approx(4 / math.sqrt(240))
    assert gm.compute_metrics("MRPC", p, y) == pytest.approx({"f1": 2 / 3, "accuracy": 5 / 8})
    assert list(gm.compute_metrics("MRPC", p, y)) == ["f1", "accuracy"]  # the paper's order
    assert gm.compute_metrics("CoLA", p, y) == pytest.approx({"matthews": 4 / math.sqrt(240)})


def test_hand_computed_correlations():
    y = [1.0, 2.0, 3.0, 4.0]
    p = [2.0, 4.0, 6.0, 8.5]
    # ranks agree exactly: Spearman 1; Pearson below 1 (not a straight line)
    assert gm.spearman(y, p) == pytest.approx(1.0)
    assert 0.99 < gm.pearson(y, p) < 1.0
    # a perfectly linear prediction: r = 1; reversed: -1
    assert gm.pearson(y, [3.0, 5.0, 7.0, 9.0]) == pytest.approx(1.0)
    assert gm.pearson(y, [4.0, 3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    # r of (1, 2, 3) and (1, 3, 2): covariance 0.5 / (1 * 1) = 0.5
    assert gm.pearson([1.0, 2.0, 3.0], [1.0, 3.0, 2.0]) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_sklearn_and_scipy(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200)
    p = np.where(rng.random(200) < 0.7, y, 1 - y)
    assert gm.accuracy(y, p) == skm.accuracy_score(y, p)
    assert gm.f1(y, p) == skm.f1_score(y, p)
    assert gm.matthews(y, p) == skm.matthews_corrcoef(y, p)
    s = rng.uniform(0, 5, 300)
    t = s + rng.normal(0, 1, 300)
    assert gm.pearson(s, t) == pytest.approx(stats.pearsonr(s, t)[0], abs=1e-12)
    assert gm.spearman(s, t) == pytest.approx(stats.spearmanr(s, t)[0], abs=1e-12)
    assert gm.compute_metrics("STS-B", t, s) == pytest.approx(
        {"pearson": stats.pearsonr(s, t)[0], "spearman": stats.spearmanr(s, t)[0]})
    for task in ("SST-2", "RTE", "QNLI", "MNLI", "WNLI"):
        assert gm.compute_metrics(task, p, y) == {"accuracy": skm.accuracy_score(y, p)}


def test_untrained_head_cases_match_the_paper_pattern():
    # MRPC dev has 279 positives of 408: predicting "not equivalent" everywhere gives the
    # paper's "0 / 31.6" (F1 0 without a warning, accuracy 129/408)
    y = np.array([1] * 279 + [0] * 129)
    p = np.zeros_like(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sklearn's UndefinedMetricWarning would fail here
        m = gm.compute_metrics("MRPC", p, y)
    assert m == pytest.approx({"f1": 0.0, "accuracy": 129 / 408})
    assert gm.paper_cell("MRPC", m) == "0.0 / 31.6"
    assert gm.matthews(y, p) == 0.0
    # a constant regression output has no correlation: NaN, shown as "-"
    sts = gm.compute_metrics("STS-B", np.full(5, 2.5), [0.0, 1.0, 2.0, 3.0, 4.0])
    assert math.isnan(sts["pearson"]) and math.isnan(sts["spearman"])
    assert gm.paper_cell("STS-B", sts) == "-"
    assert gm.paper_cell("STS-B", {"pearson": 0.8274, "spearman": 0.8}) == "82.7"


def test_bad_input_says_what_is_wrong():
    with pytest.raises(ValueError, match="differ in length"):
        gm.accuracy([0, 1], [0])
    with pytest.raises(ValueError, match="no predictions"):
        gm.f1([], [])
    with pytest.raises(ValueError, match="unknown GLUE task 'COLA'"):
        gm.compute_metrics("COLA", [0], [0])


def test_task_table():
    assert gm.PAPER_TASKS == ("MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI")
    assert set(gm.EXCLUDED_BY_PAPER) == {"CoLA", "WNLI"}
    assert "66.4" in gm.EXCLUDED_BY_PAPER["CoLA"] and "small" in gm.EXCLUDED_BY_PAPER["WNLI"]
    table = gm.task_table()
    assert list(table["task"]) == list(gm.TASKS)
    assert table.set_index("task").loc["STS-B", "num_labels"] == 1
    for spec in gm.TASKS.values():
        assert spec.primary in spec.metrics and set(spec.metrics) <= set(gm.METRICS)
    assert gm.primary_metric("MRPC") == "f1" and gm.primary_metric("CoLA") == "matthews"
    rte = gm.TASKS["RTE"]
    assert (rte.label_id("entailment"), rte.label_id("not_entailment")) == (0, 1)
    assert gm.TASKS["MRPC"].label_id(1) == 1 and gm.TASKS["STS-B"].label_id("4.5") == 4.5
    with pytest.raises(ValueError, match="not one of"):
        rte.label_id("neutral")

"""Notebook 06's learning-rate rule and the drift trend check, on hand-made numbers."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis_utils.analyses import drift, lr_check


def _rows(rte_hi, cola_hi):
    return pd.DataFrame({"task": ["RTE", "RTE", "CoLA", "CoLA"], "lr": [5e-5, 1e-4] * 2,
                         "value": [57.0, rte_hi, 15.0, cola_hi]})


def test_a_rate_must_beat_the_default_on_every_task_beyond_the_seed_spread():
    spread = {"RTE": 1.0, "CoLA": 2.0}
    keep, why = lr_check.decide(_rows(61.0, 20.0), 5e-5, spread)
    assert not keep and why.startswith("switch to 0.0001")
    # beats on RTE only (CoLA +1.5 is within its 2-point spread): keep
    keep, why = lr_check.decide(_rows(61.0, 16.5), 5e-5, spread)
    assert keep and "largest gain is +4.0 points (RTE" in why
    # no seed spread known: nothing justifies a switch
    keep, _ = lr_check.decide(_rows(70.0, 40.0), 5e-5, {})
    assert keep


def test_gains_need_the_default_rate():
    g = lr_check.gains(_rows(61.0, 20.0), 5e-5)
    assert g.set_index("task")["gain"].to_dict() == {"RTE": 4.0, "CoLA": 5.0}
    with pytest.raises(ValueError, match="default rate"):
        lr_check.gains(_rows(61.0, 20.0), 3e-5)


def test_rises_with_depth_tells_a_plain_trend_from_a_top_jump():
    t = pd.DataFrame({"task": "A", "compared": ["s42"] * 4 + ["s43"] * 4,
                      "layer": [1, 2, 3, 4] * 2,
                      "drift": [0.1, 0.2, 0.3, 0.4, 0.1, 0.05, 0.3, 0.4]})
    assert drift.rises_with_depth(t).tolist() == [True, False]

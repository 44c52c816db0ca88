"""Figures of notebook 04: one colour scale for the head-weight panels, error bars over seeds,
one dot per seed, one line per probe and seed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import io  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis_utils.plotting import probes as probe_plots  # noqa: E402


def _save(fig):
    fig.savefig(io.BytesIO(), format="png")


def test_head_weight_panels_share_one_scale_and_one_colorbar():
    w = np.array([[0.1, -0.3], [0.7, 0.2]])
    fig = probe_plots.head_weight_grids({"small": w, "large": 10 * w, "neg": -4 * w})
    maps = [ax for ax in fig.axes if ax.get_images()]
    assert len(maps) == 3 and len(fig.axes) == 4  # three panels + ONE colour bar
    clims = {ax.get_images()[0].get_clim() for ax in maps}
    assert clims == {(-7.0, 7.0)}  # the largest |weight| of any panel, symmetric
    assert "(+7.00)" in maps[1].get_title()  # the boxed head of each panel is named
    _save(fig)


def test_uas_by_relation_bars_draw_sd_error_bars():
    t = pd.DataFrame({"relation": ["det", "case", "other"], "n": [30, 20, 5],
                      "uas": [80.0, 60.0, 40.0], "sd": [1.0, 2.0, np.nan]})
    fig = probe_plots.uas_by_relation_bars({"dev": t, "test": t.drop(columns="sd")},
                                           reference=("rb", t), title="x")
    ax = fig.axes[0]
    from matplotlib.container import BarContainer, ErrorbarContainer

    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    errs = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2 and len(errs) == 1  # one bar set per table; sd only for dev
    segments = errs[0].lines[2][0].get_segments()
    assert [round(s[1][0] - s[0][0], 6) for s in segments] == [2.0, 4.0, 0.0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["det (n=30)", "case (n=20)",
                                                           "other (n=5)"]
    _save(fig)


def test_seed_points_one_dot_per_seed_and_mean_sd():
    per_seed = pd.DataFrame({"probe": ["A"] * 3 + ["B"] * 3, "seed": [0, 1, 2] * 2,
                             "uas": [50.0, 52.0, 54.0, 30.0, 30.0, 30.0]})
    fig = probe_plots.seed_points(per_seed, "uas", fixed={"R": 20.0},
                                  references={"paper": {"A": 60.0, "R": 26.0, "Q": 1.0}})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["R", "A", "B"]
    dots = ax.collections[0].get_offsets()  # the seeds of A
    assert sorted(np.asarray(dots)[:, 0].tolist()) == [50.0, 52.0, 54.0]
    bar = ax.containers[0]  # A's mean +- sd
    assert bar.lines[0].get_xdata()[0] == 52.0
    seg = bar.lines[2][0].get_segments()[0]
    assert (seg[0][0], seg[1][0]) == (50.0, 54.0)  # sd (ddof 1) = 2
    _save(fig)


def test_training_curves_one_line_per_probe_and_seed():
    curves = pd.DataFrame({"probe": ["A"] * 4 + ["B"] * 4, "seed": [0, 0, 1, 1] * 2,
                           "sentences": [1, 2] * 4, "loss": np.linspace(3, 1, 8)})
    fig = probe_plots.training_curves(curves, title="t")
    ax = fig.axes[0]
    assert len(ax.lines) == 4
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["A", "B"]
    _save(fig)

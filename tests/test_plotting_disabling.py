"""Figures of notebook 07 (plotting.disabling): what each panel shows, on hand-made tables."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from analysis_utils.plotting import disabling as plots  # noqa: E402


def _panels(fig):
    return {ax.get_title(): ax for ax in fig.axes if ax.get_title()}


def test_head_change_grids_marks_significant_heads_and_boxes():
    a = np.zeros((2, 3))
    a[0, 1], a[1, 2] = 2.0, -4.0
    sig = np.zeros((2, 3), bool)
    sig[1, 2] = True
    fig = plots.head_change_grids({"MRPC": a, "RTE": -a}, significant={"MRPC": sig},
                                  boxes={"RTE": [(0, 1)]})
    assert isinstance(fig, Figure) and fig.canvas.manager is None
    axes = _panels(fig)
    assert set(axes) == {"MRPC", "RTE"}
    lo, hi = axes["MRPC"].get_images()[0].get_clim()
    assert (lo, hi) == (-4.0, 4.0)  # symmetric around 0: white means "no change"
    # one scale for every panel, so equal colours are equal changes
    small = plots.head_change_grids({"MRPC": a, "STS-B": a / 4})
    assert {ax.get_images()[0].get_clim() for ax in _panels(small).values()} == {(-4.0, 4.0)}
    (dots,) = axes["MRPC"].lines
    assert list(dots.get_xdata()) == [2] and list(dots.get_ydata()) == [1]  # (head, layer)
    assert not axes["RTE"].lines
    boxes = [p for p in axes["RTE"].patches if isinstance(p, Rectangle)]
    assert [(p.get_x() + 0.5, p.get_y() + 0.5) for p in boxes] == [(1, 0)]
    fig.savefig(io.BytesIO(), format="png")


def _layers():
    rows = []
    for task in ("MRPC", "STS-B"):
        for seed in ((42, 43) if task == "MRPC" else (42,)):
            for layer in (1, 2, 3):  # 1-based, as 07_disabling.csv
                d = float(layer - 2)
                rows.append({"task": task, "seed": seed, "layer": layer, "delta": d,
                             "ci_lo": d - 0.5, "ci_hi": d + 0.5, "holm": layer == 3,
                             "title": f"{task} (title)"})
    return pd.DataFrame(rows)


def test_layer_change_bars_one_bar_per_seed_and_layer():
    fig = plots.layer_change_bars(_layers(), suptitle="Figure 9")
    axes = _panels(fig)
    assert list(axes) == ["MRPC (title)", "STS-B (title)"]
    bars = [p for p in axes["MRPC (title)"].patches if isinstance(p, Rectangle)]
    assert len(bars) == 6  # 3 layers x 2 seeds
    assert sorted(round(b.get_height(), 6) for b in bars) == [-1, -1, 0, 0, 1, 1]
    assert [t.get_text() for t in axes["STS-B (title)"].get_xticklabels()] == ["1", "2", "3"]
    # the table's 1-based layer is the bar's position: layer 1 stands at x = 1, not 2
    one_seed = [p for p in axes["STS-B (title)"].patches if isinstance(p, Rectangle)]
    assert [round(b.get_x() + b.get_width() / 2, 6) for b in one_seed] == [1, 2, 3]
    stars = [line for line in axes["STS-B (title)"].lines if line.get_marker() == "*"]
    assert len(stars) == 1 and list(stars[0].get_ydata()) == [1.5]  # above the CI's top
    fig.savefig(io.BytesIO(), format="png")


def test_pruning_curves_plot_importance_random_mean_and_band():
    rows = []
    for seed in (42, 43):
        for frac in (0.0, 0.5, 1.0):
            rows.append({"task": "RTE", "seed": seed, "order": "importance", "repeat": 0,
                         "fraction": frac, "value": 70 - 10 * frac})
            for rep, drop in enumerate((20, 30)):
                rows.append({"task": "RTE", "seed": seed, "order": "random", "repeat": rep,
                             "fraction": frac, "value": 70 - drop * frac})
    fig = plots.pruning_curves_plot(pd.DataFrame(rows))
    ax = _panels(fig)["RTE"]
    solid = [line for line in ax.lines if line.get_linestyle() == "-"]
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(solid) == 2 and len(dashed) == 2  # per seed: importance, random mean
    assert list(solid[0].get_xdata()) == [0, 50, 100]
    assert list(dashed[0].get_ydata()) == [70, 57.5, 45]
    (band,) = ax.collections  # the random orders' min-max band
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() == 40 and ys.max() == 70
    assert ax.get_xlim() == (-3, 103) and ax.get_legend() is None  # the legend is the figure's
    assert fig.legends
    fig.savefig(io.BytesIO(), format="png")


def test_pruning_curves_plot_floor_and_undefined_steps():
    rows = [{"task": "STS-B", "seed": 42, "order": "importance", "repeat": 0, "fraction": f,
             "value": v} for f, v in ((0.0, 80.0), (0.5, 40.0), (1.0, float("nan")))]
    fig = plots.pruning_curves_plot(pd.DataFrame(rows), floor={"STS-B": 0.0})
    ax = _panels(fig)["STS-B"]
    dotted = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert len(dotted) == 1 and list(dotted[0].get_ydata()) == [0.0, 0.0]
    crosses = [line for line in ax.lines if line.get_marker() == "x"]
    assert len(crosses) == 1 and list(crosses[0].get_xdata()) == [100.0]


def test_head_change_grids_of_fifteen_models_fit_2000_pixels():
    panels = {f"task {k}": np.random.default_rng(k).normal(size=(6, 12)) for k in range(15)}
    fig = plots.head_change_grids(panels, ncols=3)
    width_px = fig.get_size_inches()[0] * 130  # notebook 07 saves at run.figure's dpi
    assert width_px <= 2000, width_px

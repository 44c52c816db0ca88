"""Notebook 06's figures: right panels, lines and bars for a hand-made table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis_utils.plotting import finetuning as ftp


def _visible(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_training_curves_one_panel_per_task_one_line_per_run():
    rows = [{"task": t, "init": i, "seed": s, "step": k, "loss": 1.0 / k}
            for t in ("MRPC", "RTE") for i, s in (("pretrained", 42), ("pretrained", 43),
                                                  ("random", 42)) for k in (10, 20, 30)]
    rows.append({"task": "MRPC", "init": "pretrained", "seed": 42, "step": 30, "loss": np.nan,
                 "eval_f1": 0.8})  # evaluation rows have no loss and are skipped
    fig = ftp.training_curves(pd.DataFrame(rows))
    axes = _visible(fig)
    assert [ax.get_title() for ax in axes] == ["MRPC", "RTE"]
    assert [len(ax.lines) for ax in axes] == [3, 3]
    np.testing.assert_allclose(axes[0].lines[0].get_ydata(), [0.1, 0.05, 1 / 30])
    # one colour per init and one style per seed, the same in every panel
    for ax in axes:
        got = {line.get_label(): (line.get_color(), line.get_linestyle()) for line in ax.lines}
        assert got["pretrained, 42"][0] == got["pretrained, 43"][0] != got["random, 42"][0]
        assert got["pretrained, 42"][1] == got["random, 42"][1] != got["pretrained, 43"][1]
    assert {line.get_color() for line in axes[0].lines} == {line.get_color()
                                                           for line in axes[1].lines}


def test_training_curves_draw_the_dev_metric_on_a_right_axis():
    rows = [{"task": "MRPC", "init": "pretrained", "seed": 42, "step": k, "loss": 1.0 / k,
             "eval_f1": np.nan} for k in (10, 20)]
    rows += [{"task": "MRPC", "init": "pretrained", "seed": 42, "step": k, "loss": np.nan,
              "eval_f1": f} for k, f in ((10, 0.7), (20, 0.8))]
    fig = ftp.training_curves(pd.DataFrame(rows), metric={"MRPC": "eval_f1"})
    right = [ax for ax in fig.axes if ax.get_ylabel().startswith("dev f1")]
    assert len(right) == 1
    np.testing.assert_allclose(right[0].lines[0].get_ydata(), [0.7, 0.8])


def test_layer_profiles_styles_and_reference():
    df = pd.DataFrame([{"task": "SST-2", "model": m, "feature": f, "layer": la,
                        "score": la / 10 + (m == "fine-tuned")}
                       for m in ("pre-trained", "fine-tuned") for f in ("[CLS]", "[SEP]")
                       for la in (1, 2, 3)])
    fig = ftp.layer_profiles(df, styles={"pre-trained": "--", "fine-tuned": "-"},
                             reference={"SST-2": 0.05})
    (ax,) = _visible(fig)
    styles = sorted(line.get_linestyle() for line in ax.lines)
    assert styles == ["-", "-", "--", "--", ":"]  # 2 features x 2 models + the reference
    assert list(ax.get_xticks()) == [1, 2, 3]


def test_grouped_bars_heights_and_percent():
    df = pd.DataFrame({"task": ["A"] * 4, "target": ["x", "y", "x", "y"],
                       "model": ["pre", "pre", "ft", "ft"], "weight": [0.1, 0.2, 0.3, 0.4]})
    fig = ftp.grouped_bars(df, value="weight", group="target", bar="model", panel="task",
                           percent=True)
    (ax,) = _visible(fig)
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(heights, [10, 20, 30, 40])


def test_training_curves_have_one_legend_below_the_panels_not_over_the_data():
    rows = [{"task": t, "init": i, "seed": 42, "step": k, "loss": 1.0 / k, "eval_f1": np.nan}
            for t in ("MRPC", "RTE") for i in ("pretrained", "random") for k in (10, 20)]
    rows += [{"task": "MRPC", "init": "pretrained", "seed": 42, "step": 20, "loss": np.nan,
              "eval_f1": 0.8}]
    fig = ftp.training_curves(pd.DataFrame(rows), metric={"MRPC": "eval_f1"}, title="t")
    assert all(ax.get_legend() is None for ax in fig.axes)  # no legend inside a panel
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "pretrained, 42", "random, 42", "dev metric after each epoch (markers, right axis)"]

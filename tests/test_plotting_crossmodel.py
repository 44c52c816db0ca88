"""Notebook 08's figures: one relative-depth axis, one colour per model in every figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import io  # noqa: E402

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from analysis_utils.analyses import crossmodel as cm  # noqa: E402
from analysis_utils.plotting import crossmodel as cp  # noqa: E402


def _save(fig):
    fig.savefig(io.BytesIO(), format="png")


def test_colours_are_stable_and_the_paper_is_black():
    colours = cp.model_colours([cm.PAPER, "a (6 x 12)", "b (12 x 12)", "a (6 x 12)"])
    assert colours[cm.PAPER] == "black"
    assert colours["a (6 x 12)"] == cp.PALETTE[0] and colours["b (12 x 12)"] == cp.PALETTE[1]


def test_sink_profiles_put_both_depths_on_one_axis():
    rows = [{"model": m, "weights": w, "relative depth": layer / n, "first token": 0.1,
             "separator": 0.2, "punctuation": 0.05}
            for m, n in (("a", 2), ("b", 4)) for w in ("pre-trained", "control")
            for layer in range(1, n + 1)]
    fig = cp.sink_profiles(pd.DataFrame(rows), {"a": "red", "b": "blue"},
                           paper_band=(0.5, 0.5, 10 / 12), paper_notes={"separator": "x"})
    axes = fig.axes
    assert len(axes) == 3 and axes[1].get_title() == "separator\npaper (BERT-base): x"
    xs = sorted({x for line in axes[0].get_lines() for x in line.get_xdata()})
    assert xs == [0.25, 0.5, 0.75, 1.0]  # 2 and 4 layers on the same relative-depth axis
    assert axes[0].get_xlim() == (0, 1.04)
    _save(fig)


def test_norm_profiles_weight_solid_norm_dashed_control_faint():
    rows = [{"model": m, "weights": w, "layer": layer, "relative depth": layer / n,
             "target": t, "weight share": 0.4, "norm share": 0.05}
            for m, n in (("a", 2), ("b", 4)) for w in ("pre-trained", "control")
            for layer in range(1, n + 1) for t in ("first token", "separator", "punctuation")]
    fig = cp.norm_profiles(pd.DataFrame(rows), {"a": "red", "b": "blue"},
                           titles={"separator": "separator ([SEP], </s>)"}, weight_min=0.1)
    first, sep = fig.axes
    assert sep.get_title() == "separator ([SEP], </s>)" and first.get_title() == "first token"
    lines = [x for x in first.get_lines() if x.get_linestyle() != ":"]
    assert len(lines) == 2 * 2 * 2  # models x weights x (weight, norm share)
    assert [x.get_ydata()[0] for x in first.get_lines() if x.get_linestyle() == ":"] == [0.1]
    assert {x.get_linestyle() for x in lines} == {"-", "--"}
    assert {x.get_alpha() for x in lines} == {1.0, 0.3}  # the control faint
    xs = sorted({x for line in lines for x in line.get_xdata()})
    assert xs == [0.25, 0.5, 0.75, 1.0] and first.get_xlim() == (0, 1.04)
    assert first.get_ylim()[1] == pytest.approx(0.44)
    _save(fig)


def test_depth_map_one_line_per_behaviour():
    rows = pd.DataFrame({"row": ["syntax: det", "syntax: det", "coreference"],
                         "model": [cm.PAPER, "a", "a"], "relative depth": [8 / 12, 0.5, 0.5],
                         "label": ["8-11", "3-9", "3-10"]})
    fig = cp.depth_map(rows, cp.model_colours([cm.PAPER, "a"]))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["syntax: det", "coreference"]
    assert {t.get_text() for t in ax.texts} == {"8-11", "3-9", "3-10"}
    _save(fig)


def test_depth_map_keeps_coincident_heads_apart():
    rows = pd.DataFrame({"row": ["next-token heads"] * 3, "model": [cm.PAPER] * 3,
                         "relative depth": [2 / 12, 2 / 12, 1 / 12]})
    ax = cp.depth_map(rows, cp.model_colours([cm.PAPER])).axes[0]
    points = ax.collections[0].get_offsets()
    assert len({tuple(p) for p in points.tolist()}) == 3  # the two layer-2 heads both show
    assert points[0][0] == points[1][0]  # at the same depth


def test_entropy_and_summary_panels_draw(tmp_path):
    ent = pd.DataFrame({"model": ["a", "a"], "relative depth": [0.5, 1.0],
                        "entropy / control": [0.5, 0.8], "entropy from first token": [1, 3],
                        "control entropy from first token": [4.5, 4.5]})
    _save(cp.entropy_profiles(ent, {"a": "red"}, paper_cls_last=3.89))
    uas = pd.DataFrame({"probe": ["Attention only", "Attention only"], "model": [cm.PAPER, "a"],
                        "uas": [61.0, 57.0], "sd": [float("nan"), 0.2]})
    cl = pd.DataFrame({"model": ["a", "a"], "weights": ["pre-trained", "control"],
                       "ratio": [0.87, 1.0]})
    mt = pd.DataFrame({"model": ["a"], "type": ["Heterogeneous"], "share": [0.45],
                       "lowest": [0.3], "highest": [0.6]})
    fig = cp.summary_panels(uas, cl, mt, cp.model_colours([cm.PAPER, "a"]),
                            paper_het=(0.32, 0.61))
    assert len(fig.axes) == 3
    _save(fig)

"""Figures of notebook 05: the MDS map of heads, the proportions with their spread over
seeds and the paper's range, and figures written without being shown."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from analysis_utils.analyses import clustering as cl  # noqa: E402
from analysis_utils.plotting import maptypes as mp  # noqa: E402


def test_layer_colours_are_distinct_and_dark_enough_on_white():
    for n in (6, 12):
        cols = [to_rgb(c) for c in mp.layer_colours(n)]
        assert len(set(cols)) == n
        # relative luminance well below white's 1.0 (matplotlib's viridis yellow is ~0.87)
        lum = [0.2126 * r + 0.7152 * g + 0.0722 * b for r, g, b in cols]
        assert max(lum) < 0.7, lum


def test_place_labels_never_overlaps_and_honours_priority():
    xy = np.array([[0.0, 0.0], [0.5, 0.2], [5.0, 5.0], [0.2, 0.1]])
    keep = mp.place_labels(xy, [1.0] * 4, 1.0, priority=[3, 0, 1, 2])
    assert keep.tolist() == [False, False, True, True]


def test_mds_plot_equal_sizes_discrete_colours_legends_outside():
    idx = cl.head_index(6, 12)
    coords = np.random.default_rng(0).normal(size=(72, 2))
    labels = ["other"] * 60 + ["[SEP]"] * 6 + ["broad"] * 6
    fig = mp.mds_plot(coords, idx["layer"], labels, heads=idx["head"], title="t")
    ax = fig.axes[0]
    sizes = np.concatenate([c.get_sizes() for c in ax.collections])
    assert len(set(sizes.tolist())) == 1  # every head the same size
    fig.canvas.draw()
    right = ax.get_window_extent().x1
    for leg in [a for a in ax.artists] + [ax.get_legend()]:
        assert leg.get_window_extent().x0 >= right  # no legend covers a head
    titles = {leg.get_title().get_text() for leg in [*ax.artists, ax.get_legend()]}
    assert titles == {"layer", "behaviour"}
    texts = ax.texts
    assert 0 < len(texts) <= 72
    boxes = [t.get_window_extent() for t in texts]
    for i, a in enumerate(boxes):  # drawn labels do not overlap
        for b in boxes[i + 1:]:
            assert not a.overlaps(b) or a.x1 - b.x0 < 2 or b.x1 - a.x0 < 2


def test_type_proportions_plot_error_bars_and_paper_band():
    rows = [{"task": t, "type": k, "share_mean": m, "share_min": m - 0.02, "share_max": m + 0.03}
            for t in ("CoLA", "MRPC") for k, m in (("Vertical", 0.5), ("Heterogeneous", 0.4))]
    fig = mp.type_proportions_plot(pd.DataFrame(rows), ["Vertical", "Heterogeneous"],
                                   paper_range={"type": "Heterogeneous", "low": 0.32,
                                                "high": 0.61, "label": "paper"})
    ax = fig.axes[0]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches if p.get_height() > 0)
    assert heights == [40.0, 40.0, 50.0, 50.0]
    assert "paper" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1 - 1



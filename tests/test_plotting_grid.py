"""The one layer x head grid every heatmap uses, and the one figure convention: figures are
built without pyplot and shown once, by report.Run.figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from analysis_utils.plotting import grid  # noqa: E402
from analysis_utils.plotting import probes as probe_plots  # noqa: E402
from analysis_utils.plotting import surface as surface_plots  # noqa: E402
from analysis_utils.publish import report  # noqa: E402


def _ticks(ax, axis):
    return [t.get_text() for t in getattr(ax, f"get_{axis}ticklabels")()]


def _boxes(ax):
    return [(p.get_y() + 0.5, p.get_x() + 0.5) for p in ax.patches if isinstance(p, Rectangle)]


def test_one_panel_shape_ticks_and_colorbar():
    values = np.arange(12.0).reshape(3, 4)  # 3 layers x 4 heads, 0-based array
    fig = grid.head_grids({"t": values})
    assert isinstance(fig, Figure) and fig.canvas.manager is None  # no pyplot state
    ax, cbar = fig.axes  # the map and its colour bar
    assert ax.get_images()[0].get_array().shape == (3, 4)
    assert _ticks(ax, "y") == ["1", "2", "3"]  # layers 1-based, layer 1 on top
    assert _ticks(ax, "x") == ["1", "2", "3", "4"]  # heads 1-based
    assert ax.get_title() == "t" and _boxes(ax) == []
    fig.savefig(__import__("io").BytesIO(), format="png")


def test_panels_marks_and_shared_scale():
    a = np.zeros((2, 3))
    a[1, 2] = 5.0
    b = np.ones((2, 3))
    fig = grid.head_grids({"a": a, "b": b, "c": -a}, ncols=2, vmin=0, vmax=10,
                          marks={"a": (1, 2), "b": None}, colorbar="shared")
    assert len(fig.axes) == 4  # three panels (the empty fourth removed) + one colour bar
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["a", "b", "c"]
    assert _boxes(panels[0]) == [(1, 2)] and _boxes(panels[1]) == []
    assert all(ax.get_images()[0].get_clim() == (0, 10) for ax in panels)
    fig = grid.head_grids({"a": a, "c": -a}, marks="max", symmetric=True, colorbar=None)
    assert len(fig.axes) == 2 and _boxes(fig.axes[0]) == [(1, 2)]
    assert fig.axes[0].get_images()[0].get_clim() == (-5, 5)
    with pytest.raises(ValueError, match="colorbar"):
        grid.head_grids({"a": a}, colorbar="left")
    with pytest.raises(ValueError, match="layers, heads"):
        grid.head_grids({"a": np.zeros(3)})


def test_every_heatmap_goes_through_the_grid():
    w = np.array([[0.1, -0.3], [0.7, 0.2]])
    fig = probe_plots.head_weight_grids({"w": w, "u": -w})
    maps = [ax for ax in fig.axes if ax.get_images()]
    assert len(maps) == 2 and _ticks(maps[0], "x") == ["1", "2"]
    assert "head 2-1" in maps[0].get_title() and _boxes(maps[0]) == [(1, 0)]
    df = pd.DataFrame({"layer": [1, 1, 2, 2], "head": [1, 2, 1, 2], "sep": [0.1, 0.2, 0.3, 0.4]})
    ax = surface_plots.head_heatmap(df, "sep").axes[0]
    assert _ticks(ax, "y") == ["1", "2"] and len(ax.texts) == 4  # annotated cells


def test_run_figure_shows_each_figure_once_in_a_kernel(tmp_path, monkeypatch):
    import IPython
    import IPython.display
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setenv(report.OUTPUT_ENV, str(tmp_path))
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    run = report.start_run("42", {})
    fig = grid.head_grids({"t": np.eye(2)})
    pyfig = plt.figure()
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # a script: nothing shown
    run.figure(fig, "script")
    assert shown == []
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Shell", (), {"kernel": 1})())
    run.figure(fig, "grid")  # built without pyplot
    run.figure(pyfig, "pyplot")  # tracked by pyplot: shown here, then closed
    assert len(shown) == 2 and all(isinstance(s, IPython.display.Image) for s in shown)
    assert not plt.fignum_exists(pyfig.number)  # the inline backend will not show it again


def test_font_scale_enlarges_text_and_defaults_stay():
    values = np.arange(12.0).reshape(3, 4)
    plain = grid.head_grids({"t": values}, colorbar="shared", colorbar_label="x")
    big = grid.head_grids({"t\nsecond line": values}, colorbar="shared", colorbar_label="x",
                          font_scale=1.5)
    small_ax, big_ax = plain.axes[0], big.axes[0]
    assert small_ax.get_xticklabels()[0].get_fontsize() == grid.TICK_SIZE
    assert big_ax.get_xticklabels()[0].get_fontsize() == 1.5 * grid.TICK_SIZE
    assert big_ax.title.get_fontsize() == 1.5 * grid.TITLE_SIZE
    assert big.axes[1].get_ylabel() == "x" and big.axes[1].yaxis.label.get_fontsize() == \
        1.5 * (grid.LABEL_SIZE - 1)
    assert big.get_figheight() > plain.get_figheight()  # room for the larger title lines
    assert plain.get_size_inches().tolist() == grid.head_grids(
        {"t": values}, colorbar="shared").get_size_inches().tolist()

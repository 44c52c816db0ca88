"""Each figure function returns a Figure with the expected axes (Agg backend, nothing saved)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis_utils.plotting import surface as surface_plots  # noqa: E402


@pytest.fixture
def head_df():
    rng = np.random.default_rng(0)
    layers, heads = 3, 4
    df = pd.DataFrame({
        "layer": np.repeat(np.arange(1, layers + 1), heads),
        "head": np.tile(np.arange(1, heads + 1), layers),
    })
    for col in ("cls", "sep", "punct", "other", "entropy", "entropy_cls"):
        df[col] = rng.random(len(df))
    df.attrs["uniform"] = {"sep": 0.02, "entropy": 4.5, "entropy_cls": 4.5}
    return df


def _render(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()


def test_layer_scatter(head_df):
    fig = surface_plots.layer_scatter(head_df, ["cls", "sep", "punct"],
                                 baselines=head_df.attrs["uniform"])
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "2", "3"]
    fig2 = surface_plots.layer_scatter(head_df, ["cls", "sep", "punct", "other", "entropy"], ncols=3)
    assert len(fig2.axes) == 5
    _render(fig2)
    assert len(surface_plots.layer_scatter(head_df, "sep").axes) == 1


def test_head_heatmap(head_df):
    fig = surface_plots.head_heatmap(head_df, "sep")
    assert isinstance(fig, Figure) and len(fig.axes) == 2  # map + colour bar
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "2", "3"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "4"]
    _render(fig)


def test_entropy_plot(head_df):
    fig = surface_plots.entropy_plot(head_df)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert any(abs(line.get_ydata()[0] - 4.5) < 1e-9 for line in fig.axes[0].get_lines()
               if len(line.get_ydata()) == 2)
    assert len(surface_plots.entropy_plot(head_df, uniform=4.0, show_cls=False).axes) == 1


def test_gradient_plot():
    df = pd.DataFrame([{"layer": layer, "target": t, "mean_abs_grad": 1e-3 / layer,
                        "mean_attention": 0.01}
                       for layer in range(1, 5) for t in ("[SEP]", "./,", "other")])
    fig = surface_plots.gradient_plot(df)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert len(fig.axes[0].get_lines()) == 3
    assert len(surface_plots.gradient_plot(df, show_attention=True, log=True).axes) == 2
    _render(fig)


def test_attention_map():
    n = 6
    a = np.eye(n, k=-1)
    a[0, 0] = 1.0
    tokens = ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]
    fig = surface_plots.attention_map(a, tokens, title="1-1")
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert fig.axes[0].get_title() == "1-1"
    fig2 = surface_plots.attention_map(a, tokens, style="lines")
    assert len(fig2.axes) == 1
    _render(fig2)
    with pytest.raises(ValueError):
        surface_plots.attention_map(a, tokens[:-1])


def test_entropy_legend_sits_under_the_panels(head_df):
    fig = surface_plots.entropy_plot(head_df)
    assert all(ax.get_legend() is None for ax in fig.axes)  # none covers the points
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["one head", "layer mean",
                                                          "uniform attention"]
    _render(fig)


def test_gradient_plot_carries_its_caveat():
    df = pd.DataFrame([{"layer": layer, "target": t, "mean_abs_grad": 1e-3,
                        "mean_attention": 0.01}
                       for layer in range(1, 4) for t in ("[SEP]", "other")])
    caveat = "masked-LM head fitted on the frozen encoder: 7.9% vs. 7.3%; uninformative"
    fig = surface_plots.gradient_plot(df, title="Gradient importance", caveat=caveat)
    title = fig._suptitle.get_text()
    assert title.startswith("Gradient importance\nCaveat: masked-LM head")
    assert "7.9% vs. 7.3%" in title.replace("\n", " ")
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    _render(fig)


def test_attention_map_grid_one_colour_bar_for_every_panel():
    tokens = ["[CLS]", "the", "cat", ".", "[SEP]"]
    prev = np.eye(5, k=-1)
    prev[0, 0] = 1.0
    panels = [dict(attn=prev, tokens=tokens, title="previous token: head 1-1"),
              dict(attn=np.full((5, 5), 0.2), tokens=tokens, title="broad: head 1-2"),
              dict(attn=np.eye(5), tokens=tokens[:5], title="current")]
    fig = surface_plots.attention_map_grid(panels, ncols=2)
    maps = [ax for ax in fig.axes if ax.get_images()]
    assert [ax.get_title() for ax in maps] == [p["title"] for p in panels]
    assert len(fig.axes) == len(panels) + 1  # the empty fourth cell removed, one colour bar
    assert {ax.get_images()[0].norm.vmax for ax in maps} == {1.0}  # one scale
    assert [t.get_text() for t in maps[0].get_yticklabels()] == tokens
    _render(fig)
    with pytest.raises(ValueError, match="n=5 tokens"):
        surface_plots.attention_map_grid([dict(attn=np.eye(4), tokens=tokens, title="x")])


def test_stability_bars_name_a_question_as_asked():
    """The ledger stage names the bootstrap question by its streams on the axis (the table
    keeps its column name)."""
    from analysis_utils.plotting.ledger import stability_bars

    shares = pd.DataFrame({"model": ["m", "m"], "question": ["bootstrap seed", "other model"],
                           "rows": [4, 0], "hold": [3, 0], "share": [0.75, float("nan")]})
    fig = stability_bars(shares, labels={"bootstrap seed": "bootstrap seed (2 other streams)"})
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks == ["bootstrap seed (2 other streams)", "other model"]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "3 / 4" in texts and "n/a: applies to no row" in texts

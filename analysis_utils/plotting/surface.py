"""Figures of Clark et al. 2019, Section 3 (Figures 1-4), as matplotlib ``Figure`` objects.

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (no global
figure state, nothing shown or saved here; ``analysis_utils.publish.report`` saves them). Layers
and heads are labelled 1-based, as in the paper. Inputs are the DataFrames of
:mod:`analysis_utils.analyses.surface` and :mod:`analysis_utils.analyses.gradients` (columns ``layer``,
``head`` / ``target`` and the statistics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .grid import head_grids

COLORS = {
    "cls": "#e74c3c", "sep": "#3498db", "punct": "#59d98e", "other": "#95a5a6",
    "previous": "#9b59b6", "next": "#f39c12", "current": "#159d82",
    "[SEP]": "#3498db", "./,": "#59d98e", "[CLS]": "#e74c3c",
    "entropy": "#3498db", "entropy_cls": "#e74c3c",
}
LABELS = {
    "cls": "[CLS]", "sep": "[SEP]", "punct": ". or ,", "other": "other tokens",
    "previous": "previous token", "next": "next token", "current": "current token",
    "sep_to_sep": "[SEP] -> [SEP]", "rest_to_sep": "other -> [SEP]",
    "entropy": "entropy (nats)", "entropy_cls": "entropy from [CLS] (nats)",
    "max_weight": "max weight in a row",
}


def _layer_axis(ax, layers: Sequence[int]) -> None:
    layers = sorted(set(int(x) for x in layers))
    ax.set_xticks(layers)
    ax.set_xlim(min(layers) - 0.6, max(layers) + 0.6)
    ax.set_xlabel("Layer")
    ax.grid(True, alpha=0.3)


def _points(ax, df: pd.DataFrame, col: str, color: str, jitter: float = 0.12,
            seed: int = 0) -> None:
    """One point per head at its layer (jittered), plus the per-layer mean as a line."""
    rng = np.random.default_rng(seed)
    x = df["layer"].to_numpy(float) + rng.uniform(-jitter, jitter, len(df))
    ax.scatter(x, df[col], s=14, color=color, alpha=0.7, linewidths=0)
    means = df.groupby("layer")[col].mean()
    ax.plot(means.index, means.values, color=color, lw=1.5, label="layer mean")


def layer_scatter(df: pd.DataFrame, value_col: str | Sequence[str],
                  titles: Sequence[str] | None = None,
                  baselines: Mapping[str, float] | None = None,
                  ylabel: str = "Avg. attention", ncols: int | None = None,
                  ylim: tuple[float, float] | None = (0.0, 1.0),
                  panel_size: tuple[float, float] = (3.2, 2.6)) -> Figure:
    """Figure 2 style: one panel per column of ``value_col``; each point is one head,
    placed at its (1-based) layer; a line joins the per-layer means. ``baselines`` maps a
    column to a value drawn as a dashed line (e.g. ``df.attrs["uniform"]``).
    """
    cols = [value_col] if isinstance(value_col, str) else list(value_col)
    ncols = ncols or len(cols)
    nrows = int(np.ceil(len(cols) / ncols))
    fig = Figure(figsize=(panel_size[0] * ncols, panel_size[1] * nrows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False).ravel())
    for i, col in enumerate(cols):
        ax = axes[i]
        _points(ax, df, col, COLORS.get(col, "#34495e"))
        if baselines is not None and col in baselines:
            ax.axhline(baselines[col], color="k", ls="--", lw=1, label="uniform")
        ax.set_title(titles[i] if titles else LABELS.get(col, col))
        _layer_axis(ax, df["layer"])
        if ylim is not None:
            ax.set_ylim(*ylim)
        if i % ncols == 0:
            ax.set_ylabel(ylabel)
    for ax in axes[len(cols):]:
        fig.delaxes(ax)
    return fig


def head_heatmap(df: pd.DataFrame, value_col: str, title: str | None = None,
                 cmap: str = "viridis", annotate: bool = True,
                 vmin: float | None = None, vmax: float | None = None, fmt: str = ".2f") -> Figure:
    """Layers x heads heatmap of one statistic (:func:`.grid.head_grids`; the frame's
    ``layer``/``head`` are 1-based, as are the tick labels). Values are written in the cells
    when there are at most 200. Returns a figure with two axes: the map and its colour bar."""
    grid = df.pivot(index="layer", columns="head", values=value_col).sort_index()
    grid = grid.reindex(sorted(grid.columns), axis=1)
    return head_grids({title or LABELS.get(value_col, value_col): grid.to_numpy(float)},
                      cmap=cmap, vmin=vmin, vmax=vmax, colorbar="panel",
                      annotate=annotate and grid.size <= 200, fmt=fmt, cell=0.5)


def entropy_plot(df: pd.DataFrame, uniform: float | Mapping[str, float] | None = None,
                 show_cls: bool = True) -> Figure:
    """Figure 4: per-head attention entropy (nats) by layer with per-layer means and the
    entropy of uniform attention (``log n`` averaged over examples; taken from
    ``df.attrs["uniform"]`` when not given). ``show_cls`` adds a panel with the entropy of
    attention from [CLS]. Returns one or two axes."""
    if uniform is None:
        uniform = df.attrs.get("uniform")
    cols = ["entropy"] + (["entropy_cls"] if show_cls and "entropy_cls" in df else [])
    fig = Figure(figsize=(4.2 * len(cols), 3.5), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(cols), squeeze=False).ravel())
    top = float(np.nanmax(df[cols].to_numpy(float)))
    has_uniform = False
    for ax, col in zip(axes, cols, strict=True):
        _points(ax, df, col, COLORS[col])
        u = uniform.get(col) if isinstance(uniform, Mapping) else uniform
        if u is not None:
            ax.axhline(u, color="k", ls="--", lw=1, label="uniform attention")
            top = max(top, float(u))
            has_uniform = True
        ax.set_title("Attention entropy" if col == "entropy" else "Entropy from [CLS]")
        ax.set_ylabel("Avg. entropy (nats)")
        ax.set_ylim(0, top * 1.08)
        _layer_axis(ax, df["layer"])
    # One legend under the panels: inside an axes it covered heads' points.
    handles = [Line2D([], [], ls="", marker="o", ms=4, color="#7f8c8d", label="one head"),
               Line2D([], [], color="#7f8c8d", lw=1.5, label="layer mean")]
    if has_uniform:
        handles.append(Line2D([], [], color="k", ls="--", lw=1, label="uniform attention"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8,
               frameon=False)
    return fig


def gradient_plot(df: pd.DataFrame, show_attention: bool = False, log: bool = False,
                  title: str = "", caveat: str = "") -> Figure:
    """Figure 3: mean |d loss / d attention weight| per layer for attention to [SEP], to
    periods/commas and to other tokens (one line each). ``show_attention`` adds a panel
    with the mean attention weight on one token of each class. One or two axes.

    title: the figure's title; caveat: lines under it (wrapped to the figure's width, after
    "Caveat:"): what a reader must know before reading the curves (e.g.
    ``gradients.head_quality_caption``: how well the masked-LM head predicts)."""
    cols = ["mean_abs_grad"] + (["mean_attention"] if show_attention else [])
    fig = Figure(figsize=(4.2 * len(cols), 3.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(cols), squeeze=False).ravel())
    for ax, col in zip(axes, cols, strict=True):
        for target, sub in df.groupby("target", sort=False):
            sub = sub.sort_values("layer")
            ax.plot(sub["layer"], sub[col], marker="o", ms=4, label=target,
                    color=COLORS.get(target, "#95a5a6"))
        ax.set_ylabel("Avg. attention gradient" if col == "mean_abs_grad"
                      else "Avg. attention weight")
        ax.set_title("Gradient-based importance" if col == "mean_abs_grad"
                     else "Attention per token of the class")
        if log:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        _layer_axis(ax, df["layer"])
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8,
               frameon=False)
    if title or caveat:
        import textwrap

        width = int(14 * fig.get_figwidth())  # characters of 9-10 pt text across the figure
        lines = [title] if title else []
        lines += textwrap.wrap(f"Caveat: {caveat}", width) if caveat else []
        fig.suptitle("\n".join(lines), fontsize=10)
    return fig


def attention_map(attn_2d, tokens: Sequence[str], title: str | None = None,
                  style: str = "heatmap", max_tokens: int = 60) -> Figure:
    """Figure 1: one head's attention over one example, either as a heatmap (rows: attending
    token, columns: attended token) or in the paper's line style (tokens in two columns, a
    line from each token on the left to each token on the right, opacity = weight).
    Only the first ``max_tokens`` tokens are drawn. One axes."""
    a = np.asarray(attn_2d, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] != len(tokens):
        raise ValueError(f"need an (n, n) map for n={len(tokens)} tokens, got {a.shape}")
    n = min(len(tokens), max_tokens)
    a, tokens = a[:n, :n], list(tokens)[:n]
    if style == "heatmap":
        size = 2.0 + 0.16 * n
        fig = Figure(figsize=(size, size), layout="constrained")
        ax = fig.subplots()
        ax.imshow(a, cmap="Blues", vmin=0, vmax=max(float(a.max()), 1e-9))
        ax.set_xticks(range(n), tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(n), tokens, fontsize=7)
        ax.set_xlabel("attended token")
        ax.set_ylabel("attending token")
    elif style == "lines":
        fig = Figure(figsize=(3.0, 0.5 + 0.2 * n), layout="constrained")
        ax = fig.subplots()
        y = -np.arange(n)
        for i in range(n):
            ax.text(0, y[i], tokens[i], ha="right", va="center", fontsize=7)
            ax.text(1, y[i], tokens[i], ha="left", va="center", fontsize=7)
        rows, cols = np.nonzero(a > 0.01)
        for i, j in zip(rows, cols, strict=True):
            ax.plot([0.05, 0.95], [y[i], y[j]], color="#3498db", lw=1.5,
                    alpha=float(min(1.0, a[i, j])))
        ax.set_xlim(-0.6, 1.6)
        ax.set_ylim(-n, 1)
        ax.axis("off")
    else:
        raise ValueError(f"style must be 'heatmap' or 'lines', got {style!r}")
    if title:
        ax.set_title(title)
    return fig


def attention_map_grid(panels: Sequence[Mapping], ncols: int = 2, gamma: float = 0.5,
                       suptitle: str = "", token_size: float = 0.13) -> Figure:
    """Figure 1 as one figure: several heads' maps side by side, one shared colour bar.

    panels: dicts with ``attn`` (an ``(n, n)`` map of one head, rows = attending tokens),
    ``tokens`` (``n`` labels) and ``title``. Every panel uses the same colour scale, 0 to 1 with
    a power norm (``gamma`` 0.5: the square root), so a broad head's weights of a few percent
    are visible beside a head that puts everything on one token; the colour bar reads in
    attention weights. ``token_size``: inches per token row. Returns the figure (panels and
    one colour bar)."""
    if not panels:
        raise ValueError("no panels to draw")
    for p in panels:
        a = np.asarray(p["attn"])
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] != len(p["tokens"]):
            raise ValueError(f"panel {p.get('title', '')!r}: need an (n, n) map for "
                             f"n={len(p['tokens'])} tokens, got {a.shape}")
    ncols = max(1, min(ncols, len(panels)))
    nrows = -(-len(panels) // ncols)
    # Sized for the typical panel: one much longer map (an example no short segment could
    # give) gets smaller labels instead of making every other panel small.
    n = int(np.median([len(p["tokens"]) for p in panels]))
    side = token_size * n + 0.9  # the map plus its token labels
    fig = Figure(figsize=(ncols * side + 0.7, nrows * (side + 0.4)), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    norm = PowerNorm(gamma, vmin=0.0, vmax=1.0)
    im = None
    for ax, p in zip(axes, panels, strict=False):
        a = np.asarray(p["attn"], dtype=float)
        k = len(p["tokens"])
        im = ax.imshow(a, cmap="Blues", norm=norm, interpolation="nearest")
        size = max(3.0, min(8.0, 8.0 * n / k))
        ax.set_xticks(range(k), p["tokens"], rotation=90, fontsize=size)
        ax.set_yticks(range(k), p["tokens"], fontsize=size)
        ax.tick_params(length=2, pad=1)
        ax.set_title(p.get("title", ""), fontsize=9)
    for ax in axes[len(panels):]:
        fig.delaxes(ax)
    axes[0].set_ylabel("attending token", fontsize=8)
    axes[0].set_xlabel("attended-to token", fontsize=8)
    cb = fig.colorbar(im, ax=list(axes[:len(panels)]), shrink=min(0.6, 2.0 / nrows), pad=0.01)
    cb.set_label(f"attention weight (colour ~ weight^{gamma:g})", fontsize=8)
    cb.set_ticks([0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0])
    cb.ax.tick_params(labelsize=7)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    return fig


def norm_share_plot(layers: pd.DataFrame, targets: Sequence[str] = ("cls", "sep", "punct"),
                    names: Mapping[str, str] | None = None, title: str | None = None,
                    panel_size: tuple[float, float] = (3.4, 2.8)) -> Figure:
    """Attention norms (Kobayashi et al. 2020) per layer: for each token class, its share of
    the attention weights (solid) and of the weighted-vector norms (dashed), mean over heads.
    ``layers``: :func:`analysis_utils.analyses.norms.layer_summary` frames stacked with a
    ``model_kind`` column (``"model"`` drawn strong, ``"control"`` faint). ``names``: the
    model's own token names for the classes (e.g. ``{"cls": "<s>", "sep": "</s>"}``)."""
    shown = {"cls": "first token", "sep": "separators", "punct": "periods and commas",
             "other": "other tokens"}
    fig = Figure(figsize=(panel_size[0] * len(targets), panel_size[1]), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(targets), squeeze=False).ravel())
    kinds = [k for k in ("model", "control") if k in set(layers["model_kind"])]
    for ax, target in zip(axes, targets, strict=True):
        color = COLORS.get(target, "#34495e")
        for kind in kinds:
            d = layers[(layers["model_kind"] == kind) & (layers["target"] == target)]
            d = d.sort_values("layer")
            alpha, lw = (1.0, 1.8) if kind == "model" else (0.35, 1.2)
            ax.plot(d["layer"], d["weight_share"], "-o", color=color, alpha=alpha, lw=lw, ms=3,
                    label=f"weight share ({kind})")
            ax.plot(d["layer"], d["norm_share"], "--s", color=color, alpha=alpha, lw=lw, ms=3,
                    label=f"norm share ({kind})")
        label = shown.get(target, target)
        if names and target in names:
            label = f"{label} ({names[target]})"
        ax.set_title(label)
        _layer_axis(ax, layers["layer"])
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("Share (mean over heads)")
    axes[0].legend(fontsize=7, loc="upper left")
    if title:
        fig.suptitle(title)
    return fig

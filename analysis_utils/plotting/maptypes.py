"""Figures of Clark et al. Section 6 and Kovaleva et al. Section 4.1: the MDS map of heads
(Clark Figure 6), contact sheets of attention maps (the hand-labelling aid and Kovaleva
Figure 1) and the share of each map type per task (Kovaleva Figure 2)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..heads import head_label


def contact_sheet(maps: Sequence[np.ndarray], captions: Sequence[str], *, ncols: int = 6,
                  boundaries: Sequence[int | None] | None = None, title: str | None = None,
                  cell: float = 1.7, gamma: float = 0.5, cmap: str = "Blues"):
    """Grid of small heatmaps, caption under each (e.g. the id to label).

    maps: ``(n, n)`` maps (rows = attending token). Each is drawn with its own colour scale,
    ``(a / max) ** gamma`` (gamma < 1 makes weak structure visible). boundaries: per map the
    index of the first token of the second segment (a red tick on both axes), or None.
    Returns a ``matplotlib.figure.Figure`` (no pyplot state).
    """
    from matplotlib.figure import Figure

    if len(maps) != len(captions):
        raise ValueError(f"{len(maps)} maps for {len(captions)} captions")
    nrows = max(1, -(-len(maps) // ncols))
    fig = Figure(figsize=(ncols * cell, nrows * (cell + 0.25) + (0.4 if title else 0)))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        ax.set_xticks([])
        ax.set_yticks([])
        if k >= len(maps):
            ax.axis("off")
            continue
        a = np.asarray(maps[k], dtype=np.float32)
        scaled = (a / max(float(a.max()), 1e-9)) ** gamma
        ax.imshow(scaled, cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
        b = None if boundaries is None else boundaries[k]
        if b is not None:
            for f in (ax.axvline, ax.axhline):
                f(b - 0.5, color="red", lw=0.6, alpha=0.6)
        ax.set_xlabel(captions[k], fontsize=8, labelpad=1)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(pad=0.3, h_pad=0.4, w_pad=0.2)
    return fig


_MARKERS = ["o", "^", "v", "s", "D", "P", "X", "*", "<", ">", "h", "p", "d", "8"]


def mds_plot(coords: np.ndarray, layers: Sequence[int], labels: Sequence[str] | None = None,
             *, heads: Sequence[int] | None = None, title: str | None = None,
             other: str = "other", figsize=(7.5, 6.0), cmap: str = "viridis"):
    """Scatter of the MDS embedding: colour = layer (1-based in the colour bar), marker =
    behaviour label (``other`` drawn small and faint). With ``heads`` every point is annotated
    ``layer-head`` (1-based, as in the papers). Returns a ``matplotlib.figure.Figure`` (no
    pyplot state, so it works under Agg and displays in notebooks)."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import BoundaryNorm
    from matplotlib.figure import Figure

    coords = np.asarray(coords)
    layers = np.asarray(layers).astype(int)
    labels = np.asarray([other] * len(coords) if labels is None else list(labels), dtype=object)
    lmin, lmax = int(layers.min()), int(layers.max())
    bounds = np.arange(lmin, lmax + 2) - 0.5
    norm = BoundaryNorm(bounds, colormaps[cmap].N)
    fig = Figure(figsize=figsize)
    ax = fig.add_subplot(1, 1, 1)
    uniq = [u for u in dict.fromkeys(labels.tolist()) if u != other]
    order = ([other] if other in labels else []) + sorted(uniq, key=str)
    for k, lab in enumerate(order):
        sel = labels == lab
        is_other = lab == other
        ax.scatter(coords[sel, 0], coords[sel, 1], c=layers[sel], cmap=cmap, norm=norm,
                   marker="." if is_other else _MARKERS[k % len(_MARKERS)],
                   s=40 if is_other else 70, alpha=0.5 if is_other else 0.95,
                   edgecolors="none" if is_other else "k", linewidths=0.5, label=str(lab))
    if heads is not None:
        for (x, y), la, he in zip(coords, layers, np.asarray(heads), strict=True):
            ax.annotate(head_label(la, he), (x, y), fontsize=6, alpha=0.7,
                        xytext=(2, 2), textcoords="offset points")
    sm = ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, ax=ax, ticks=np.arange(lmin, lmax + 1))
    cb.ax.set_yticklabels([str(v + 1) for v in range(lmin, lmax + 1)])
    cb.set_label("layer")
    leg = ax.legend(loc="best", fontsize=8, title="behaviour", markerscale=0.9)
    for h in leg.legend_handles:
        h.set_color("0.5")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title or "Attention heads, MDS of Jensen-Shannon distances")
    fig.tight_layout()
    return fig


def type_proportions_plot(proportions: pd.DataFrame, types: Sequence[str], title: str = "",
                          figsize=(7.5, 4.0)):
    """Kovaleva Figure 2: one stacked bar per task (``proportions``: a ``task`` column and
    one column of shares in [0, 1] per map type in ``types``), in %. Returns a
    ``matplotlib.figure.Figure`` (no pyplot state)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    ax = fig.add_subplot(1, 1, 1)
    proportions.set_index("task")[list(types)].mul(100).plot.bar(
        stacked=True, ax=ax, colormap="tab10", width=0.7, rot=0)
    ax.set_ylabel("% of maps (all heads, all examples)")
    ax.set_xlabel("")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.tight_layout()
    return fig

"""Figures of Clark et al. Section 6 and Kovaleva et al. Section 4.1: the MDS map of heads
(Clark Figure 6), contact sheets of attention maps (the hand-labelling aid and Kovaleva
Figure 1) and the share of each map type per task (Kovaleva Figure 2). Figures are built
without pyplot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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


#: Layer colours with enough contrast on white (Okabe-Ito, without its yellow), one per
#: layer up to 7 layers; deeper models sample a dark-to-orange colormap instead.
LAYER_COLOURS = ("#0072B2", "#56B4E9", "#009E73", "#E69F00", "#CC79A7", "#D55E00", "#000000")
_MARKERS = ["^", "v", "s", "D", "P", "X", "*", "<", ">", "h", "p", "d", "8"]


def layer_colours(num_layers: int) -> list:
    """One colour per layer, distinguishable and visible on white (no pale yellow)."""
    if num_layers <= len(LAYER_COLOURS):
        return list(LAYER_COLOURS[:num_layers])
    from matplotlib import colormaps

    return [colormaps["plasma"](v) for v in np.linspace(0.0, 0.78, num_layers)]


def place_labels(xy: np.ndarray, widths: Sequence[float], height: float,
                 priority: Sequence[int] | None = None) -> np.ndarray:
    """Greedy label placement without overlaps: which labels to draw.

    xy: ``(k, 2)`` anchor points (lower-left corner of each label box) in any units shared
    with ``widths`` and ``height``; labels are taken in ``priority`` order (default: as
    given) and kept when their box overlaps no box kept before. Returns a boolean mask.

    >>> place_labels(np.array([[0, 0], [0.5, 0], [3, 0]]), [1, 1, 1], 1).tolist()
    [True, False, True]
    """
    xy = np.asarray(xy, dtype=float)
    widths = np.asarray(widths, dtype=float)
    order = range(len(xy)) if priority is None else priority
    keep = np.zeros(len(xy), dtype=bool)
    boxes: list[tuple[float, float, float, float]] = []
    for i in order:
        x0, y0 = xy[i]
        x1, y1 = x0 + widths[i], y0 + height
        if all(x1 <= a0 or x0 >= a1 or y1 <= b0 or y0 >= b1 for a0, b0, a1, b1 in boxes):
            boxes.append((x0, y0, x1, y1))
            keep[i] = True
    return keep


def mds_plot(coords: np.ndarray, layers: Sequence[int], labels: Sequence[str] | None = None,
             *, heads: Sequence[int] | None = None, title: str | None = None,
             other: str = "other", figsize=(8.5, 6.0), fontsize: float = 6.5):
    """Scatter of the MDS embedding: colour = layer (:func:`layer_colours`, a discrete
    palette), marker = behaviour label (``other``: a plain circle), every point the same
    size. Both legends sit outside the axes. With ``heads``, points are annotated
    ``layer-head`` (1-based, as in the papers) where the label does not collide with one
    already drawn, heads with a behaviour label first (:func:`place_labels`). Returns a
    ``matplotlib.figure.Figure`` (no pyplot state)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    coords = np.asarray(coords, dtype=float)
    layers = np.asarray(layers).astype(int)
    labels = np.asarray([other] * len(coords) if labels is None else list(labels), dtype=object)
    uniq_layers = sorted(set(layers.tolist()))
    colours = dict(zip(uniq_layers, layer_colours(len(uniq_layers)), strict=True))
    fig = Figure(figsize=figsize)
    ax = fig.add_axes((0.04, 0.06, 0.68, 0.82))
    behaviours = sorted((u for u in dict.fromkeys(labels.tolist()) if u != other), key=str)
    markers = {other: "o", **{b: _MARKERS[k % len(_MARKERS)] for k, b in enumerate(behaviours)}}
    for lab in [other, *behaviours]:
        sel = labels == lab
        if not sel.any():
            continue
        ax.scatter(coords[sel, 0], coords[sel, 1], c=[colours[v] for v in layers[sel]],
                   marker=markers[lab], s=46, alpha=0.9, linewidths=0.6,
                   edgecolors="white" if lab == other else "black", zorder=3)
    pad = 0.06 * (np.ptp(coords, axis=0) + 1e-12)
    ax.set_xlim(coords[:, 0].min() - pad[0], coords[:, 0].max() + pad[0])
    ax.set_ylim(coords[:, 1].min() - pad[1], coords[:, 1].max() + pad[1])
    if heads is not None:
        texts = [head_label(la, he) for la, he in zip(layers, np.asarray(heads), strict=True)]
        # label boxes in points: text about 0.6 em wide per character, offset by 3 points
        w_in, h_in = fig.get_size_inches() * np.array(ax.get_position().size)
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        xy_pt = np.column_stack([(coords[:, 0] - x0) / (x1 - x0) * w_in * 72 + 3,
                                 (coords[:, 1] - y0) / (y1 - y0) * h_in * 72 + 3])
        priority = np.argsort(labels == other, kind="stable")
        keep = place_labels(xy_pt, [0.62 * fontsize * len(t) for t in texts], fontsize,
                            priority)
        for i in np.flatnonzero(keep):
            ax.annotate(texts[i], coords[i], fontsize=fontsize, xytext=(3, 3),
                        textcoords="offset points", color="0.15", zorder=4)
    layer_handles = [Line2D([], [], marker="o", ls="", color=colours[v], markersize=7,
                            label=str(v + 1)) for v in uniq_layers]
    leg = ax.legend(handles=layer_handles, title="layer", loc="upper left",
                    bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    ax.add_artist(leg)
    beh_handles = [Line2D([], [], marker=markers[b], ls="", color="0.45", markeredgecolor="k",
                          markersize=7, label=str(b)) for b in [*behaviours, other]
                   if (labels == b).any()]
    ax.legend(handles=beh_handles, title="behaviour", loc="upper left",
              bbox_to_anchor=(1.02, 0.45 if len(uniq_layers) <= 7 else 0.2), fontsize=8,
              frameon=False)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title or "Attention heads, MDS of Jensen-Shannon distances", fontsize=10)
    return fig


def type_proportions_plot(summary: pd.DataFrame, types: Sequence[str], title: str = "",
                          *, value: str = "share", paper_range: Mapping | None = None,
                          figsize=(9.0, 4.2)):
    """Kovaleva Figure 2 with its uncertainty: for each map type, one bar per task, the mean
    share over seeds in %, error bars from the smallest to the largest seed's share.

    summary: long table with ``task, type`` and ``<value>_mean, <value>_min, <value>_max``
    (shares in [0, 1]; :func:`analysis_utils.analyses.maptypes.summarise_seeds` over
    ``by=["task", "type"]``). paper_range: ``{"type", "low", "high", "label"}``: a grey band
    behind that type's bars (e.g. Kovaleva et al.'s Heterogeneous range). Returns a
    ``matplotlib.figure.Figure`` (no pyplot state).
    """
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    tasks = list(dict.fromkeys(summary["task"]))
    types = list(types)
    s = summary.set_index(["type", "task"])
    fig = Figure(figsize=figsize)
    ax = fig.add_axes((0.07, 0.14, 0.72, 0.74))
    width = 0.8 / max(len(tasks), 1)
    cmap = colormaps["tab10"]
    for j, task in enumerate(tasks):
        x = np.arange(len(types)) - 0.4 + width * (j + 0.5)
        rows = s.xs(task, level="task").reindex(types)
        mean = rows[f"{value}_mean"].to_numpy() * 100
        err = np.vstack([mean - rows[f"{value}_min"].to_numpy() * 100,
                         rows[f"{value}_max"].to_numpy() * 100 - mean])
        ax.bar(x, mean, width=width * 0.92, color=cmap(j % 10), label=task, zorder=2)
        ax.errorbar(x, mean, yerr=np.clip(err, 0, None), fmt="none", ecolor="black",
                    elinewidth=0.8, capsize=1.5, zorder=3)
    if paper_range is not None and paper_range["type"] in types:
        k = types.index(paper_range["type"])
        ax.fill_between([k - 0.45, k + 0.45], paper_range["low"] * 100,
                        paper_range["high"] * 100, color="0.8", alpha=0.7, zorder=1,
                        lw=0, label=paper_range.get("label", "paper"))
    ax.set_xticks(np.arange(len(types)))
    ax.set_xticklabels(types, fontsize=9)
    ax.set_ylabel("% of maps (all heads, all examples)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", lw=0.4, color="0.85", zorder=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig

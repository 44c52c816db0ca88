"""Figures for Clark et al. Section 5 (attention-based probing classifiers).

- :func:`head_weight_grids`: learned head weights as layer x head heatmaps, one panel per
  probe and attention direction, a diverging colour scale centred on 0 per panel (red:
  evidence for the candidate being the head, blue: against).
- :func:`uas_by_relation_bars`: UAS per gold relation of the dependent, one bar per run
  (e.g. the best probe on dev and test), with a reference (e.g. right-branching) as a
  marker.

Functions return a matplotlib Figure and never call ``plt.show``; layers and heads are
labelled 1-based, as in the papers.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


def head_weight_grids(panels: Mapping[str, np.ndarray], ncols: int = 2,
                      suptitle: str = "") -> plt.Figure:
    """``panels``: title -> ``(layers, heads)`` weights. Each panel has its own symmetric
    colour scale (weights of different probes are on different scales); the heads with the
    largest positive weight are boxed and named in the title."""
    items = list(panels.items())
    nrows = int(np.ceil(len(items) / ncols))
    L, H = np.asarray(items[0][1]).shape
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * (0.42 * H + 2.2),
                                                    nrows * (0.42 * L + 1.6)),
                             squeeze=False, constrained_layout=True)
    for ax, (title, values) in zip(axes.flat, items, strict=False):
        values = np.asarray(values, dtype=float)
        lim = max(float(np.nanmax(np.abs(values))), 1e-9)
        im = ax.imshow(values, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        layer, head = np.unravel_index(int(np.nanargmax(values)), values.shape)
        ax.add_patch(plt.Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False,
                                   edgecolor="black", linewidth=2))
        ax.set_title(f"{title}\nlargest (boxed): head {layer + 1}-{head + 1} "
                     f"({values[layer, head]:+.2f})", fontsize=9)
        ax.set_xticks(range(H), [str(h + 1) for h in range(H)], fontsize=7)
        ax.set_yticks(range(L), [str(i + 1) for i in range(L)], fontsize=7)
        ax.set_xlabel("head", fontsize=8)
        ax.set_ylabel("layer", fontsize=8)
        cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
        cb.set_label("weight (score per unit attention)", fontsize=7)
        cb.ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(items):]:
        ax.axis("off")
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    return fig


def uas_by_relation_bars(tables: Mapping[str, pd.DataFrame],
                         reference: tuple[str, pd.DataFrame] | None = None,
                         title: str = "", n_label: str = "n") -> plt.Figure:
    """Horizontal bars of UAS (%) per relation.

    ``tables``: label -> ``probe_data.uas_by_relation`` output (columns relation, n, uas);
    the first table fixes the relations and their order, and its ``n`` is shown beside the
    name (``n_label`` says what it counts). ``reference``: (label, table) drawn as black ticks
    (e.g. right-branching); the axis starts slightly below 0 so ticks at 0 stay visible."""
    labels = list(tables)
    first = tables[labels[0]]
    rels = list(first["relation"])
    y = np.arange(len(rels))
    height = 0.8 / len(labels)
    colours = ["#1f5fbf", "#e66100", "#5e9c36", "#8f4fbf"]
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(rels) + 1.6))
    for k, lbl in enumerate(labels):
        t = tables[lbl].set_index("relation").reindex(rels)
        ax.barh(y - 0.4 + height * (k + 0.5), t["uas"], height=height, label=lbl,
                color=colours[k % len(colours)])
    if reference is not None:
        ref_label, ref = reference
        r = ref.set_index("relation").reindex(rels)["uas"]
        ax.scatter(r, y, marker="|", s=160, color="black", linewidths=2, label=ref_label,
                   zorder=3)
    ax.set_yticks(y, [f"{r} (n={int(n)})" for r, n in zip(rels, first["n"], strict=True)],
                  fontsize=8)
    ax.invert_yaxis()
    ax.set_ylabel(f"relation of the dependent ({n_label})", fontsize=9)
    ax.set_xlim(-2, 100)
    ax.set_xlabel("UAS (%), punctuation excluded", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig

"""Figures for Clark et al. Section 5 (attention-based probing classifiers).

- :func:`head_weight_grids`: learned head weights as layer x head heatmaps (:mod:`.grid`),
  one panel per probe and attention direction, a diverging colour scale centred on 0 per
  panel (red: evidence for the candidate being the head, blue: against).
- :func:`uas_by_relation_bars`: UAS per gold relation of the dependent, one bar per run
  (e.g. the best probe on dev and test), with a reference (e.g. right-branching) as a
  marker.

Functions return a ``matplotlib.figure.Figure`` built without pyplot; layers and heads are
labelled 1-based, as in the papers.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..heads import head_label
from .grid import head_grids


def head_weight_grids(panels: Mapping[str, np.ndarray], ncols: int = 2,
                      suptitle: str = "") -> Figure:
    """``panels``: title -> ``(layers, heads)`` weights. Each panel has its own symmetric
    colour scale (weights of different probes are on different scales); the head with the
    largest positive weight is boxed and named in the title."""
    titled = {}
    for title, values in panels.items():
        values = np.asarray(values, dtype=float)
        layer, head = np.unravel_index(int(np.nanargmax(values)), values.shape)
        titled[f"{title}\nlargest (boxed): head {head_label(layer, head)} "
               f"({values[layer, head]:+.2f})"] = values
    return head_grids(titled, ncols=ncols, cmap="RdBu_r", symmetric=True, marks="max",
                      colorbar="panel", colorbar_label="weight (score per unit attention)",
                      suptitle=suptitle, cell=0.42)


def uas_by_relation_bars(tables: Mapping[str, pd.DataFrame],
                         reference: tuple[str, pd.DataFrame] | None = None,
                         title: str = "", n_label: str = "n") -> Figure:
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
    fig = Figure(figsize=(7.5, 0.32 * len(rels) + 1.6))
    ax = fig.subplots()
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

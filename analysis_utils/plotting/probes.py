"""Figures for Clark et al. Section 5 (attention-based probing classifiers).

- :func:`head_weight_grids`: learned head weights as layer x head heatmaps (:mod:`.grid`),
  one panel per probe and attention direction, one diverging colour scale centred on 0 for
  every panel (red: evidence for the candidate being the head, blue: against).
- :func:`uas_by_relation_bars`: UAS per gold relation of the dependent, one bar per run
  (e.g. the best probe on dev and test, mean over seeds with +-sd error bars), with a
  reference (e.g. right-branching) as a marker.
- :func:`seed_points`: one row per probe, every seed's UAS as a dot, the mean +- sd as a
  bar, published numbers as markers (Table 3 with its spread over seeds).
- :func:`training_curves`: the training loss of every probe and seed against sentences seen.

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
    """``panels``: title -> ``(layers, heads)`` weights, all in the same unit (change of the
    candidate's score per unit of attention), so every panel is drawn on ONE symmetric colour
    scale ``[-m, m]``, ``m`` the largest absolute weight of any panel, with one colour bar:
    equal colours are equal weights across panels. The head with the largest positive weight
    of each panel is boxed and named in its title."""
    titled = {}
    for title, values in panels.items():
        values = np.asarray(values, dtype=float)
        layer, head = np.unravel_index(int(np.nanargmax(values)), values.shape)
        titled[f"{title}\nlargest (boxed): head {head_label(layer, head)} "
               f"({values[layer, head]:+.2f})"] = values
    m = max(max(float(np.nanmax(np.abs(v))) for v in titled.values()), 1e-9)
    return head_grids(titled, ncols=ncols, cmap="RdBu_r", vmin=-m, vmax=m, marks="max",
                      colorbar="shared",
                      colorbar_label="weight (score per unit attention), one scale for all",
                      suptitle=suptitle, cell=0.42)


def uas_by_relation_bars(tables: Mapping[str, pd.DataFrame],
                         reference: tuple[str, pd.DataFrame] | None = None,
                         title: str = "", n_label: str = "n") -> Figure:
    """Horizontal bars of UAS (%) per relation.

    ``tables``: label -> ``probe_data.uas_by_relation`` output (columns relation, n, uas),
    optionally with a column ``sd`` (e.g. over training seeds), drawn as +-sd error bars;
    the first table fixes the relations and their order, and its ``n`` is shown beside the
    name (``n_label`` says what it counts). ``reference``: (label, table) drawn as black ticks
    (e.g. right-branching); the axis starts slightly below 0 so ticks at 0 stay visible."""
    labels = list(tables)
    first = tables[labels[0]]
    rels = list(first["relation"])
    y = np.arange(len(rels))
    height = 0.8 / len(labels)
    colours = ["#1f5fbf", "#e66100", "#5e9c36", "#8f4fbf"]
    fig = Figure(figsize=(7.5, 0.32 * len(rels) + 1.9), layout="constrained")
    ax = fig.subplots()
    for k, lbl in enumerate(labels):
        t = tables[lbl].set_index("relation").reindex(rels)
        err = t["sd"].fillna(0).to_numpy() if "sd" in t else None
        ax.barh(y - 0.4 + height * (k + 0.5), t["uas"], height=height, label=lbl,
                color=colours[k % len(colours)], xerr=err,
                error_kw=dict(ecolor="#333333", elinewidth=0.8, capsize=1.5))
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
    fig.legend(fontsize=8, loc="outside lower center", ncol=3)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


COLOURS = ["#1f5fbf", "#e66100", "#5e9c36", "#8f4fbf", "#b8860b", "#555555"]


def seed_points(per_seed: pd.DataFrame, column: str, order: list[str] | None = None,
                fixed: Mapping[str, float] | None = None,
                references: Mapping[str, Mapping[str, float]] | None = None,
                title: str = "", xlabel: str = "UAS (%)") -> Figure:
    """One row per probe: every seed's ``column`` as a dot, the mean +- sd (ddof 1) as a bar
    with caps, ``fixed`` (probe -> value, a deterministic baseline) as a single black dot,
    and ``references`` (name -> {probe: value}, e.g. the paper) as open markers.

    ``per_seed``: columns ``probe``, ``seed`` and ``column``; ``order``: the rows, top first
    (default: fixed probes, then the order of ``per_seed``)."""
    fixed = dict(fixed or {})
    probes = order or [*fixed, *dict.fromkeys(per_seed["probe"])]
    y = {p: i for i, p in enumerate(probes)}
    fig = Figure(figsize=(7.5, 0.45 * len(probes) + 1.9), layout="constrained")
    ax = fig.subplots()
    first = True
    for p in probes:
        vals = per_seed.loc[per_seed["probe"] == p, column].to_numpy(dtype=float)
        if len(vals):
            jitter = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else np.zeros(1)
            ax.scatter(vals, y[p] + jitter, s=14, color="#1f5fbf", alpha=0.6, zorder=3,
                       label="one seed" if first else None)
            sd = float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0
            ax.errorbar(vals.mean(), y[p], xerr=sd, fmt="s", color="#1f5fbf", ms=5, capsize=4,
                        zorder=4, label="mean \u00b1 sd over seeds" if first else None)
            first = False
    if fixed:
        ax.scatter([fixed[p] for p in fixed if p in y], [y[p] for p in fixed if p in y],
                   marker="D", s=28, color="black", zorder=4, label="deterministic baseline")
    markers = ["x", "^", "v", "o"]
    for k, (name, values) in enumerate((references or {}).items()):
        pts = [(v, y[p]) for p, v in values.items() if p in y and v == v]
        if pts:
            ax.scatter(*zip(*pts, strict=True), marker=markers[k % len(markers)], s=40,
                       color=COLOURS[(k + 1) % len(COLOURS)], zorder=5, label=name)
    ax.set_yticks(range(len(probes)), probes, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=7, loc="outside lower center", ncol=3)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def training_curves(curves: pd.DataFrame, title: str = "") -> Figure:
    """Training loss against sentences seen, one thin line per probe and seed, one colour per
    probe. ``curves``: columns ``probe``, ``seed``, ``sentences``, ``loss`` (e.g. blocks of
    :func:`analysis_utils.analyses.probe_data.loss_curve`)."""
    fig = Figure(figsize=(7.5, 4.2))
    ax = fig.subplots()
    for k, (probe, part) in enumerate(curves.groupby("probe", sort=False)):
        for j, (_, run) in enumerate(part.groupby("seed", sort=False)):
            ax.plot(run["sentences"], run["loss"], color=COLOURS[k % len(COLOURS)],
                    lw=0.9, alpha=0.75, label=probe if j == 0 else None)
    ax.set_xlabel("training sentences seen (one Adam step each)", fontsize=9)
    ax.set_ylabel("mean cross-entropy per block", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, title="probe (one line per seed)", title_fontsize=7)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig

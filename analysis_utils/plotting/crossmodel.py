"""Figures of notebook 08: models of different depth on one relative-depth axis.

Every function takes the frames of :mod:`analysis_utils.analyses.crossmodel` and returns a
:class:`matplotlib.figure.Figure` built without pyplot. Relative depth is ``layer / layers``
(the last layer at 1.0), so a 6-layer and a 12-layer model share the x axis; the paper's
BERT-base (12 layers) is drawn in black, each model in its own colour (the same in every
figure: :func:`model_colours`), and a random-init control dashed.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..analyses.crossmodel import PAPER, ROLES
from .grid import legend_below

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
PAPER_COLOUR = "black"
MAP_TYPE_COLOURS = {"Vertical": "#e74c3c", "Diagonal": "#3498db",
                    "Vertical+Diagonal": "#9b59b6", "Block": "#f39c12",
                    "Heterogeneous": "#95a5a6"}


def model_colours(models: Sequence[str]) -> dict[str, str]:
    """One colour per model, in order; the paper's rows in black."""
    out, k = {}, 0
    for m in models:
        if m in out:
            continue
        if m.startswith("BERT-base"):
            out[m] = PAPER_COLOUR
        else:
            out[m] = PALETTE[k % len(PALETTE)]
            k += 1
    return out


def _depth_axis(ax, label: bool = True) -> None:
    ax.set_xlim(0, 1.04)
    ax.set_xticks(np.linspace(0, 1, 5))
    if label:
        ax.set_xlabel("relative depth (layer / layers)")
    ax.grid(True, alpha=0.3)


def sink_profiles(sink: pd.DataFrame, colours: Mapping[str, str],
                  paper_band: tuple[float, float, float] | None = None,
                  paper_notes: Mapping[str, str] | None = None, title: str = "",
                  titles: Mapping[str, str] | None = None) -> Figure:
    """One panel per token class (first token, separator, punctuation): the share of each
    layer's attention on it against relative depth, one line per model (solid, dots: the
    pre-trained weights; dashed: its random-init control). ``paper_band``: (share, from,
    to) of the paper's separator claim, drawn as a black bar in the separator panel;
    ``paper_notes``: a line per class under the panel title (the paper's words); ``titles``:
    the panel title per class (default the class, e.g. "first token").

    sink: :func:`crossmodel.sink_by_layer`."""
    classes = list(ROLES.values())
    fig = Figure(figsize=(4.0 * len(classes), 3.6), layout="constrained")
    axes = fig.subplots(1, len(classes), sharey=True)
    for ax, cls in zip(axes, classes, strict=True):
        for (model, weights), g in sink.groupby(["model", "weights"], sort=False):
            ctrl = weights == "control"
            ax.plot(g["relative depth"], g[cls], color=colours[model],
                    ls="--" if ctrl else "-", lw=1 if ctrl else 1.8,
                    marker=None if ctrl else "o", ms=4, alpha=0.7 if ctrl else 1)
        if cls == "separator" and paper_band is not None:
            share, lo, hi = paper_band
            ax.plot([lo, hi], [share, share], color=PAPER_COLOUR, lw=3, solid_capstyle="butt")
            ax.annotate(f"paper: > {share:.0%} here", ((lo + hi) / 2, share), xytext=(0, -5),
                        textcoords="offset points", ha="center", va="top", fontsize=8)
        note = (paper_notes or {}).get(cls)
        ax.set_title((titles or {}).get(cls, cls)
                     + (f"\npaper (BERT-base): {note}" if note else ""), fontsize=9)
        _depth_axis(ax)
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("share of the layer's attention")
    handles = [Line2D([], [], color=c, marker="o", ms=4, label=m)
               for m, c in colours.items() if m in set(sink["model"])]
    handles += [Line2D([], [], color="grey", ls="--", label="random-init control"),
                Line2D([], [], color=PAPER_COLOUR, lw=3, label=PAPER)]
    return legend_below(fig, handles, title=title)


def norm_profiles(norms: pd.DataFrame, colours: Mapping[str, str],
                  targets: Sequence[str] = ("first token", "separator"),
                  titles: Mapping[str, str] | None = None, weight_min: float | None = None,
                  title: str = "") -> Figure:
    """Attention norms (Kobayashi et al. 2020) on one relative-depth axis: one panel per token
    class of ``targets``, each layer's weight share (solid, dots) and norm share (dashed,
    squares) of that class, one colour per model; the model's random-init control in the same
    styles, faint. ``titles``: the panel title per class (e.g. "first token ([CLS], <s>)");
    ``weight_min``: drawn as a dotted line (the weight share above which a notebook calls a
    class's norm share "much" smaller).

    norms: :func:`crossmodel.norms_by_layer`."""
    fig = Figure(figsize=(4.6 * len(targets), 3.7), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(targets), sharey=True))
    shown = norms[norms["target"].isin(targets)]
    top = max(0.1, 1.1 * float(shown[["weight share", "norm share"]].max().max())) \
        if len(shown) else 1.0
    for ax, target in zip(axes, targets, strict=True):
        for (model, weights), g in shown[shown["target"] == target].groupby(
                ["model", "weights"], sort=False):
            g = g.sort_values("layer")
            ctrl = weights == "control"
            style = {"color": colours[model], "alpha": 0.3 if ctrl else 1.0,
                     "lw": 1.0 if ctrl else 1.8, "ms": 3 if ctrl else 4}
            ax.plot(g["relative depth"], g["weight share"], ls="-", marker="o", **style)
            ax.plot(g["relative depth"], g["norm share"], ls="--", marker="s", **style)
        if weight_min is not None:
            ax.axhline(weight_min, color="grey", ls=":", lw=1)
        ax.set_title((titles or {}).get(target, target), fontsize=9)
        _depth_axis(ax)
        ax.set_ylim(0, top)
    axes[0].set_ylabel("share (mean over the layer's heads)")
    models = [m for m in colours if m in set(shown["model"])]
    handles = [Line2D([], [], color=colours[m], lw=1.8, label=m) for m in models]
    handles += [Line2D([], [], color="grey", marker="o", ms=4, label="weight share"),
                Line2D([], [], color="grey", ls="--", marker="s", ms=4, label="norm share"),
                Line2D([], [], color="grey", alpha=0.3, label="faint: random-init control")]
    if weight_min is not None:
        handles.append(Line2D([], [], color="grey", ls=":",
                              label=f"weight share {100 * weight_min:g}% (the rule's threshold)"))
    return legend_below(fig, handles, title=title)


def _dodge(g: pd.DataFrame, step: float) -> np.ndarray:
    """Vertical offsets that spread heads of one model and line at the same depth (BERT-base's
    two next-token heads in layer 2) within the model's band, so no marker hides another."""
    key = g["row"].astype(str) + "|" + g["relative depth"].round(6).astype(str)
    rank = key.groupby(key).cumcount().to_numpy(float)
    count = key.map(key.value_counts()).to_numpy(float)
    return (rank - (count - 1) / 2) * step / np.maximum(count, 1)


def depth_map(rows: pd.DataFrame, colours: Mapping[str, str], title: str = "") -> Figure:
    """Where the heads are: one line per behaviour (``row``: "previous-token heads",
    "syntax: det", "coreference", ...), one marker per head at its relative depth, models
    side by side within a line (the paper's BERT-base heads: black crosses); heads of one model
    at the same depth are spread vertically so each stays visible. ``label``, when given, is
    written beside the marker (e.g. the head).

    rows: columns ``row``, ``model``, ``relative depth`` and optionally ``label``."""
    order = list(dict.fromkeys(rows["row"]))
    models = list(dict.fromkeys(rows["model"]))
    fig = Figure(figsize=(8.5, 0.32 * len(order) + 1.4), layout="constrained")
    ax = fig.add_subplot()
    step = 0.7 / max(len(models), 1)
    for k, model in enumerate(models):
        g = rows[rows["model"] == model]
        y = g["row"].map({r: i for i, r in enumerate(order)}).to_numpy(float)
        y = y - 0.35 + step * (k + 0.5) + _dodge(g, step)
        paper = model.startswith("BERT-base")
        ax.scatter(g["relative depth"], y, s=30, color=colours[model],
                   marker="x" if paper else "o", label=model, zorder=3,
                   linewidths=1.2 if paper else 0)
        if "label" in g:
            for x, yy, text in zip(g["relative depth"], y, g["label"], strict=True):
                if isinstance(text, str) and text:
                    ax.annotate(text, (x, yy), xytext=(4, 0), textcoords="offset points",
                                va="center", fontsize=6, color=colours[model])
    ax.set_yticks(range(len(order)), order, fontsize=8)
    ax.set_ylim(len(order) - 0.5, -0.5)
    for i in range(len(order) - 1):
        ax.axhline(i + 0.5, color="0.85", lw=0.6)
    _depth_axis(ax)
    ax.grid(False, axis="y")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def entropy_profiles(entropy: pd.DataFrame, colours: Mapping[str, str],
                     paper_cls_last: float | None = None, title: str = "") -> Figure:
    """Two panels against relative depth: each layer's mean attention entropy as a share of
    its random-init control's (about uniform attention over the same segments: 1.0 is as
    broad as uniform), and the entropy of the attention *from* the first token in nats
    (control dashed), with the paper's last-layer [CLS] value as a black star.

    entropy: :func:`crossmodel.entropy_by_layer`."""
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    a, b = fig.subplots(1, 2)
    for model, g in entropy.groupby("model", sort=False):
        c = colours[model]
        a.plot(g["relative depth"], g["entropy / control"], color=c, marker="o", ms=4,
               label=model)
        b.plot(g["relative depth"], g["entropy from first token"], color=c, marker="o", ms=4)
        b.plot(g["relative depth"], g["control entropy from first token"], color=c, ls="--",
               lw=1, alpha=0.7)
    a.axhline(1.0, color="grey", ls=":", lw=1)
    a.set_ylim(0, 1.1)
    a.set_ylabel("entropy / control's entropy")
    a.set_title("how broad each layer attends (1 = uniform)", fontsize=9)
    b.set_ylabel("nats")
    b.set_title("entropy of attention from the first token", fontsize=9)
    if paper_cls_last is not None:
        b.scatter([1.0], [paper_cls_last], marker="*", s=120, color=PAPER_COLOUR, zorder=4)
    for ax in (a, b):
        _depth_axis(ax)
    handles = [Line2D([], [], color=colours[m], marker="o", ms=4, label=m)
               for m in dict.fromkeys(entropy["model"])]
    handles.append(Line2D([], [], color="grey", ls="--", label="random-init control"))
    if paper_cls_last is not None:
        handles.append(Line2D([], [], color=PAPER_COLOUR, marker="*", ms=10, ls="",
                              label=f"{PAPER}: {paper_cls_last:g} nats from [CLS], last layer"))
    return legend_below(fig, handles, title=title)


def summary_panels(uas: pd.DataFrame, clustering: pd.DataFrame, maptypes: pd.DataFrame,
                   colours: Mapping[str, str], paper_het: tuple[float, float] | None = None,
                   probes: Sequence[str] | None = None, title: str = "") -> Figure:
    """Three panels: probe UAS per probe (bars per model, the paper's and the EWT
    reproduction's BERT-base in black/grey, error bars: sd over seeds); the same-layer /
    other-layer distance ratio (pre-trained solid, control hatched; below 1: same-layer heads
    closer); the map-type shares per model (stacked, mean over tasks) with the paper's
    Heterogeneous range as a bracket.

    uas, clustering, maptypes: :func:`crossmodel.probe_uas`, :func:`~crossmodel.clustering_ratio`,
    :func:`~crossmodel.map_type_proportions`."""
    clustering = clustering[clustering["ratio"].notna()]  # the paper's row: a picture, no ratio
    maptypes = maptypes[maptypes["share"].notna()]  # the paper's range: drawn from paper_het
    fig = Figure(figsize=(13.5, 4.2), layout="constrained")
    fig.get_layout_engine().set(wspace=0.06)
    a, b, c = fig.subplots(1, 3, width_ratios=[2.2, 1, 1.3])
    # probes
    probes = list(probes or dict.fromkeys(uas["probe"]))
    models = list(dict.fromkeys(uas["model"]))
    w = 0.8 / max(len(models), 1)
    for k, m in enumerate(models):
        g = uas[uas["model"] == m].set_index("probe").reindex(probes)
        x = np.arange(len(probes)) - 0.4 + w * (k + 0.5)
        colour = "0.6" if m.endswith("reproduction)") else colours.get(m, PAPER_COLOUR)
        a.bar(x, g["uas"], w, color=colour, label=m,
              yerr=g["sd"].fillna(0).to_numpy(), capsize=2, error_kw={"lw": 0.8})
    a.set_xticks(range(len(probes)), [textwrap.fill(p, 16) for p in probes], fontsize=7)
    a.set_ylabel("UAS (%)")
    a.set_ylim(0, 100)
    a.set_title("attention probes (Table 3); paper: WSJ, others: EWT dev", fontsize=9)
    a.legend(fontsize=7, frameon=False, loc="upper left")
    a.grid(True, axis="y", alpha=0.3)
    # clustering
    cm = list(dict.fromkeys(clustering["model"]))
    for k, m in enumerate(cm):
        g = clustering[clustering["model"] == m].set_index("weights")
        for j, weights in enumerate(("pre-trained", "control")):
            if weights in g.index:
                b.bar(k + (j - 0.5) * 0.38, g.loc[weights, "ratio"], 0.36, color=colours[m],
                      alpha=1 if j == 0 else 0.35, hatch=None if j == 0 else "//",
                      edgecolor=colours[m])
    b.axhline(1.0, color="grey", ls=":", lw=1)
    b.set_xticks(range(len(cm)), [m.replace(" (", "\n(") for m in cm], fontsize=7)
    lo = min([0.7, *clustering["ratio"].tolist()]) if len(clustering) else 0.7
    b.set_ylim(max(0.0, lo - 0.05), 1.05)
    b.set_ylabel("JS distance: same / other layer")
    b.set_title("same-layer clustering (Figure 6)\nsolid: pre-trained; hatched: control",
                fontsize=9)
    b.grid(True, axis="y", alpha=0.3)
    # map types: one row per type, a bar per model (mean over tasks), whiskers: task range
    types = [t for t in MAP_TYPE_COLOURS if t in set(maptypes["type"])]
    mm = list(dict.fromkeys(maptypes["model"]))
    h = 0.8 / max(len(mm) + (paper_het is not None), 1)
    for k, m in enumerate(mm):
        g = maptypes[maptypes["model"] == m].set_index("type").reindex(types)
        y = np.arange(len(types)) - 0.4 + h * (k + 0.5)
        err = np.vstack([g["share"] - g["lowest"], g["highest"] - g["share"]])
        c.barh(y, g["share"], h, color=colours[m], xerr=err, capsize=2,
               error_kw={"lw": 0.8}, label=m)
    if paper_het is not None and "Heterogeneous" in types:
        y = types.index("Heterogeneous") - 0.4 + h * (len(mm) + 0.5)
        c.plot(paper_het, [y, y], color=PAPER_COLOUR, lw=3, solid_capstyle="butt",
               label=f"{PAPER}: {paper_het[0]:.0%}-{paper_het[1]:.0%} over tasks "
                     "(fine-tuned maps)")
    c.set_yticks(range(len(types)), types, fontsize=8)
    c.set_ylim(len(types) - 0.5, -0.5)
    c.set_xlim(0, 1)
    c.set_xlabel("share of maps: mean over tasks (whiskers: lowest-highest task)")
    c.set_title("attention-map types (Kovaleva 4.1)", fontsize=9)
    c.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    c.grid(True, axis="x", alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig

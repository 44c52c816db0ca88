"""Figures of notebook 06 (Kovaleva et al. 2019, Sections 4.3-4.5): training curves, attention
to special tokens by layer before and after fine-tuning (Figure 6), and where the last layer's
[CLS] attends (Figure 7). Layer x head heatmaps (Figures 3 and 5) use
:func:`analysis_utils.plotting.grid.head_grids`. Figures are built without pyplot.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .grid import legend_below

__all__ = ["training_curves", "layer_profiles", "grouped_bars"]

_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def _panels(n: int, ncols: int, size=(3.3, 2.6)):
    from matplotlib.figure import Figure

    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    fig = Figure(figsize=(size[0] * ncols, size[1] * nrows + 0.5), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes


def _shared_legend(fig, ax, title: str):
    """One legend for the figure, below the panels, from ``ax``'s entries; then the title."""
    handles, labels = ax.get_legend_handles_labels()
    return legend_below(fig, handles, labels, title, fontsize=7)


_STYLES = ("-", "--", ":", "-.")


def training_curves(curves: pd.DataFrame, *, by: str = "task", colour: str = "init",
                    style: str = "seed", value: str = "loss",
                    metric: Mapping[str, str] | None = None, ncols: int = 3,
                    title: str = "") -> object:
    """One panel per ``by`` value: ``value`` (default the training loss) against ``step``, one
    colour per ``colour`` value (the same colour in every panel: pre-trained vs random init)
    and one line style per ``style`` value (seeds); with ``metric`` (``{task: "eval_f1"}``),
    that dev metric after each epoch as markers on a right-hand axis, so a falling loss can be
    read against what it bought on dev. One legend below the panels, off the data.

    curves: long table with ``by``, ``colour``, ``style``, ``step`` and ``value`` (rows where
    ``value`` is missing, e.g. the evaluation rows of a Trainer log, are not drawn as loss).
    """
    groups = list(dict.fromkeys(curves[by]))
    colours = {c: _COLOURS[k % len(_COLOURS)]
               for k, c in enumerate(sorted(dict.fromkeys(curves[colour].astype(str))))}
    styles = {s: _STYLES[k % len(_STYLES)]
              for k, s in enumerate(sorted(dict.fromkeys(curves[style].astype(str))))}
    fig, axes = _panels(len(groups), ncols)
    for ax, g in zip(axes, groups, strict=False):
        part = curves[curves[by] == g]
        loss = part[part[value].notna()]
        for (c, s), sub in loss.groupby([colour, style], sort=True):
            ax.plot(sub["step"], sub[value], lw=1.0, color=colours[str(c)],
                    ls=styles[str(s)], label=f"{c}, {s}")
        col = (metric or {}).get(g)
        if col and col in part.columns:
            right = ax.twinx()
            for (c, s), sub in part[part[col].notna()].groupby([colour, style], sort=True):
                right.plot(sub["step"], sub[col], marker="o", ms=3, lw=0.6,
                           color=colours[str(c)], ls=styles[str(s)])
            right.set_ylabel(f"dev {col.removeprefix('eval_')} (markers)", fontsize=7)
            right.tick_params(labelsize=7)
        ax.set_title(str(g), fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel(value, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(lw=0.3, color="0.85")
    # one legend below the panels, never over the data: every (colour, style) pair drawn in
    # any panel, and the marker that stands for the dev metric
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if metric:
        from matplotlib.lines import Line2D

        entries["dev metric after each epoch (markers, right axis)"] = Line2D(
            [], [], marker="o", ms=3, lw=0.6, color="0.4")
    return legend_below(fig, list(entries.values()), list(entries), title, fontsize=7)


def layer_profiles(df: pd.DataFrame, *, value: str = "score", panel: str = "task",
                   colour: str = "feature", style: str = "model",
                   styles: Mapping[str, str] | None = None, ncols: int = 3, ylabel: str = "",
                   title: str = "", reference: Mapping[str, float] | None = None) -> object:
    """Per panel, ``value`` by ``layer`` (1-based), one colour per ``colour`` value and one line
    style per ``style`` value (Figure 6: attention to [CLS], [SEP] and punctuation per layer,
    pre-trained dashed, fine-tuned solid). reference: ``{panel: y}`` a grey dotted line (e.g.
    a uniform head's score)."""
    styles = dict(styles or {})
    panels = list(dict.fromkeys(df[panel]))
    colours = list(dict.fromkeys(df[colour]))
    fig, axes = _panels(len(panels), ncols)
    for ax, p in zip(axes, panels, strict=False):
        part = df[df[panel] == p]
        for c_i, c in enumerate(colours):
            for s in dict.fromkeys(part[style]):
                sub = part[(part[colour] == c) & (part[style] == s)].sort_values("layer")
                if sub.empty:
                    continue
                ax.plot(sub["layer"], sub[value], styles.get(s, "-"), lw=1.2, marker=".",
                        ms=3, color=_COLOURS[c_i % len(_COLOURS)], label=f"{c}, {s}")
        if reference and p in reference:
            ax.axhline(reference[p], color="0.5", lw=0.8, ls=":", label="uniform head")
        ax.set_title(str(p), fontsize=9)
        ax.set_xlabel("layer", fontsize=8)
        ax.set_ylabel(ylabel or value, fontsize=8)
        layers = sorted(part["layer"].unique())
        ax.set_xticks(layers)
        ax.tick_params(labelsize=7)
        ax.grid(lw=0.3, color="0.85")
    return _shared_legend(fig, axes[0], title)


def grouped_bars(df: pd.DataFrame, *, value: str, group: str, bar: str, panel: str | None = None,
                 err_low: str | None = None, err_high: str | None = None, ncols: int = 3,
                 ylabel: str = "", title: str = "", percent: bool = False) -> object:
    """Bars of ``value``: x positions by ``group``, one bar per ``bar`` value inside each group,
    one panel per ``panel`` value (Figure 7: token type x pre-trained/fine-tuned, per task).
    err_low/err_high: columns of the lower/upper end of an error bar (e.g. smallest and largest
    seed). percent: values are shares, drawn x100."""
    scale = 100.0 if percent else 1.0
    panels = list(dict.fromkeys(df[panel])) if panel else [None]
    groups = list(dict.fromkeys(df[group]))
    bars = list(dict.fromkeys(df[bar]))
    fig, axes = _panels(len(panels), ncols, size=(3.6, 2.7))
    width = 0.8 / max(len(bars), 1)
    for ax, p in zip(axes, panels, strict=False):
        part = df if p is None else df[df[panel] == p]
        for j, b in enumerate(bars):
            rows = part[part[bar] == b].set_index(group).reindex(groups)
            x = np.arange(len(groups)) - 0.4 + width * (j + 0.5)
            y = rows[value].to_numpy(dtype=float) * scale
            ax.bar(x, y, width=width * 0.92, color=_COLOURS[j % len(_COLOURS)], label=str(b),
                   zorder=2)
            if err_low and err_high:
                lo = rows[err_low].to_numpy(dtype=float) * scale
                hi = rows[err_high].to_numpy(dtype=float) * scale
                ax.errorbar(x, y, yerr=np.clip(np.vstack([y - lo, hi - y]), 0, None),
                            fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5, zorder=3)
        ax.set_xticks(np.arange(len(groups)))
        ax.set_xticklabels([str(g) for g in groups], fontsize=7, rotation=30, ha="right")
        ax.set_ylabel(ylabel or value, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", lw=0.3, color="0.85", zorder=0)
        if p is not None:
            ax.set_title(str(p), fontsize=9)
    return _shared_legend(fig, axes[0], title)

"""Figures for Kovaleva et al. Section 4.6 (disabling heads and layers) and the Michel et al.
pruning curves of notebook 07.

- :func:`head_change_grids`: Figure 8, the change of the dev metric when each head is
  disabled, a layer x head heatmap per panel (:mod:`.grid`), all panels on one symmetric
  scale with one colour bar (blue: the model gets better, red: worse); a dot marks a change that survives the multiple-
  comparison correction, a box a head to look at (e.g. the FrameNet heads).
- :func:`layer_change_bars`: Figure 9, the change when a whole layer is disabled, one panel
  per task, one bar per fine-tuning seed with its confidence interval.
- :func:`pruning_curves_plot`: the metric as heads are removed from least to most important,
  per seed, beside random orders (their mean and min-max band).

Inputs are tidy tables as :mod:`analysis_utils.analyses.disabling` returns them (1-based
``layer``/``head``, as saved in ``07_disabling.csv``); head grids are ``(layers, heads)``
arrays indexed from 0; figures are built without pyplot and label layers and heads 1-based.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .grid import LABEL_SIZE, MARK, TICK_SIZE, TITLE_SIZE, head_grids, legend_below

GAIN_CMAP = "RdBu"  # blue: disabling helps, red: it hurts


def head_change_grids(panels: Mapping[str, np.ndarray], *,
                      significant: Mapping[str, np.ndarray] | None = None,
                      boxes: Mapping[str, Iterable[tuple[int, int]]] | None = None,
                      ncols: int = 3, suptitle: str = "", cell: float = 0.32,
                      colorbar_label: str = "change when disabled (points)") -> Figure:
    """``panels``: title -> ``(layers, heads)`` change of the metric when each head alone is
    disabled, all on one symmetric colour scale ``[-m, m]`` (``m``: the largest absolute
    change of any panel) with one colour bar, so equal colours are equal changes in every
    panel. ``significant``: title -> boolean ``(layers, heads)``, a black dot on each True
    cell; ``boxes``: title -> 0-based ``(layer, head)`` pairs to box. ``cell``: inches per
    head (0.32: three 12-head panels in a row stay under 2,000 px at 130 dpi)."""
    m = max(float(np.nanmax(np.abs(np.asarray(v, dtype=float)))) for v in panels.values())
    m = m if np.isfinite(m) and m > 0 else 1.0
    fig = head_grids(panels, ncols=ncols, cmap=GAIN_CMAP, vmin=-m, vmax=m, marks=None,
                     colorbar="shared", colorbar_label=colorbar_label, suptitle=suptitle,
                     cell=cell)
    axes = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    for title in panels:
        ax = axes[title]
        if significant is not None and title in significant:
            layers, heads = np.nonzero(np.asarray(significant[title], dtype=bool))
            if len(layers):
                ax.plot(heads, layers, linestyle="none", marker="o", markersize=3,
                        color="black")
        for layer, head in (boxes or {}).get(title, ()):
            ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, **MARK))
    return fig


def _panel_grid(panel_values: pd.Series, ncols: int, cell: tuple[float, float], suptitle: str):
    """One panel per distinct value (in order of appearance): ``(names, fig, axes, ncols,
    nrows)``, each panel ``cell`` inches, room for a suptitle when there is one."""
    names = list(dict.fromkeys(panel_values))
    if not names:
        raise ValueError("no rows to plot")
    ncols = max(1, min(ncols, len(names)))
    nrows = -(-len(names) // ncols)
    fig = Figure(figsize=(cell[0] * ncols + 0.4, cell[1] * nrows + (0.4 if suptitle else 0)),
                 layout="constrained")
    return names, fig, fig.subplots(nrows, ncols, squeeze=False).ravel(), ncols, nrows


def _panel_title(ax, part: pd.DataFrame, name) -> None:
    """The panel's title: the first row's ``title`` when the rows have one, else ``name``."""
    ax.set_title(part["title"].iloc[0] if "title" in part.columns else str(name),
                 fontsize=TITLE_SIZE)


def _finish_grid(fig: Figure, axes, n_panels: int, ncols: int, nrows: int, ylabel: str,
                 suptitle: str) -> Figure:
    """Drop the unused axes of a :func:`_panel_grid`, label the first column, add the
    suptitle; returns ``fig``."""
    for ax in axes[n_panels:]:
        fig.delaxes(ax)
    for ax in axes[::ncols][:nrows]:
        ax.set_ylabel(ylabel, fontsize=LABEL_SIZE - 1)
    if suptitle:
        fig.suptitle(suptitle, fontsize=TITLE_SIZE + 1)
    return fig


def layer_change_bars(table: pd.DataFrame, *, panel: str = "task", group: str = "seed",
                      ncols: int = 5, suptitle: str = "",
                      ylabel: str = "change when the layer is disabled (points)") -> Figure:
    """One panel per value of ``panel`` (in order of appearance), bars over layers (1-based),
    one bar per value of ``group`` side by side, with error bars from ``ci_lo`` to ``ci_hi``
    when the table has them; a star above a bar whose ``holm`` column is True.

    table: rows with ``layer`` (1-based, as saved), ``delta`` and ``panel`` / ``group`` columns; an
    optional ``title`` column gives each panel's title (first row of the panel)."""
    names, fig, axes, ncols, nrows = _panel_grid(table[panel], ncols, (2.6, 2.4), suptitle)
    for ax, name in zip(axes, names, strict=False):
        part = table[table[panel] == name]
        groups = list(dict.fromkeys(part[group]))
        width = 0.8 / len(groups)
        for g, key in enumerate(groups):
            rows = part[part[group] == key].sort_values("layer")
            x = rows["layer"].to_numpy(int) + (g - (len(groups) - 1) / 2) * width
            d = rows["delta"].to_numpy(float)
            err = None
            if {"ci_lo", "ci_hi"} <= set(rows.columns):
                err = np.vstack([d - rows["ci_lo"].to_numpy(float),
                                 rows["ci_hi"].to_numpy(float) - d])
            ax.bar(x, d, width=width, yerr=err, capsize=2, label=f"{group} {key}",
                   color=f"C{g}", error_kw={"elinewidth": 0.8})
            if "holm" in rows.columns:
                hit = rows["holm"].to_numpy(bool)
                top = (d + (err[1] if err is not None else 0))[hit]
                ax.plot(x[hit], top, linestyle="none", marker="*", color="black",
                        markersize=6)
        ax.axhline(0, color="black", linewidth=0.6)
        layers = sorted(part["layer"].astype(int).unique())
        ax.set_xticks(layers, [str(la) for la in layers],
                      fontsize=TICK_SIZE)
        ax.tick_params(axis="y", labelsize=TICK_SIZE)
        ax.set_xlabel("layer disabled", fontsize=LABEL_SIZE)
        _panel_title(ax, part, name)
        if len(groups) > 1:
            ax.legend(fontsize=6, frameon=False)
    return _finish_grid(fig, axes, len(names), ncols, nrows, ylabel, suptitle)


def pruning_curves_plot(curves: pd.DataFrame, *, panel: str = "task", seed: str = "seed",
                        ncols: int = 5, suptitle: str = "",
                        ylabel: str = "dev metric (points)",
                        floor: Mapping[object, float] | None = None) -> Figure:
    """The metric against the share of heads removed, one panel per value of ``panel``:
    for each ``seed``, the curve in importance order (solid) and the mean of its random
    orders (dashed, same colour); grey band: the smallest to largest value of any random
    order of any seed. ``curves``: :func:`analyses.disabling.pruning_curves` rows (``order``,
    ``repeat``, ``fraction``, ``value``) with ``panel`` and ``seed`` columns; an optional
    ``title`` column gives each panel's title. ``floor``: panel -> the best constant
    predictor's value (a dotted line; where a metric is undefined for the model's outputs, a
    cross on the x axis marks the step). Every panel spans 0-100% of the heads; one legend
    below the panels, off the data."""
    names, fig, axes, ncols, nrows = _panel_grid(curves[panel], ncols, (2.7, 2.5), suptitle)
    for ax, name in zip(axes, names, strict=False):
        part = curves[curves[panel] == name]
        rand = part[part["order"] == "random"]
        if len(rand):
            band = rand.groupby("fraction")["value"].agg(["min", "max"])
            ax.fill_between(100 * band.index.to_numpy(float), band["min"], band["max"],
                            color="0.85", label="random orders (range)")
        for k, s in enumerate(dict.fromkeys(part[seed])):
            rows = part[part[seed] == s]
            imp = rows[rows["order"] == "importance"].sort_values("fraction")
            if len(imp):
                ax.plot(100 * imp["fraction"], imp["value"], color=f"C{k}", marker="o",
                        markersize=2.5, linewidth=1.2, label=f"importance order, seed {s}")
            mean = rows[rows["order"] == "random"].groupby("fraction")["value"].mean()
            if len(mean):
                ax.plot(100 * mean.index.to_numpy(float), mean.to_numpy(), color=f"C{k}",
                        linestyle="--", linewidth=1, label=f"random orders (mean), seed {s}")
        level = (floor or {}).get(name, np.nan)
        if np.isfinite(level):
            ax.axhline(level, color="0.3", linestyle=":", linewidth=1,
                       label="constant predictor")
        undefined = part[part["value"].isna()]["fraction"].unique()
        if len(undefined):
            ax.plot(100 * np.asarray(undefined, float), np.zeros(len(undefined)),
                    linestyle="none", marker="x", color="0.3", markersize=4,
                    transform=ax.get_xaxis_transform(), clip_on=False,
                    label="metric undefined (constant outputs)")
        ax.set_xlim(-3, 103)
        ax.set_xlabel("heads removed (%)", fontsize=LABEL_SIZE)
        ax.tick_params(labelsize=TICK_SIZE)
        _panel_title(ax, part, name)
    handles = {}
    for ax in axes[:len(names)]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    legend_below(fig, list(handles.values()), list(handles), fontsize=6)
    return _finish_grid(fig, axes, len(names), ncols, nrows, ylabel, suptitle)

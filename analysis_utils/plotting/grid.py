"""The layer x head heatmap: one function draws every per-head grid of the notebooks
(Clark Table 1 per relation, Table 2 by head, probe weights of Section 5, any Section 3
statistic), in one style.

Rows are layers (layer 1 on top), columns heads; values come in 0-based arrays
``(layers, heads)`` and every tick label is 1-based, as in the papers. A black box marks a
chosen head. Figures are built without pyplot (``report.Run.figure`` saves and shows them).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

TICK_SIZE, LABEL_SIZE, TITLE_SIZE, SUPTITLE_SIZE = 7, 8, 9, 10
MARK = dict(fill=False, edgecolor="black", linewidth=2)


def draw_head_grid(ax, values, *, cmap: str = "viridis", vmin: float | None = None,
                   vmax: float | None = None, mark: tuple[int, int] | None = None,
                   title: str = "", annotate: bool = False, fmt: str = ".2f",
                   font_scale: float = 1.0):
    """Draw ``values: (layers, heads)`` on ``ax``; ``mark``: 0-based ``(layer, head)`` to box;
    ``annotate`` writes each value in its cell; ``font_scale`` multiplies every font size.
    Returns the image (for a colour bar)."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"values must be (layers, heads), got shape {values.shape}")
    n_layers, n_heads = values.shape
    im = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto",
                   interpolation="nearest")
    f = font_scale
    ax.set_xticks(range(n_heads), [str(h + 1) for h in range(n_heads)], fontsize=TICK_SIZE * f)
    ax.set_yticks(range(n_layers), [str(la + 1) for la in range(n_layers)],
                  fontsize=TICK_SIZE * f)
    ax.set_xlabel("head", fontsize=LABEL_SIZE * f)
    ax.set_ylabel("layer", fontsize=LABEL_SIZE * f)
    ax.set_title(title, fontsize=TITLE_SIZE * f)
    if mark is not None:
        layer, head = (int(x) for x in mark)
        ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, **MARK))
    if annotate:
        lo, hi = im.get_clim()
        for (i, j), v in np.ndenumerate(values):
            if np.isfinite(v):
                ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=6 * f,
                        color="white" if v < (lo + hi) / 2 else "black")
    return im


def head_grids(panels: Mapping[str, np.ndarray], *, ncols: int = 2, cmap: str = "viridis",
               vmin: float | None = None, vmax: float | None = None, symmetric: bool = False,
               marks: str | Mapping[str, tuple[int, int] | None] | None = None,
               colorbar: str | None = "panel", colorbar_label: str | None = None,
               annotate: bool = False, fmt: str = ".2f", suptitle: str = "",
               cell: float = 0.35, font_scale: float = 1.0) -> Figure:
    """One layer x head heatmap per panel, ``panels``: title -> ``(layers, heads)`` values.

    vmin, vmax: one colour scale for every panel (None: each panel's own range).
    symmetric: each panel's scale is ``[-m, m]`` with ``m`` its largest absolute value (for
        signed weights; use a diverging ``cmap`` such as ``"RdBu_r"``).
    marks: ``"max"`` boxes each panel's largest value; a mapping title -> 0-based
        ``(layer, head)`` boxes those; None boxes nothing.
    colorbar: ``"panel"`` (one per panel), ``"shared"`` (one for all; pass ``vmin``/``vmax``)
        or None. cell: inches per layer / head.
    font_scale: multiplies every font size (ticks, labels, titles, colour bar), for figures
        read at a git host's width; 1.0 keeps the defaults. Title lines get room for it.

    Returns a ``matplotlib.figure.Figure`` with one axes per panel plus the colour bars.
    """
    if not panels:
        raise ValueError("no panels to draw")
    if colorbar not in ("panel", "shared", None):
        raise ValueError(f"colorbar must be 'panel', 'shared' or None, got {colorbar!r}")
    items = [(t, np.asarray(v, dtype=float)) for t, v in panels.items()]
    bad = [t for t, v in items if v.ndim != 2]
    if bad:
        raise ValueError(f"values must be (layers, heads); not so for panel(s) {bad}")
    n_layers, n_heads = items[0][1].shape
    ncols = max(1, min(ncols, len(items)))
    nrows = -(-len(items) // ncols)
    extra_w = 1.3 if colorbar == "panel" else 0.7
    fig = Figure(figsize=(ncols * (cell * n_heads + extra_w) + (0.9 if colorbar == "shared"
                                                                else 0),
                          nrows * (cell * n_layers + 1.0 + 0.18 * (font_scale - 1)
                                   * (1 + _lines(items)))
                          + (0.4 * font_scale if suptitle else 0)),
                 layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    im = None
    for ax, (title, values) in zip(axes, items, strict=False):
        lo, hi = vmin, vmax
        if symmetric:
            hi = max(float(np.nanmax(np.abs(values))), 1e-9)
            lo = -hi
        if marks == "max":
            mark = np.unravel_index(int(np.nanargmax(values)), values.shape)
        else:
            mark = (marks or {}).get(title)
        im = draw_head_grid(ax, values, cmap=cmap, vmin=lo, vmax=hi, mark=mark, title=title,
                            annotate=annotate, fmt=fmt, font_scale=font_scale)
        if colorbar == "panel":
            cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
            _label_colorbar(cb, colorbar_label, font_scale)
    for ax in axes[len(items):]:
        fig.delaxes(ax)
    if colorbar == "shared":
        cb = fig.colorbar(im, ax=list(axes[:len(items)]), shrink=min(0.8, 3.0 / nrows),
                          pad=0.01)
        _label_colorbar(cb, colorbar_label, font_scale)
    if suptitle:
        fig.suptitle(suptitle, fontsize=SUPTITLE_SIZE * font_scale)
    return fig


def _lines(items) -> int:
    """The most lines a panel title has."""
    return max(title.count("\n") + 1 for title, _ in items)


def _label_colorbar(cb, label: str | None, font_scale: float = 1.0) -> None:
    if label:
        cb.set_label(label, fontsize=(LABEL_SIZE - 1) * font_scale)
    cb.ax.tick_params(labelsize=TICK_SIZE * font_scale)


def legend_below(fig: Figure, handles, labels=None, title: str = "",
                 fontsize: float = 8) -> Figure:
    """One legend for the whole figure, below the panels (at most 4 columns), then the title;
    ``labels``: None to take each handle's own label. Returns ``fig``."""
    kwargs = dict(loc="outside lower center", ncol=min(len(handles), 4), fontsize=fontsize,
                  frameon=False)
    if labels is None:
        fig.legend(handles=handles, **kwargs)
    else:
        fig.legend(handles, labels, **kwargs)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig

"""The ledger stage's figure: how many verdicts survive what a reader could vary
(:mod:`analysis_utils.ledger.stability`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure


def stability_bars(shares: pd.DataFrame, title: str = "",
                   labels: dict[str, str] | None = None) -> Figure:
    """One horizontal bar per question and model: the share of tested verdicts that hold,
    each labelled "held / rows" (a question that applies to no row is drawn as "n/a");
    ``labels``: how to name a question on its axis (default: as the table names it)."""
    questions = list(dict.fromkeys(shares["question"]))
    models = list(dict.fromkeys(shares["model"]))
    fig = Figure(figsize=(7.5, 0.55 * len(questions) * len(models) + 1.6))
    ax = fig.add_subplot()
    h = 0.8 / max(len(models), 1)
    colours = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]
    for i, model in enumerate(models):
        g = shares[shares["model"] == model].set_index("question").reindex(questions)
        y = np.arange(len(questions)) + (i - (len(models) - 1) / 2) * h
        vals = g["share"].to_numpy(dtype=float)
        ax.barh(y, np.nan_to_num(vals), height=h * 0.9, color=colours[i % len(colours)],
                label=model)
        for yy, v, held, rows in zip(y, vals, g["hold"], g["rows"], strict=True):
            text = "n/a: applies to no row" if not rows else f"{int(held)} / {int(rows)}"
            ax.text((0 if np.isnan(v) else v) + 0.01, yy, text, va="center", fontsize=8)
    ax.set_yticks(np.arange(len(questions)), [(labels or {}).get(q, q) for q in questions])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.12)
    ax.set_xlabel("share of tested verdicts that hold")
    ax.set_title(title or "Verdict stability: does each tested verdict survive?", fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=max(len(models), 1),
              fontsize=8, frameon=False)
    fig.tight_layout()
    return fig

"""What notebook 08 draws from several questions at once: where every model's heads sit on the
relative-depth axis (one figure), and the recap, one sentence per model generated from the
frames of :mod:`~analysis_utils.analyses.crossmodel.surface`, ``linguistic`` and the claims
ledger."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...papers import CLARK_SECTION3
from .depth import layer_runs, paper_sep_band
from .runs import PAPER

# --- where the heads are, for one relative-depth figure --------------------------------------

def head_depths(positional: pd.DataFrame, syntax: pd.DataFrame,
                coref: pd.DataFrame) -> pd.DataFrame:
    """The heads of :func:`~.surface.positional_heads` (pre-trained weights),
    :func:`~.linguistic.syntax_best_heads` and :func:`~.linguistic.coref_best_heads` in one
    frame for a relative-depth figure: columns ``row`` ("previous-token heads", "syntax: det",
    "coreference", ...), ``model``, ``relative depth`` and ``label`` (the head, ``"7-6"``, with
    the UD relation where it is named otherwise, ``"3-9 case"``; the paper's positional heads
    have no head number)."""
    rows = []
    pos = positional[positional["weights"] == "pre-trained"]
    for direction in ("previous", "next"):
        for _, r in pos[pos["direction"] == direction].iterrows():
            rows.append({"row": f"{direction}-token heads", "model": r["model"],
                         "relative depth": r["relative depth"],
                         "label": "" if r["head"].endswith("?") else r["head"]})
    for _, r in syntax.iterrows():
        here = "" if r["relation here"] == r["paper relation"] else f" {r['relation here']}"
        rows.append({"row": f"syntax: {r['paper relation']}", "model": r["model"],
                     "relative depth": r["relative depth"], "label": r["head"] + here})
    for _, r in coref.dropna(subset=["relative depth"]).iterrows():
        rows.append({"row": "coreference", "model": r["model"],
                     "relative depth": r["relative depth"], "label": r["best head"]})
    return pd.DataFrame(rows, columns=["row", "model", "relative depth", "label"])


# --- the recap, in words generated from the frames above -------------------------------------

def recap(sink: pd.DataFrame, positional: pd.DataFrame, syntax: pd.DataFrame) -> list[str]:
    """One sentence per model (and one for the paper) on where it parks its attention, how
    many positional heads it has and how deep its best syntax heads sit (median relative
    depth); every number from the frames, nothing hard-coded. The verdicts are the ledger
    stage's (:mod:`analysis_utils.publish.ledger_stage`), not this notebook's."""
    out = []
    share, lo, hi = paper_sep_band()
    med = syntax[syntax["paper relation"] != "All"].groupby("model", sort=False)[
        "relative depth"].median()
    pos = positional[positional["weights"] == "pre-trained"]
    out.append(f"**{PAPER}**: {CLARK_SECTION3['layer_order']}; separator {CLARK_SECTION3['sep_share']}; "
               f"{CLARK_SECTION3['previous']} on the previous token and {CLARK_SECTION3['next']} "
               f"on the next; best syntax heads at median relative depth {med.get(PAPER, np.nan):.2f}.")
    for model in dict.fromkeys(list(sink["model"]) + list(med.index.drop(PAPER, errors="ignore"))):
        parts = []
        g = sink[(sink["model"] == model) & (sink["weights"] == "pre-trained")]
        if len(g):
            by_token = g.groupby("sink token", sort=False)["layer"].apply(list)
            parts.append("attention sink " + ", ".join(
                f"`{tok}` in layer{'s' if len(d) > 1 else ''} {layer_runs(d)}"  # <s>: not HTML
                for tok, d in by_token.items()) + f" (of {int(g['layers'].iloc[0])})")
            mid = g[(g["relative depth"] >= lo - 1e-9) & (g["relative depth"] <= hi + 1e-9)]
            if len(mid):
                parts.append(f"separator share {100 * mid['separator'].mean():.1f}% where the "
                             f"paper has > {share:.0%}")
        p = pos[pos["model"] == model]
        if model in set(sink["model"]) or len(p):
            parts.append(f"{int((p['direction'] == 'previous').sum())} previous-token and "
                         f"{int((p['direction'] == 'next').sum())} next-token heads")
        if model in med.index:
            parts.append(f"best syntax heads at median relative depth {med[model]:.2f}")
        out.append(f"**{model}**: " + "; ".join(parts) + ".")
    return out

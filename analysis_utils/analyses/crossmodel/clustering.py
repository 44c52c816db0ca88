"""Notebook 05 across models: how heads group, by the layer they sit in (same-layer
clustering, Clark et al. Figure 6) and by the type of their attention maps (Kovaleva et al.
Section 4.1), with how far each run's map-type shares can be trusted."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...papers import CLARK_FIGURE6, KOVALEVA_HETEROGENEOUS_RANGE, KOVALEVA_TASKS
from .runs import DASH, PAPER, RunFolder, usable

# --- same-layer clustering (Figure 6) --------------------------------------------------------

def clustering_ratio(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Per run and weights: the mean Jensen-Shannon distance between heads of the same layer
    over that between heads of different layers (below 1: same-layer heads are closer), its
    permutation p-value and the MDS stress; the paper's row first (Figure 6, a picture: no
    ratio). Reads ``05_layer_separation.csv``."""
    rows = [{"model": PAPER, "weights": "pre-trained", "ratio": np.nan, "p_value": np.nan,
             "permutations": np.nan, "p": CLARK_FIGURE6["same_layer_closer"], "stress": np.nan}]
    for run in usable(runs, "clustering"):
        t = run.read("05_layer_separation.csv")
        for _, r in t.iterrows():
            rows.append({"model": run.label,
                         "weights": "pre-trained" if r["model"] == "model" else r["model"],
                         "ratio": float(r["ratio"]), "p_value": float(r["p_value"]),
                         "permutations": int(r["n_perm"]), "p": r["p"],
                         "stress": float(r["stress"])})
    return pd.DataFrame(rows)


# --- map-type proportions (Kovaleva Section 4.1) ---------------------------------------------

def map_type_proportions(runs: Sequence[RunFolder],
                         tasks: Sequence[str] = KOVALEVA_TASKS) -> pd.DataFrame:
    """Per run and map type: the share of maps of that type (mean over CNN seeds), averaged
    over the GLUE tasks of ``tasks`` that the run classified, with the lowest and highest task;
    the paper's Heterogeneous range first (its only per-task proportions, of *fine-tuned*
    BERT-base maps; ``papers.KOVALEVA_HETEROGENEOUS_RANGE``). Reads
    ``05_type_proportions.csv``."""
    (lo_task, lo), (hi_task, hi) = (KOVALEVA_HETEROGENEOUS_RANGE["low"],
                                    KOVALEVA_HETEROGENEOUS_RANGE["high"])
    rows = [{"model": PAPER, "type": "Heterogeneous", "share": np.nan, "lowest": lo,
             "lowest task": lo_task, "highest": hi, "highest task": hi_task,
             "tasks": ",".join(tasks)}]
    for run in usable(runs, "maptypes"):
        t = run.read("05_type_proportions.csv")
        t = t[t["task"].isin(tasks)]
        for typ, g in t.groupby("type", sort=False):
            lo, hi = g.loc[g["share_mean"].idxmin()], g.loc[g["share_mean"].idxmax()]
            rows.append({"model": run.label, "type": typ, "share": g["share_mean"].mean(),
                         "lowest": float(lo["share_mean"]), "lowest task": lo["task"],
                         "highest": float(hi["share_mean"]), "highest task": hi["task"],
                         "tasks": ",".join(g["task"])})
    return pd.DataFrame(rows)


def map_type_view(maptypes: pd.DataFrame) -> pd.DataFrame:
    """:func:`map_type_proportions` as a reader compares it: one row per map type, one column
    per model, each cell ``"49% (34% STS-B - 58% QNLI)"`` (mean over tasks, lowest and highest
    task); ``–`` where a model has no such number."""
    def cell(r) -> str:
        mean = DASH if pd.isna(r["share"]) else f"{100 * r['share']:.0f}%"
        return (f"{mean} ({100 * r['lowest']:.0f}% {r['lowest task']} - "
                f"{100 * r['highest']:.0f}% {r['highest task']})")

    if maptypes.empty:
        return pd.DataFrame()
    view = maptypes.assign(cell=maptypes.apply(cell, axis=1))
    types = list(dict.fromkeys(view["type"].loc[view["model"] != PAPER]).keys()) or \
        list(dict.fromkeys(view["type"]))
    return view.pivot(index="type", columns="model", values="cell").reindex(
        index=types, columns=list(dict.fromkeys(view["model"]))).fillna(DASH)


def map_type_note(runs: Sequence[RunFolder]) -> str:
    """Markdown on how far to trust each run's map-type shares: which model's labelled maps
    trained its CNNs (the labels are of all-MiniLM-L6-v2's maps; on another model they are
    a transfer that nothing here measures), and how far the Heterogeneous share of one task
    moves across the CNN seeds (``05_type_proportions_by_seed.csv``)."""
    from ...data.labels import LABELLED_MODEL, is_labelled_identity

    lines = []
    for run in runs:
        if run.model is None or not (run.path / "05_type_proportions_by_seed.csv").is_file():
            continue
        d = pd.read_csv(run.path / "05_type_proportions_by_seed.csv")
        spread = d.groupby("task")["Heterogeneous"].agg(lambda s: s.max() - s.min())
        # by the recorded weights (the guard's own test), not by the model's name
        own = is_labelled_identity(run.identity or {})
        lines.append(
            f"- **{run.label}**: CNNs trained on "
            + ("this model's own labelled maps" if own else
               f"the labelled maps of `{LABELLED_MODEL}` (another model) and applied to this "
               "model's, a transfer that is not measured")
            + f"; across {d['seed'].nunique()} CNN seeds a task's Heterogeneous share moves "
              f"by {100 * spread.min():.0f}-{100 * spread.max():.0f} points.")
    return "\n".join(lines)

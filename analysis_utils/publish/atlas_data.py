"""The head atlas's data: the per-head tables a run left in its results folder and the
claims ledger's rows that name a head, read into JSON-able dicts (:mod:`.atlas` renders them).

Data flow::

    results/NN_*.csv (per-head tables, model + random-weights control)
      -> FAMILIES readers: one (layers, heads) array per measured property, 0-based
      -> collect(): JSON-able dict; a family whose table is absent is "not measured"
         (seed means with their sd and each seed; disabling with each seed's interval and
         Holm flag; syntax with its relation's best fixed-offset baseline and n)
      -> neighbours(): each head's closest heads in notebook 05's distance matrices
      -> claims(): ledger rows naming a head, as this run's (``heads``) or the paper's
         BERT-base head (``paper_value``), with test, corrected p and note

Every table numbers layers and heads from 1. :func:`_grid` refuses a layer or head 0 (a table
saved before that), a head outside the model and a ``label`` column that disagrees with the
numbers, so a table in another numbering fails here instead of shifting every head by one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import paths
from ..claims.display import display_quote

LEDGER = "08_claims.csv"  # the claims ledger, as notebook 08 saves it (analysis_utils.ledger)


class AtlasError(RuntimeError):
    """Something the atlas needs is missing or malformed; the message says how to fix it."""


@dataclass
class Property:
    """One measured per-head quantity.

    values, control: (num_layers, num_heads) float arrays (NaN: not measured for that head),
    or object arrays of strings for a categorical property; control is None where the
    compendium has no random-weights control for it. order: ``"desc"`` (rank 1 = largest)
    or ``"asc"`` (rank 1 = smallest).
    """

    id: str
    label: str
    values: np.ndarray
    control: np.ndarray | None = None
    order: str = "desc"
    roles: tuple[str, ...] = ()
    note: str = ""
    kind: str = "number"
    # per-seed grids for a seed mean: {"labels": ["s42", ...], "values": [grid, ...], and
    # where the table has them "lo"/"hi" (interval), "p" (corrected p), "holm" (bool grids)}
    seeds: dict | None = None
    spread: np.ndarray | None = None  # sd over the seeds, per head
    baseline: dict | None = None  # syntax: the relation's best fixed offset and its n


@dataclass
class Family:
    """A group of properties read from one notebook's table(s)."""

    id: str
    title: str
    notebook: str
    sources: tuple[str, ...]  # file names in the results folder, model table first
    reader: Callable[[Path, int, int], list[Property]]
    control_note: str = "random-weights control (same architecture, seeded random init)"
    properties: list[Property] = field(default_factory=list)


def _refuse_0_based(df: pd.DataFrame, source: str) -> None:
    """Every table numbers layers and heads from 1; one with a layer or head 0 (or below) was
    saved before that, and reading it would shift every head by one."""
    if len(df) and (int(df["layer"].min()) < 1 or int(df["head"].min()) < 1):
        raise AtlasError(
            f"{source}: numbers a layer or head 0, as tables did before every table was "
            "1-based; re-run the notebook that writes it (python -m analysis_utils run "
            f"--only {source[:2]}) and commit its results")


def _grid(df: pd.DataFrame, column: str, num_layers: int, num_heads: int,
          source: str) -> np.ndarray:
    """``df[column]`` as a (num_layers, num_heads) array from its 1-based ``layer``/``head``
    columns; heads absent from ``df`` are NaN (or None for text). A layer or head 0 (a table
    saved before every table was 1-based) or a head outside the model is refused, naming the
    table, and so is a ``label``/``head_label`` column ("3-8") that disagrees with the
    numbers."""
    _refuse_0_based(df, source)
    for col in ("label", "head_label"):
        if col in df.columns and len(df):
            own = df["layer"].astype(int).astype(str) + "-" + df["head"].astype(int).astype(str)
            if (own != df[col].astype(str)).any():
                raise AtlasError(f"{source}: its {col!r} column disagrees with its layer/head "
                                 "numbers; the table is corrupt or mixes numbering bases")
    layer = df["layer"].astype(int).to_numpy() - 1
    head = df["head"].astype(int).to_numpy() - 1
    if len(df) and (layer.max() >= num_layers or head.max() >= num_heads):
        raise AtlasError(
            f"{source}: layer/head outside a {num_layers} x {num_heads} model (layers "
            f"{layer.min() + 1}..{layer.max() + 1}, heads {head.min() + 1}..{head.max() + 1}); "
            "was the table written by another model's run?")
    if pd.Series(list(zip(layer, head, strict=True))).duplicated().any():
        raise AtlasError(f"{source}: several rows for one head in column {column!r}; the atlas "
                         "expects one value per head and property")
    text = df[column].dtype == object or pd.api.types.is_string_dtype(df[column])
    out = np.full((num_layers, num_heads), None if text else np.nan,
                  dtype=object if text else float)
    out[layer, head] = df[column].to_numpy()
    return out


def _read(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(folder / name)


def _pair(folder: Path, stem: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    model = _read(folder, f"{stem}_model.csv")
    ctrl = folder / f"{stem}_control.csv"
    return model, (pd.read_csv(ctrl) if ctrl.exists() else None)


# --- readers, one per family ------------------------------------------------------------

_SURFACE = {  # column -> (label, order, roles, note)
    "current": ("attention to the current token", "desc", ("current", "diagonal"), ""),
    "previous": ("attention to the previous token", "desc", ("previous", "prev", "diagonal",
                                                              "positional"), ""),
    "next": ("attention to the next token", "desc", ("next", "diagonal", "positional"), ""),
    "cls": ("attention to [CLS]", "desc", ("[cls]", "cls", "vertical", "sink"),
            "Kovaleva's 'vertical' pattern is attention to [CLS]/[SEP]; map types themselves "
            "were classified per map, not per head (05_type_proportions.csv)."),
    "sep": ("attention to [SEP]", "desc", ("[sep]", "sep", "vertical", "sink", "no-op"),
            "Kovaleva's 'vertical' pattern is attention to [CLS]/[SEP]; map types themselves "
            "were classified per map, not per head (05_type_proportions.csv)."),
    "punct": ("attention to punctuation", "desc", ("punct", "punctuation"), ""),
    "other": ("attention to other tokens", "desc", ("other",), ""),
    "sep_to_sep": ("[SEP] -> [SEP] attention", "desc", ("sep",), ""),
    "rest_to_sep": ("attention to [SEP], from the other tokens", "desc", ("sep",), ""),
    "entropy": ("attention entropy (nats)", "desc", ("entropy", "broad", "heterogeneous"), ""),
    "entropy_cls": ("entropy of [CLS]'s attention (nats)", "desc", ("entropy", "broad"), ""),
    "max_weight": ("mean max weight", "desc", ("focused",), ""),
    "max_weight_cls": ("mean max weight of [CLS]", "desc", ("focused",), ""),
}


def _surface(folder: Path, L: int, H: int) -> list[Property]:
    model, ctrl = _pair(folder, "01_per_head")
    src = "01_per_head_model.csv"
    out = []
    for col, (label, order, roles, note) in _SURFACE.items():
        if col not in model.columns:
            continue
        out.append(Property(f"01.{col}", label, _grid(model, col, L, H, src),
                            _grid(ctrl, col, L, H, src) if ctrl is not None else None,
                            order, roles, note))
    return out


_NORM_TARGETS = {"cls": "[CLS]", "sep": "[SEP]", "punct": "punctuation", "other": "other tokens"}


def _norms(folder: Path, L: int, H: int) -> list[Property]:
    model, ctrl = _pair(folder, "01_norms_per_head")
    out = []
    for target in model["target"].drop_duplicates():
        name = _NORM_TARGETS.get(target, target)
        m = model[model.target == target]
        c = ctrl[ctrl.target == target] if ctrl is not None else None
        for col, label in (("norm_share", f"norm share of {name}"),
                           ("norm_ratio", f"norm / weight ratio of {name}")):
            out.append(Property(
                f"01n.{target}.{col}", label, _grid(m, col, L, H, "01_norms_per_head_model.csv"),
                _grid(c, col, L, H, "01_norms_per_head_control.csv") if c is not None else None,
                roles=("norm", target)))
    return out


_DIRECTIONS = {"dep2head": "dependent -> head", "head2dep": "head -> dependent"}


def best_offsets(folder: Path) -> dict:
    """Each relation's best fixed-offset baseline from ``02_offset_baselines.csv``:
    ``{relation: {"offset", "accuracy", "n"}}`` (ties: the offset listed first, as
    ``analyses.syntax.best_baseline``); ``{}`` when the table is absent."""
    path = folder / "02_offset_baselines.csv"
    if not path.exists():
        return {}
    df = pd.read_csv(path)
    best = df.loc[df.groupby("relation", sort=False)["accuracy"].idxmax().to_numpy()]
    return {str(r.relation): {"offset": int(r.offset), "accuracy": float(r.accuracy),
                              "n": int(r.total)} for r in best.itertuples()}


def _syntax(folder: Path, L: int, H: int) -> list[Property]:
    model, ctrl = _pair(folder, "02_head_scores")
    offsets = best_offsets(folder)
    out = []
    for (rel, dirn), m in model.groupby(["relation", "direction"], sort=False):
        c = (ctrl[(ctrl.relation == rel) & (ctrl.direction == dirn)]
             if ctrl is not None else None)
        n = int(m["total"].iloc[0]) if "total" in m else None
        out.append(Property(
            f"02.{rel}.{dirn}", f"{rel} accuracy, {_DIRECTIONS.get(dirn, dirn)}",
            _grid(m, "accuracy", L, H, "02_head_scores_model.csv"),
            _grid(c, "accuracy", L, H, "02_head_scores_control.csv") if c is not None else None,
            roles=("syntax", rel.lower(), dirn),
            note=f"{n:,} EWT dependencies" if n else "", baseline=offsets.get(str(rel))))
    return out


_PERSON = {"1": "1st person", "2": "2nd person", "3": "3rd person", "-": "person unknown"}


def _coref_group(breakdown: str, group: str) -> str:
    """Notebook 03's mention groups in words: ``("type_person", "pronoun-3")`` ->
    ``"pronoun mentions, 3rd person"``."""
    if breakdown == "all":
        return "all mentions"
    if breakdown == "person":
        return f"{_PERSON.get(group, group)} mentions"
    if breakdown == "type_person" and group.startswith("pronoun-"):
        return f"pronoun mentions, {_PERSON.get(group[len('pronoun-'):], group)}"
    return f"{group} mentions"


def _coref(folder: Path, L: int, H: int) -> list[Property]:
    model, ctrl = _pair(folder, "03_head_scores")
    out = []
    for (brk, grp), m in model.groupby(["breakdown", "group"], sort=False):
        c = (ctrl[(ctrl.breakdown == brk) & (ctrl.group == grp)] if ctrl is not None else None)
        label = f"coreference accuracy, {_coref_group(brk, str(grp))}"
        out.append(Property(
            f"03.{brk}.{grp}", label, _grid(m, "accuracy", L, H, "03_head_scores_model.csv"),
            _grid(c, "accuracy", L, H, "03_head_scores_control.csv") if c is not None else None,
            roles=("coreference", "coref", str(grp).split("-")[0].lower()),
            note=f"{int(m['total'].iloc[0]):,} mentions" if "total" in m else ""))
    return out


def _probe_weights(folder: Path, L: int, H: int) -> list[Property]:
    df = _read(folder, "04_head_weights.csv")
    out = []
    for (probe, dirn), m in df.groupby(["probe", "direction"], sort=False):
        sd = m.get("weight sd")
        out.append(Property(
            f"04.{probe}.{dirn}", f"probe weight, {probe}, {dirn}",
            _grid(m, "weight mean", L, H, "04_head_weights.csv"), None,
            roles=("probe", "weight"),
            note=(f"mean over {int(m['n seeds'].iloc[0])} seeds (sd up to "
                  f"{float(sd.max()):.3g})" if sd is not None and "n seeds" in m else "")))
    return out


def _behaviour(folder: Path, L: int, H: int) -> list[Property]:
    model, ctrl = _pair(folder, "05_head_behaviour")
    roles = tuple(sorted(str(v).lower() for v in model["behaviour"].dropna().unique()))
    return [Property("05.behaviour", "behaviour (Clark et al. Section 6 labels)",
                     _grid(model, "behaviour", L, H, "05_head_behaviour_model.csv"),
                     _grid(ctrl, "behaviour", L, H, "05_head_behaviour_control.csv")
                     if ctrl is not None else None, kind="category", roles=roles)]


def _framenet(folder: Path, L: int, H: int) -> list[Property]:
    df = _read(folder, "06_framenet_heads.csv")
    return [Property("06.framenet.score", "FrameNet: attention from frame to its elements",
                     _grid(df, "score", L, H, "06_framenet_heads.csv"), None,
                     roles=("framenet", "frame", "semantic")),
            Property("06.framenet.z", "FrameNet: z-score among heads",
                     _grid(df, "z", L, H, "06_framenet_heads.csv"), None,
                     roles=("framenet",))]


def seed_stats(df: pd.DataFrame, column: str, L: int, H: int, source: str,
               extra: dict[str, str] | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """The seed mean of ``df[column]`` per head, its sd over the seeds (ddof 1; NaN with one
    seed) and each seed's grid: ``df`` has a ``seed`` column and one row per seed and head.
    ``extra``: more per-seed grids to keep, ``{key: column}`` (an interval's ends, a Holm
    flag). Returns ``(mean, sd, {"labels", "values", key: [grid per seed]})``."""
    seeds = sorted(df["seed"].unique(), key=str)
    grids = [_grid(df[df["seed"] == sd], column, L, H, source) for sd in seeds]
    stack = np.stack(grids)
    with np.errstate(all="ignore"):
        mean = np.nanmean(stack, axis=0) if len(seeds) else stack[0]
        sd = np.nanstd(stack, axis=0, ddof=1) if len(seeds) > 1 else np.full((L, H), np.nan)
    info = {"labels": [f"s{sd}" for sd in seeds], "values": grids}
    for key, col in (extra or {}).items():
        if col in df.columns:
            info[key] = [_grid(df[df["seed"] == sd].assign(**{col: df[col].astype(float)}),
                               col, L, H, source) for sd in seeds]
    return mean, sd, info


def _drift(folder: Path, L: int, H: int) -> list[Property]:
    df = _read(folder, "06_drift_cosine.csv")
    out = []
    for task, t in df.groupby("task", sort=False):
        ctrl = t[t.compared == "control"]
        tuned = t[t.compared != "control"]
        tuned = tuned.assign(seed=tuned["compared"].str.extract(r"s(\d+)$", expand=False)
                             .fillna(tuned["compared"]))
        mean, sd, seeds = seed_stats(tuned, "cosine", L, H, "06_drift_cosine.csv")
        out.append(Property(
            f"06.drift.{task}", f"{task}: cosine, pre-trained vs. fine-tuned (1 = unchanged)",
            mean, _grid(ctrl, "cosine", L, H, "06_drift_cosine.csv") if len(ctrl) else None,
            order="asc", roles=("drift", "fine-tuning", task.lower()), seeds=seeds, spread=sd,
            note=f"mean over {len(seeds['labels'])} fine-tuning seeds; rank 1 = changed most "
                 "by fine-tuning; control: pre-trained vs. random weights"))
    return out


def _features(folder: Path, L: int, H: int) -> list[Property]:
    from ..analyses.features import model_kind

    df = _read(folder, "06_feature_attention.csv")
    # one grid per model kind: the fine-tuning seeds (``fine-tuned s42``, ...) averaged
    seeds = df.groupby(["task", "model"], sort=False).ngroups
    df = df.assign(model=model_kind(df["model"]))
    df = df.groupby(["task", "model", "feature", "layer", "head"], sort=False)["score"].mean()
    df = df.reset_index()
    pooled = seeds > df.groupby(["task", "model"], sort=False).ngroups
    out = []
    for (task, model, feature), m in df.groupby(["task", "model", "feature"], sort=False):
        out.append(Property(
            f"06.feature.{task}.{model}.{feature}", f"{task} {model}: attention to {feature}",
            _grid(m, "score", L, H, "06_feature_attention.csv"), None,
            roles=("feature", feature.lower(), task.lower()),
            note="mean over the fine-tuning seeds" if pooled and model == "fine-tuned" else ""))
    return out


def _disabling(folder: Path, L: int, H: int) -> list[Property]:
    df = _read(folder, "07_disabling.csv")
    df = df[df["kind"] == "head"]
    out = []
    for (task, mode), m in df.groupby(["task", "mode"], sort=False):
        metric = m["metric"].iloc[0]
        mean, sd, seeds = seed_stats(m, "delta", L, H, "07_disabling.csv",
                                     {"lo": "ci_lo", "hi": "ci_hi", "p": "p_holm",
                                      "holm": "holm"})
        out.append(Property(
            f"07.disable.{task}.{mode}", f"{task}: {metric} change when disabled ({mode})",
            mean, None, order="asc", roles=("disabling", "ablation", task.lower(), mode),
            seeds=seeds, spread=sd,
            note=f"mean over {len(seeds['labels'])} seed(s); each seed's 95% interval and "
                 "Holm flag (over the heads) on demand; rank 1 = largest drop"))
    return out


def _importance(folder: Path, L: int, H: int) -> list[Property]:
    df = _read(folder, "07_importance.csv")
    out = []
    for task, m in df.groupby("task", sort=False):
        mean, sd, seeds = seed_stats(m, "normalized", L, H, "07_importance.csv")
        out.append(Property(
            f"07.importance.{task}", f"{task}: importance (Michel et al.)", mean, None,
            roles=("importance", "pruning", task.lower()), seeds=seeds, spread=sd,
            note=f"normalised per layer as in Michel et al.; mean over "
                 f"{len(seeds['labels'])} seeds"))
    return out


FAMILIES: tuple[Family, ...] = (
    Family("surface", "Surface patterns (Clark Section 3)", "01",
           ("01_per_head_model.csv", "01_per_head_control.csv"), _surface),
    Family("norms", "Attention norms (Kobayashi et al. 2020)", "01",
           ("01_norms_per_head_model.csv", "01_norms_per_head_control.csv"), _norms),
    Family("syntax", "Syntax heads (Clark Section 4.2)", "02",
           ("02_head_scores_model.csv", "02_head_scores_control.csv"), _syntax),
    Family("coref", "Coreference heads (Clark Section 4.3)", "03",
           ("03_head_scores_model.csv", "03_head_scores_control.csv"), _coref),
    Family("probe", "Attention-probe weights (Clark Section 5)", "04",
           ("04_head_weights.csv",), _probe_weights),
    Family("behaviour", "Head behaviour (Clark Section 6)", "05",
           ("05_head_behaviour_model.csv", "05_head_behaviour_control.csv"), _behaviour),
    Family("framenet", "FrameNet heads (Kovaleva Section 4.5)", "06",
           ("06_framenet_heads.csv",), _framenet),
    Family("drift", "Fine-tuning drift (Kovaleva Section 4.2)", "06",
           ("06_drift_cosine.csv",), _drift,
           control_note="pre-trained vs. random-weights control (the scale of 'changed')"),
    Family("features", "Attention to linguistic features (Kovaleva Section 4.4)", "06",
           ("06_feature_attention.csv",), _features),
    Family("disabling", "Disabling heads (Kovaleva Section 4.6)", "07",
           ("07_disabling.csv",), _disabling),
    Family("importance", "Head importance (Michel et al. 2019)", "07",
           ("07_importance.csv",), _importance),
)


# --- assembly ---------------------------------------------------------------------------

def ranks(values: np.ndarray, order: str = "desc") -> np.ndarray:
    """Rank of every head among the measured ones (1 = largest for ``"desc"``, smallest for
    ``"asc"``; ties share the best rank); NaN where not measured.

    >>> ranks(np.array([[0.5, np.nan], [0.9, 0.5]])).tolist()
    [[2.0, nan], [1.0, 2.0]]
    """
    flat = pd.Series(np.asarray(values, dtype=float).ravel())
    r = flat.rank(method="min", ascending=(order == "asc"), na_option="keep")
    return r.to_numpy().reshape(np.shape(values))


def _json_grid(a: np.ndarray | None):
    """(L, H) array -> nested lists with None for NaN (JSON ``null``: not measured)."""
    if a is None:
        return None
    return [[None if (v is None or (isinstance(v, float) and np.isnan(v))) else
             (v if isinstance(v, str) else float(v))
             for v in row] for row in a]


def model_info(results: Path) -> dict:
    """The model a results folder describes, from the first ``NN_provenance.json`` there:
    its identity dict (name, num_layers, num_heads, ...), the profile, and the commit of each
    notebook's run (``{"01": sha, ...}``)."""
    provs = sorted(results.glob("[0-9][0-9]_provenance.json"))
    if not provs:
        raise AtlasError(
            f"no NN_provenance.json in {_shown(results)}: the atlas reads a finished run's "
            "tables. Run `python -m analysis_utils run --profile default` (or `make base` for "
            "the base profile) first, or pass --results DIR")
    prov = json.loads(provs[0].read_text())
    ident = dict(prov.get("models", {}).get("model") or {})
    if "num_layers" not in ident or "num_heads" not in ident:
        raise AtlasError(f"{_shown(provs[0])} records no model with num_layers and num_heads")
    for other in provs[1:]:
        o = json.loads(other.read_text()).get("models", {}).get("model") or {}
        if o and (o.get("name"), o.get("num_layers")) != (ident["name"], ident["num_layers"]):
            raise AtlasError(f"{_shown(results)} mixes runs of {ident['name']} and "
                             f"{o.get('name')} ({other.name}); rerun the notebooks of one model")
    commits = {p.name[:2]: json.loads(p.read_text()).get("git_commit") for p in provs}
    return {"identity": ident, "profile": prov.get("profile"), "commits": commits}


def _shown(path: Path) -> str:
    """A path as messages and committed files show it: relative to the repository."""
    try:
        return str(Path(path).resolve().relative_to(paths.REPO_ROOT))
    except ValueError:
        return Path(path).name


#: The figures that draw each family's numbers, and what each draws: a head card links them
#: (those the run wrote), so a reader goes from a number to the picture it is part of. Most are
#: per head; the rest say what they summarise.
FIGURES: dict[str, tuple[tuple[str, str], ...]] = {
    "surface": (
        ("01_relative_position.png", "attention to the current, previous and next token, "
                                     "every head"),
        ("01_token_classes.png", "attention to [CLS], [SEP] and periods/commas, every head"),
        ("01_sep_to_sep.png", "attention to [SEP] from [SEP] and from other tokens, every head"),
        ("01_entropy.png", "attention entropy, from every token and from [CLS], every head")),
    "norms": (("01_norm_shares.png", "weight share against norm share, layer means"),),
    "syntax": (
        ("02_relation_heatmaps.png", "accuracy of every head on the relations of the paper's "
                                     "Table 1, each in its best direction"),
        ("02_relation_heatmaps_other.png", "the same for the other relations")),
    "coref": (("03_head_heatmap.png", "antecedent accuracy of every head, all mentions"),),
    "probe": (("04_head_weights.png", "the probes' learned weight of every head, mean over "
                                      "their training seeds"),),
    "behaviour": (("05_mds_model.png", "every head placed by the distance between their "
                                       "attention maps (MDS), coloured by behaviour"),
                  ("05_mds_control.png", "the same for the random-weights control")),
    "framenet": (("06_framenet_heatmap.png", "the FrameNet link score of every head, minus "
                                             "the random-weights control's"),),
    "drift": (("06_drift_heatmaps.png", "cosine similarity of every head's maps before and "
                                        "after fine-tuning, the first fine-tuning seed"),),
    "features": (("06_special_tokens_by_layer.png", "attention to [CLS], [SEP] and "
                                                    "punctuation, layer means over the heads"),),
    "disabling": (("07_head_changes_uniform.png", "the change of the dev metric with each "
                                                  "head disabled (uniform), every task and seed"),
                  ("07_head_changes_zero.png", "the same with each head's output set to zero")),
    "importance": (("07_pruning_curves.png", "the dev metric as heads are removed in this "
                                             "importance order, against random orders"),),
}


def figure_links(family: str, figures: Path | None) -> list[dict]:
    """``[{"path", "draws"}]``: the figures of :data:`FIGURES` that ``family``'s run wrote in
    ``figures`` (its figures folder), each path repository-relative in POSIX form (a page
    links it as ``book.root + path``); none without a folder."""
    import os

    if figures is None:
        return []
    out = []
    for name, draws in FIGURES.get(family, ()):
        f = Path(figures) / name
        if f.is_file():
            out.append({"path": Path(os.path.relpath(f, paths.REPO_ROOT)).as_posix(),
                        "draws": draws})
    return out


def collect(results: Path, num_layers: int, num_heads: int,
            families: tuple[Family, ...] = FAMILIES, figures: Path | None = None) -> list[dict]:
    """Every family's properties read from ``results`` as JSON-able dicts: ``values``,
    ``control`` and ``rank`` are (num_layers, num_heads) nested lists with ``null`` where not
    measured; a family whose model table is absent is ``{"measured": False}``. ``figures``:
    the run's figures folder, whose figures of each family are listed
    (:func:`figure_links`)."""
    out = []
    for fam in families:
        entry = {"id": fam.id, "title": fam.title, "notebook": fam.notebook,
                 "sources": list(fam.sources), "control_note": fam.control_note,
                 "figures": figure_links(fam.id, figures)}
        if not (results / fam.sources[0]).exists():
            out.append({**entry, "measured": False, "properties": []})
            continue
        try:
            props = fam.reader(results, num_layers, num_heads)
        except (KeyError, ValueError) as err:
            raise AtlasError(f"{fam.sources[0]} in {_shown(results)}: cannot read it ({err!r});"
                             f" rerun notebook {fam.notebook} to rewrite it") from err
        entry["measured"] = True
        entry["properties"] = [_prop_json(p) for p in props]
        out.append(entry)
    return out


def _prop_json(p: Property) -> dict:
    d = {"id": p.id, "label": p.label, "kind": p.kind, "order": p.order,
         "roles": list(p.roles), "note": p.note, "values": _json_grid(p.values),
         "control": _json_grid(p.control)}
    if p.kind == "number":
        d["rank"] = _json_grid(ranks(p.values, p.order))
        d["n_measured"] = int(np.isfinite(np.asarray(p.values, dtype=float)).sum())
    if p.seeds is not None:
        d["seeds"] = {k: (v if k == "labels" else [_json_grid(g) for g in v])
                      for k, v in p.seeds.items()}
        d["spread"] = _json_grid(p.spread)
    if p.baseline is not None:
        d["baseline"] = p.baseline
    else:
        d["categories"] = sorted({str(v) for v in p.values.ravel() if v is not None})
    return d


def neighbours(results: Path, num_layers: int, num_heads: int, k: int = 5) -> dict:
    """Each head's ``k`` closest heads in notebook 05's Jensen-Shannon distance matrices
    (``05_js_distance_{model,control}.csv``: (heads, heads), rows and columns labelled
    "L-H"), read and sorted, not recomputed: ``{"model": {"3-9": [["2-4", 101.2], ...]},
    "control": {...}}``; ``{}`` when notebook 05 did not run."""
    from ..heads import head_labels

    labels = head_labels(num_layers, num_heads)
    out = {}
    for kind in ("model", "control"):
        path = results / f"05_js_distance_{kind}.csv"
        if not path.exists():
            continue
        d = pd.read_csv(path, index_col="head")
        if sorted(d.index) != sorted(labels) or sorted(d.columns) != sorted(labels):
            raise AtlasError(f"{path.name} in {_shown(results)} is not a {num_layers} x "
                             f"{num_heads} model's head-by-head matrix; rerun notebook 05")
        out[kind] = {lab: [[h, float(v)] for h, v in d.loc[lab].drop(lab).nsmallest(k).items()]
                     for lab in labels}
    return out


# --- claims -----------------------------------------------------------------------------

_LAYER_SPANS = re.compile(r"\[layers?[^\]]*\]|\blayers?\s+\d+(\s*-\s*\d+)?|\bL\d+", re.I)
_HEAD = re.compile(r"(?<![\d.])(\d{1,2})-(\d{1,2})(?![\d.%])")


def heads_named(text, num_layers: int, num_heads: int) -> list[str]:
    """Head labels ("3-9") a claim's text names, ignoring layer ranges ("[layers 3-5]").

    >>> heads_named("case 3-9: 68.0 vs. 38.2 [layers 1-6]", 6, 12)
    ['3-9']
    """
    if not isinstance(text, str):
        return []
    found = []
    for a, b in _HEAD.findall(_LAYER_SPANS.sub(" ", text)):
        if 1 <= int(a) <= num_layers and 1 <= int(b) <= num_heads and f"{a}-{b}" not in found:
            found.append(f"{int(a)}-{int(b)}")
    return found


def claims(ledger_dir: Path, model_name: str, num_layers: int, num_heads: int) -> dict:
    """Ledger rows that name a head, from the claims ledger notebook 08 saves
    (``results/08_claims.csv``, :mod:`analysis_utils.ledger`). Rows of other models are dropped
    (``model`` is ``model_name`` or ``"model_name (L x H)"``). A row names a head of this run
    in its ``heads`` column ("3-9, 2-5": ``heads``) and a head of the paper's model (BERT-base)
    in its ``paper_value`` ("4-10: 70.4 vs. 70.2": ``paper_heads``, numbers that mean another
    model's head, never this one's). Returns ``{"source", "note", "rows": [{"heads",
    "paper_heads", "claim", "quote", "paper_value", "this_run", "verdict", "control_verdict",
    "test", "unit", "p_value", "p_adjusted", "family", "interval", "mde", "per_task", "note",
    "notebook", "paper", "criterion"}]}`` (a column an older ledger lacks reads ``""``)."""
    path = ledger_dir / LEDGER
    if not path.exists():
        return {"source": None, "rows": [],
                "note": f"No claims ledger (results/{LEDGER}) in this run: notebook 08 writes "
                        "it (`python -m analysis_utils run --only 08`); no verdicts to show."}
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = sorted({"model", "claim", "heads", "verdict"} - set(df.columns))
    if missing:
        raise AtlasError(f"results/{LEDGER} lacks column(s) {missing}; re-run notebook 08 to "
                         "rewrite the ledger")
    df = df[(df["model"] == model_name) | df["model"].str.startswith(f"{model_name} (")]
    keep = ("claim", "quote", "paper_value", "this_run", "verdict", "control_verdict", "test",
            "unit", "p_value", "p_adjusted", "family", "interval", "mde", "per_task", "note",
            "notebook", "paper", "criterion")
    from .claimpages import atlas_property, claim_id

    rows = []
    for _, r in df.iterrows():
        named = heads_named(r["heads"], num_layers, num_heads)
        # the paper's heads are BERT-base's (12 x 12), whatever this model's size
        paper = heads_named(r.get("paper_value", ""), 12, 12)
        if named or paper:
            row = {"heads": named, "paper_heads": paper, **{k: r.get(k, "") for k in keep}}
            # the paper's bold (Table 1's <b>76.3</b>) is markup, not the paper's words
            row["quote"] = display_quote(re.sub(r"</?[a-z][^>]*>", "", row["quote"]))
            # the claim's page in the book (claims/<id>.html) and the property it is about
            row["id"] = claim_id(r["notebook"], r["claim"])
            row["property"] = atlas_property(dict(r)) or ""
            rows.append(row)
    return {"source": f"results/{LEDGER}", "note": "", "rows": rows}

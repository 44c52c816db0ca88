"""The claims ledger: one row per claim of either paper that notebooks 01-07 check, per model,
built from the notebooks' own saved tables (nothing recomputed from a model).

Each claim is one spec (:mod:`.spec_clark`, :mod:`.spec_kovaleva`): its ``criterion``,
``reference`` and ``test`` formatted from the parameters its rule applies, and the rule, which
lives with the statistics it computes (:mod:`.clark`, :mod:`.kovaleva`); the same rule runs on the random-weights control where the notebook saved
its tables, and p-values are corrected within the family a row names (:mod:`.core`).

>>> ledger = build(["results", "results/base"])                # doctest: +SKIP
>>> ledger.groupby("model")["verdict"].value_counts()            # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from .. import claims as registry
from .. import paths
from . import spec_clark, spec_kovaleva
from .core import (
    ALPHA,
    COLUMNS,
    LEDGER_NOTEBOOK,
    MIN_SEEDS,
    VERDICTS,
    Check,
    Claim,
    Outcome,
    Tables,
    evaluate,
)

__all__ = ["build", "notebook_rows", "VIEW_COLUMNS", "claims", "registry_claims", "counts",
           "headline_counts", "headline_lines", "GROUPS",
           "wide", "findings_markdown", "verdict_counts", "ALPHA", "COLUMNS", "MIN_SEEDS", "VERDICTS", "Check",
           "Claim", "Outcome", "Tables", "evaluate"]


def claims() -> list[Claim]:
    """Every claim the ledger judges, per paper in notebook order: the specs of
    :mod:`.spec_clark` and :mod:`.spec_kovaleva`, and a row reading ``untestable`` for every untestable
    entry of the claims registry that no rule names (:func:`registry_claims`)."""
    rules = spec_clark.claims() + spec_kovaleva.claims()
    extra = registry_claims({i for c in rules for i in c.registry})
    out = []
    for paper in dict.fromkeys([c.paper for c in rules] + [c.paper for c in extra]):
        mine = [c for c in rules if c.paper == paper] + [c for c in extra if c.paper == paper]
        out += sorted(mine, key=lambda c: c.notebook)  # stable: the rules' order within one
    return out


def _untestable_rule(reason: str):
    def rule(t: Tables, which: str) -> Outcome:
        return Outcome(value="\u2013", untestable=reason)
    return rule


def registry_claims(named: set[str] = frozenset()) -> list[Claim]:
    """A ledger row for every entry of the claims registry marked ``testable = "untestable"``
    whose id is not in ``named`` (the ids the rules' claims name): it reads ``untestable``
    with the entry's reason, in the entry's first notebook (the ledger's own, 08, when the
    entry names none), with no control and no table needed."""
    out = []
    for e in registry.load():
        if not e.untestable or e.id in named:
            continue
        out.append(Claim(
            e.notebooks[0] if e.notebooks else LEDGER_NOTEBOOK, registry.LEDGER_PAPER[e.paper],
            e.section, e.claim, "\u2013", e.criterion,
            "none: the claims registry marks it untestable here",
            f"none: {e.untestable_reason}", _untestable_rule(e.untestable_reason), (),
            control=False, registry=(e.id,)))
    return out


def build(folders: Sequence[str] | str, root: str | Path | None = None,
          multiverse: bool = True) -> pd.DataFrame:
    """The ledger of every run folder (``"results"``, ``"results/base"``; relative to
    ``root``, default the repository root), one row per claim and model, columns
    :data:`COLUMNS`. A folder without provenance is refused with the command that fills it."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    folders = folders.split(",") if isinstance(folders, str) else list(folders)
    frames = []
    for f in (x.strip() for x in folders if x.strip()):
        t = Tables(root / f)
        if t.model is None:
            raise FileNotFoundError(f"{root / f} holds no NN_provenance.json naming a model: "
                                    "run the notebooks first (`make reproduce`)")
        frames.append(evaluate(claims(), t, multiverse=multiverse))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


#: The columns a notebook shows of its own ledger rows (:func:`notebook_rows`): what was
#: found, on what unit, the interval at the family's level and the smallest effect the test
#: could see, each task's verdict, the verdict and why.
VIEW_COLUMNS = ["section", "claim", "paper_value", "this_run", "reference_value", "unit",
                "interval", "mde", "p_adjusted", "seeds", "per_task", "verdict", "why",
                "specifications", "note"]


def notebook_rows(prefix: str, folder: str | Path) -> pd.DataFrame:
    """The ledger rows of notebook ``prefix``'s claims, judged on the tables in ``folder`` (its
    own output folder, once ``run.finish()`` has written its provenance): what
    :func:`build` gives for that notebook, since every family Holm corrects over lies within
    one notebook. Shown at the end of notebooks 06 and 07, in place of a verdict of their own."""
    t = Tables(folder)
    if prefix not in t.notebooks:
        raise FileNotFoundError(f"{folder} holds no {prefix}_provenance.json: call run.finish() "
                                "before reading the notebook's verdicts")
    own = [c for c in claims() if c.notebook == prefix]
    fams = {c.family for c in own if c.family}
    shared = [c.family for c in claims() if c.notebook != prefix and c.family in fams]
    if shared:
        raise ValueError(f"families {sorted(set(shared))} span several notebooks: judge them "
                         "with ledger.build over the whole folder")
    return evaluate(own, t)


#: Control verdicts that say the rule ran on the random-weights control's tables (any verdict
#: but ``untestable``; a blank or a dash: the rule does not take the control).
_CONTROL_RAN = tuple(v for v in VERDICTS if v != "untestable")


def verdict_counts(g: pd.DataFrame) -> str:
    """``"3 of 10 claims of the ledger came out yes (2 no, 4 inconclusive, 0 mixed, 1
    untestable)"``: every verdict of :data:`VERDICTS`, zeros included,
    and how the random-weights control fared on the claims whose rule it ran on (its verdict is
    any but ``untestable``; an ``inconclusive`` or ``mixed`` control was run and did not
    pass)."""
    n = {v: int((g["verdict"] == v).sum()) for v in VERDICTS}
    ctrl = g[g["control_verdict"].isin(_CONTROL_RAN)] if "control_verdict" in g else g.iloc[:0]
    return (f"{n['yes']} of {len(g)} claims of the ledger came out yes ("
            + ", ".join(f"{n[v]} {v}" for v in VERDICTS if v != "yes")
            + f"); its random-weights control, run under the same rules on {len(ctrl)} of "
              f"them, came out yes on {int((ctrl['control_verdict'] == 'yes').sum())}")




def _tested_rows(g: pd.DataFrame) -> pd.DataFrame:
    """Rows with a test (a Holm family named), or, in an older ledger, a p-value."""
    col = "family" if "family" in g else "p_value"
    return g[g[col].fillna("") != ""]


def counts(ledger: pd.DataFrame) -> pd.DataFrame:
    """Per model: verdict counts (:data:`VERDICTS`), how many of the same claims the
    random-weights control also passes under the same rules (of those it could be run on), and
    how many ``yes`` chance alone would give (at most ``ALPHA`` per claim with a test)."""
    rows = []
    for model, g in ledger.groupby("model", sort=False):
        ctrl = g[g["control_verdict"].isin(_CONTROL_RAN)]
        tested = _tested_rows(g)
        rows.append({"model": model, **{v: int((g["verdict"] == v).sum()) for v in VERDICTS},
                     "claims": len(g),
                     "control yes (same rules)": f"{int((ctrl['control_verdict'] == 'yes').sum())}"
                                                 f" of {len(ctrl)}",
                     "model yes on those": int(((ctrl["verdict"] == "yes")).sum()),
                     "yes expected by chance": f"<= {ALPHA * len(tested):.1f} of {len(tested)}"})
    return pd.DataFrame(rows)


def wide(ledger: pd.DataFrame) -> pd.DataFrame:
    """One row per claim, and per model its value and verdict side by side (``–`` where a
    model's run does not check the claim); the criterion last. Claims in ledger order."""
    dash = "\u2013"
    keys = ["notebook", "paper", "claim"]
    if ledger.empty:
        return pd.DataFrame(columns=[*keys, "paper_value", "criterion"])
    out = ledger.drop_duplicates(keys)[[*keys, "paper_value", "criterion"]].reset_index(drop=True)
    idx = pd.MultiIndex.from_frame(out[keys])
    for model, g in ledger.groupby("model", sort=False):
        g = g.set_index(keys)
        out[f"{model}: this run"] = g["this_run"].reindex(idx).fillna(dash).to_numpy()
        out[f"{model}: verdict"] = g["verdict"].reindex(idx).fillna(dash).to_numpy()
        out[f"{model}: control"] = g["control_verdict"].reindex(idx).fillna(dash).replace(
            "", dash).to_numpy()
    return out[[c for c in out.columns if c != "criterion"] + ["criterion"]]


def findings_markdown(ledger: pd.DataFrame) -> str:
    """The README's findings table, generated from the ledger: per model and notebook, how
    many claims came out yes / no / inconclusive / mixed / untestable (:data:`VERDICTS`), and
    the control's yes under the same rules."""
    rows = []
    for (model, nb), g in ledger.groupby(["model", "notebook"], sort=False):
        ctrl = g[g["control_verdict"].isin(_CONTROL_RAN)]
        fragile = (g["robust"].fillna("").astype(str) == "no") if "robust" in g else \
            pd.Series(False, index=g.index)
        rows.append({"model": model, "notebook": nb,
                     **{v: int((g["verdict"] == v).sum()) for v in VERDICTS},
                     "of them fragile": int(fragile.sum()),
                     "control yes": (f"{int((ctrl['control_verdict'] == 'yes').sum())} of "
                                     f"{len(ctrl)}" if len(ctrl) else "\u2013")})
    return pd.DataFrame(rows).to_markdown(index=False)


#: The three things the headline counts keep apart (issue 52, point 5).
GROUPS = ("about trained attention", "data and pipeline checks",
          "the random-weights control passes too")


def _group(r) -> str:
    if str(r.get("about", "attention") or "attention") == "data":
        return GROUPS[1]
    if r["verdict"] == "yes" and r.get("control_verdict", "") == "yes":
        return GROUPS[2]
    return GROUPS[0]


def headline_counts(ledger: pd.DataFrame) -> pd.DataFrame:
    """Per model and group (:data:`GROUPS`): the rows, how many a test decided (any verdict
    but ``untestable``), and of those the ``yes``, ``no`` and ``inconclusive`` verdicts that
    are robust (``robust``: every specification of the multiverse, another bootstrap seed and
    each fine-tuning seed left out give the same verdict, :func:`.stability.fold`), the ones
    that turn on a choice or a draw (``fragile``), ``mixed`` and ``untestable``. A row without
    a multiverse column (an older ledger) counts as robust."""
    rows = []
    for model, g in ledger.groupby("model", sort=False):
        grp = g.apply(_group, axis=1) if len(g) else pd.Series(dtype=str)
        for name in GROUPS:
            h = g[grp == name]
            robust = (h["robust"].fillna("").astype(str) != "no") if "robust" in h \
                else pd.Series(True, index=h.index)
            tested = h["verdict"] != "untestable"
            rows.append({"model": model, "group": name, "rows": len(h),
                         "tested": int(tested.sum()),
                         **{f"robust {v}": int(((h["verdict"] == v) & robust).sum())
                            for v in ("yes", "no", "inconclusive")},
                         "fragile": int((tested & ~robust & (h["verdict"] != "mixed")).sum()),
                         "mixed": int((h["verdict"] == "mixed").sum()),
                         "untestable": int((~tested).sum())})
    return pd.DataFrame(rows)


def headline_lines(ledger: pd.DataFrame) -> list[str]:
    """One Markdown line per model from :func:`headline_counts`: the claims about trained
    attention first (robust verdicts only), then the data checks and the rows the control
    passes too, each said for what it is."""
    out = []
    hc = headline_counts(ledger)
    for model, g in hc.groupby("model", sort=False):
        a, d, c = (g[g["group"] == x].iloc[0] for x in GROUPS)
        out.append(
            f"- **{model}**, claims about trained attention ({a['rows']} "
            f"row{'s' if a['rows'] != 1 else ''}, {a['tested']} "
            f"decided by a test): **{a['robust yes']} yes** and **{a['robust no']} no** that "
            f"hold under every specification and every draw, {a['robust inconclusive']} "
            f"inconclusive, {a['fragile']} fragile (the verdict turns on a choice the paper "
            f"leaves open, the bootstrap seed or one fine-tuning seed), "
            f"{a['mixed']} mixed, {a['untestable']} untestable. Apart from those: "
            f"{d['rows']} data and pipeline checks ({d['robust yes']} yes, {d['robust no']} "
            f"no, {d['untestable']} untestable) and {c['rows']} yes that the random-weights "
            f"control earns too (not specific to training).")
    return out

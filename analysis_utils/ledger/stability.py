"""Verdict stability: whether each tested row's verdict survives what a reader could vary.

For every row of the ledger that has a test (a verdict of ``yes``, ``no``, ``inconclusive``
or ``mixed``), three questions, each answered ``holds`` / ``changes`` / ``n/a``:

- **bootstrap seed**: the same rows rebuilt with every resample drawn from other streams
  (:func:`~.resample.another_seed`, one build per stream); a verdict that changes under any of
  them rests on the bootstrap's noise;
- **other model**: the same claim's verdict on the other run folder's model (``n/a`` where
  the other model has no row, or its row is untestable);
- **fine-tuning seed left out**: for the rows of notebooks 06-07, whether the verdict holds
  with each fine-tuning seed left out in turn (both arms, pre-trained and random-init; the
  ledger's rules run again on the folder without it, :mod:`.seeds_left_out`). ``holds`` when
  every build gives the verdict; otherwise ``changes without seed 43 (to inconclusive)``, each
  seed that moves it named, so a reader sees which rows rest on one draw. ``n/a`` outside
  06-07, and for a model whose run has no fine-tuning seeds;
- **every specification**: whether the verdict is the same under every defensible way to test
  the claim that the paper leaves open (the ledger's multiverse, :mod:`.spec`: the margin, the
  route, the depth reading); ``changes: <the choice it turns on>`` otherwise, ``n/a`` where
  the ledger has no multiverse column.

:func:`table` gives one row per tested ledger row; :func:`shares` the share that holds under
each question and under all that apply; :func:`fold` writes the bootstrap seed's and the
left-out seeds' answers into the ledger's ``robust`` and ``turns_on``, so that a verdict
counted as robust survives them as well as every specification.

>>> stab = table(ledger, rebuilt)                                  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pandas as pd

#: Verdicts that come from a test (the rows whose stability is asked).
TESTED = ("yes", "no", "inconclusive", "mixed")
QUESTIONS = ("bootstrap seed", "other model", "fine-tuning seed left out",
             "every specification")


def _key(df: pd.DataFrame) -> pd.Series:
    return df["notebook"].astype(str) + "\x00" + df["claim"].astype(str)


def _left_out(verdict: str, without: dict[int, str]) -> str:
    """The answer for one row: ``without`` maps each left-out seed to the row's verdict then."""
    if not without:
        return "n/a"
    moved = {s: v for s, v in sorted(without.items()) if v != verdict}
    if not moved:
        return "holds"
    return "changes " + "; ".join(f"without seed {s} (to {v})" for s, v in moved.items())


def _specs(r) -> str:
    """The multiverse answer of one ledger row (its ``robust`` and ``turns_on`` cells)."""
    robust = str(r.get("robust", "") or "")
    if robust == "yes":
        return "holds"
    if robust == "no":
        return "changes: turns on " + (str(r.get("turns_on", "") or "") or "several choices")
    return "n/a"


def _streams(verdict: str, boots: list[str]) -> str:
    """The bootstrap answer of one row: ``boots`` its verdicts under the other streams."""
    if not boots:
        return "n/a"
    moved = [b for b in boots if b != verdict]
    if not moved:
        return "holds"
    return "changes to " + ", ".join(sorted(set(moved))) + (
        f" (under {len(moved)} of {len(boots)} other streams)" if len(boots) > 1 else "")


def table(ledger: pd.DataFrame, rebuilt: pd.DataFrame | Mapping[int, pd.DataFrame],
          left_out: Mapping[str, Mapping[int, pd.DataFrame]] | None = None) -> pd.DataFrame:
    """One row per tested row of ``ledger`` (columns ``model``, ``notebook``, ``claim``,
    ``verdict``): ``bootstrap seed`` (``rebuilt``: the same ledger under another bootstrap
    stream, or ``{stream offset: ledger}`` under several, each of which must give the
    verdict), ``other model``, ``fine-tuning seed left out`` (``left_out``: per model, per
    fine-tuning seed, the ledger rows rebuilt without it; a row absent from them is ``n/a``)
    and ``holds under all`` (every question that applies holds; ``n/a`` where none
    applies)."""
    key = _key(ledger)
    builds = list(rebuilt.values()) if isinstance(rebuilt, Mapping) else [rebuilt]
    again: dict[str, list[str]] = {}
    for df in builds:
        for k, v in zip(df["model"] + "\x00" + _key(df), df["verdict"], strict=True):
            again.setdefault(k, []).append(v)
    by_model = {m: dict(zip(_key(g), g["verdict"], strict=True))
                for m, g in ledger.groupby("model", sort=False)}
    without: dict[str, dict[int, str]] = {}
    for model, builds in (left_out or {}).items():
        for seed, df in builds.items():
            for k, v in zip(_key(df), df["verdict"], strict=True):
                without.setdefault(f"{model}\x00{k}", {})[int(seed)] = v
    rows = []
    for (_, r), k in zip(ledger.iterrows(), key, strict=True):
        if r["verdict"] not in TESTED:
            continue
        boots = again.get(f"{r['model']}\x00{k}", [])
        others = [v.get(k) for m, v in by_model.items() if m != r["model"]]
        others = [o for o in others if o in TESTED]
        answers = {
            "bootstrap seed": _streams(r["verdict"], boots),
            "other model": "n/a" if not others else
            ("holds" if all(o == r["verdict"] for o in others)
             else "changes to " + ", ".join(sorted(set(others)))),
            "fine-tuning seed left out": _left_out(r["verdict"],
                                                   without.get(f"{r['model']}\x00{k}", {})),
            "every specification": _specs(r),
        }
        applied = [a for a in answers.values() if a != "n/a"]
        rows.append({"model": r["model"], "notebook": r["notebook"], "claim": r["claim"],
                     "verdict": r["verdict"], **answers,
                     "holds under all": "n/a" if not applied else
                     ("yes" if all(a == "holds" for a in applied) else "no")})
    return pd.DataFrame(rows, columns=["model", "notebook", "claim", "verdict", *QUESTIONS,
                                       "holds under all"])


#: The questions a robust verdict must survive beside the multiverse. Another model is not
#: among them: a claim may hold on one encoder and not on another, and that is a finding.
ROBUST_UNDER = ("bootstrap seed", "fine-tuning seed left out")
#: How :func:`fold` names each in a row's ``turns_on`` cell (the choices it turns on).
TURNS_ON_NAMES = {"bootstrap seed": "the bootstrap seed", "fine-tuning seed left out":
                  "the fine-tuning seeds"}


def _reason(question: str, answer: str) -> str:
    """``"the bootstrap seed (inconclusive under another stream)"`` from a table cell."""
    if question == "bootstrap seed":
        moved, _, of = answer[len("changes to "):].partition(" (under ")
        return (f"{TURNS_ON_NAMES[question]} ({moved} under "
                + (of.rstrip(")") if of else "another stream") + ")")
    moved = re.findall(r"without seed (\d+) \(to (\w+)\)", answer)
    return TURNS_ON_NAMES[question] + " (" + ", ".join(
        f"{v} with seed {s} left out" for s, v in moved) + ")"


def fold(claims: pd.DataFrame, stab: pd.DataFrame) -> pd.DataFrame:
    """``claims`` with ``robust`` and ``turns_on`` answering the multiverse and
    :data:`ROBUST_UNDER` together: a verdict that holds under every specification but changes
    under another bootstrap seed, or without one fine-tuning seed, is not robust, and its
    ``turns_on`` names that (issue 52: the headline counts robust verdicts only). ``stab``:
    :func:`table` of the same ``claims`` (before folding). Rows without a stability row, and
    the ``specifications`` cell, are left as they are."""
    out = claims.copy()
    if not len(out) or not len(stab):
        return out
    for col in ("robust", "turns_on"):
        if col not in out:
            out[col] = ""
    at = {(m, n, c): i for i, (m, n, c) in enumerate(zip(stab["model"], stab["notebook"].astype(str),
                                                           stab["claim"], strict=True))}
    robust, turns = out["robust"].astype(object).tolist(), out["turns_on"].astype(object).tolist()
    for j, (m, n, c) in enumerate(zip(out["model"], out["notebook"].astype(str), out["claim"],
                                      strict=True)):
        i = at.get((m, n, c))
        if i is None:
            continue
        reasons = [_reason(q, str(stab[q].iloc[i])) for q in ROBUST_UNDER
                   if str(stab[q].iloc[i]).startswith("changes")]
        if reasons:
            before = "" if pd.isna(turns[j]) else str(turns[j] or "")
            robust[j] = "no"
            turns[j] = "; ".join([t for t in [before] if t] + reasons)
    out["robust"], out["turns_on"] = robust, turns
    return out


def shares(stab: pd.DataFrame) -> pd.DataFrame:
    """Per model and question: the rows it applies to and the share of them that hold."""
    out = []
    for model, g in stab.groupby("model", sort=False):
        for q in (*QUESTIONS, "holds under all"):
            col = g[q]
            applies = col != "n/a"
            held = (col == "holds") | (col == "yes")
            out.append({"model": model, "question": q, "rows": int(applies.sum()),
                        "hold": int((held & applies).sum()),
                        "share": (float((held & applies).sum()) / int(applies.sum())
                                  if applies.any() else float("nan"))})
    return pd.DataFrame(out)

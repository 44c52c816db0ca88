"""The claims ledger's machinery: claims declared with their criterion before any number is
read, one rule applied alike to the model and to its random-weights control, family-wise
correction, and the verdict.

A :class:`Claim` carries its wording, the paper's value, the ``criterion`` and ``reference``
as fixed text, and a ``rule``: a function of a :class:`Tables` folder and ``which``
(``"model"`` or ``"control"``) that returns an :class:`Outcome`. The same rule is run on the
control's tables wherever the notebook saved them, so a rule that the random-weights model
also passes can never yield ``yes``.

Verdicts (:func:`verdict`):

- ``yes``: the effect is in the claimed direction and its test passes at ``ALPHA`` after Holm
  over the claims of the row's ``family`` (or, for interval rules, the interval lies inside
  the band), and the control does not pass the same rule;
- ``no``: the test does not pass (where the estimate points the claimed way, the note says
  so: "not shown" is not "reversed");
- ``mixed``: seeds disagree;
- ``untestable``: the data cannot decide (why in ``note``): fewer than ``MIN_SEEDS``
  fine-tuning seeds, a control that passes the same rule, a claim with no counterpart here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..analyses.significance import holm

ALPHA = 0.05
#: Fine-tuned models: a verdict needs at least this many fine-tuning seeds per task.
MIN_SEEDS = 3

COLUMNS = ["model", "notebook", "paper", "section", "claim", "paper_value", "this_run",
           "criterion", "reference", "reference_value", "test", "p_value", "p_adjusted",
           "family", "interval", "seeds", "verdict", "control_verdict", "heads", "note"]
VERDICTS = ("yes", "no", "mixed", "untestable")


class Tables:
    """One run folder's saved tables (``results/``, ``results/base/``): :meth:`read` a CSV,
    :meth:`params` a notebook's provenance parameters, and the model's shape."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._prov: dict[str, dict] = {}
        for prov in sorted(self.path.glob("[0-9][0-9]_provenance.json")):
            try:
                self._prov[prov.name[:2]] = json.loads(prov.read_text())
            except (OSError, json.JSONDecodeError) as err:
                raise ValueError(f"{prov} is unreadable ({err}); re-run notebook "
                                 f"{prov.name[:2]} to rewrite it") from None
        ident = next((p.get("models", {}).get("model", {}) for p in self._prov.values()
                      if p.get("models", {}).get("model")), {})
        self.model = ident.get("name")
        self.num_layers = ident.get("num_layers")
        self.num_heads = ident.get("num_heads")

    @property
    def notebooks(self) -> list[str]:
        """Prefixes of the notebooks whose provenance is in the folder (``["01", ...]``)."""
        return sorted(self._prov)

    def label(self) -> str:
        return f"{self.model} ({self.num_layers} x {self.num_heads})"

    def has(self, name: str) -> bool:
        return (self.path / name).is_file()

    def read(self, name: str) -> pd.DataFrame:
        """Table ``name``; a missing one raises with the notebook that writes it."""
        p = self.path / name
        if not p.is_file():
            raise FileNotFoundError(f"{p} is missing: run notebook {name[:2]} "
                                    f"(`python -m analysis_utils run --only {name[:2]}`)")
        return pd.read_csv(p)

    def params(self, prefix: str) -> dict:
        return self._prov.get(prefix, {}).get("parameters", {})


@dataclass
class Outcome:
    """What one rule found on one folder. ``effect``: the estimate points the claimed way;
    ``p``: the claim's p-value (already corrected for any selection inside the claim, e.g.
    the best of all heads), NaN for interval rules; ``passes``: for interval rules, whether the
    interval lies where the criterion wants it (None: decided by ``p``); ``untestable``: why
    the data cannot decide; ``per_seed``: each seed's pass/fail, for ``mixed``."""

    value: str
    effect: bool = False
    p: float = float("nan")
    passes: bool | None = None
    interval: str = ""
    heads: str = ""
    seeds: str = ""
    note: str = ""
    untestable: str = ""
    per_seed: list[bool] = field(default_factory=list)
    # Resampled tests (issue 33). A rule that fills ``check`` (one test) or ``per_task`` ({task:
    # [one Check per seed, or one pooled Check]}) leaves the verdict to :func:`evaluate`, which
    # judges each Check's interval at the family-corrected level (``ALPHA / m``) with
    # :func:`~.resample.judge_effect` / :func:`~.resample.judge_no_effect` and, for
    # ``per_task``, :func:`~.resample.judge_tasks` with ``scope``. ``effect``/``p``/``passes``
    # are then ignored.
    check: Check | None = None
    per_task: dict[str, list[Check]] = field(default_factory=dict)
    scope: str = ""  # "every" | "some": how per_task verdicts combine
    unit: str = ""  # what was resampled, e.g. "60 documents", "3 seeds x 277 dev examples"
    scale: float = 1.0  # the interval and MDE are shown as scale * value ...
    suffix: str = ""  # ... followed by this unit (" points", "%", " nats")
    digits: int = 1


@dataclass
class Check:
    """One resampled test of a claim, judged by :func:`evaluate` (not by the rule, which does
    not know the family's size). ``result``: a :class:`~.resample.Resampled` or
    :class:`~.resample.MaxOverHeads` (anything with ``interval_at(alpha)``, ``p_value``, ``se``,
    ``design_effect``); ``kind``: ``"effect"`` (judge_effect: ``null``, ``paper_effect`` on the
    statistic's scale, ``direction`` +1 above / -1 below, ``margin`` for claims with no size)
    or ``"no effect"`` (judge_no_effect: the band ``null +- margin``); ``head``: for a
    MaxOverHeads, judge head ``head``'s simultaneous interval instead of the best one's;
    ``untestable``: why this entry cannot be judged (the entry then reads ``untestable``)."""

    result: object = None
    kind: str = "effect"
    null: float = 0.0
    paper_effect: float | None = None
    direction: int = 1
    margin: float | None = None
    head: int | None = None
    untestable: str = ""


@dataclass(frozen=True)
class Claim:
    """One claim of a paper as a notebook checks it, with its criterion fixed in code."""

    notebook: str
    paper: str
    section: str
    claim: str
    paper_value: str
    criterion: str
    reference: str
    test: str
    rule: Callable[[Tables, str], Outcome | None]
    needs: tuple[str, ...]  # the model's tables; a claim whose tables are absent is left out
    family: str = ""  # Holm over the claims sharing it (per model); "" -> notebook's claims
    control: bool = True  # the rule also runs on the random-weights control's tables
    #: the claims registry entries (``analysis_utils/claims/registry.toml`` ids) the row tests;
    #: the ledger's ``quote`` column is their text
    registry: tuple[str, ...] = ()


def fmt_p(p: float) -> str:
    if p is None or not np.isfinite(p):
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _passes(o: Outcome, p_adj: float) -> bool:
    if o.passes is not None:
        return bool(o.passes) and o.effect
    return bool(o.effect) and np.isfinite(p_adj) and p_adj < ALPHA


def verdict(o: Outcome, p_adj: float, control: Outcome | None,
            control_p_adj: float = float("nan")) -> tuple[str, str]:
    """(verdict, note addition) for a model's outcome given its family-adjusted p and the
    control's outcome under the same rule."""
    if o.untestable:
        return "untestable", o.untestable
    if o.per_seed and len(set(o.per_seed)) > 1:
        return "mixed", f"{sum(o.per_seed)} of {len(o.per_seed)} seeds pass"
    ok = _passes(o, p_adj)
    if ok and control is not None and not control.untestable and _passes(control, control_p_adj):
        return "untestable", ("the random-weights control passes the same rule, so the rule "
                              "cannot tell trained attention from none")
    if not ok and o.passes is None and o.effect:
        return "no", (f"the estimate points the claimed way but its test does not reach "
                      f"{ALPHA} (p {fmt_p(p_adj)} after correction): not shown, rather than "
                      "reversed")
    return ("yes" if ok else "no"), ""


_UNREADABLE = "the saved tables cannot answer it"


def _apply(c: Claim, tables: Tables, which: str) -> Outcome | None:
    """``c.rule`` on ``which``; tables of an older run that lack a column or a recorded
    parameter give an ``untestable`` row that says so, never a crash or a wrong number."""
    try:
        return c.rule(tables, which)
    except (KeyError, ValueError) as err:
        what = err.args[0] if err.args else err
        return Outcome(value="\u2013", untestable=f"{_UNREADABLE} ({what}); re-run notebook "
                                                 f"{c.notebook}")


def evaluate(claims: list[Claim], tables: Tables, control: bool = True) -> pd.DataFrame:
    """The ledger rows of ``claims`` for one folder: each rule on the model's tables and, where
    the claim says so, on the control's; Holm within each family; verdicts."""
    rows, outs = [], []
    for c in claims:
        missing = [n for n in c.needs if not tables.has(n)]
        if missing or c.notebook not in tables.notebooks:
            continue
        o = _apply(c, tables, "model")
        if o is None:
            continue
        co = None
        if control and c.control and not o.untestable.startswith(_UNREADABLE):
            try:
                co = _apply(c, tables, "control")
            except FileNotFoundError:  # the notebook saved no control table here
                co = None
        outs.append((c, o, co))
    fam = [c.family or f"notebook {c.notebook} claims" for c, _, _ in outs]
    p_model = np.array([o.p for _, o, _ in outs], dtype=float)
    p_ctrl = np.array([co.p if co is not None else np.nan for _, _, co in outs], dtype=float)
    adj_model, adj_ctrl = np.full(len(outs), np.nan), np.full(len(outs), np.nan)
    for f in set(fam):
        idx = np.array([i for i, x in enumerate(fam) if x == f])
        adj_model[idx] = holm(p_model[idx])
        adj_ctrl[idx] = holm(p_ctrl[idx])
    for i, (c, o, co) in enumerate(outs):
        v, why = verdict(o, adj_model[i], co, adj_ctrl[i])
        cv = ""
        if co is not None:
            cv = "untestable" if co.untestable else ("yes" if _passes(co, adj_ctrl[i]) else "no")
        note = "; ".join(x for x in (o.note, why) if x)
        rows.append({
            "model": tables.label(), "notebook": c.notebook, "paper": c.paper,
            "section": c.section, "claim": c.claim, "paper_value": c.paper_value,
            "this_run": o.value, "criterion": c.criterion, "reference": c.reference,
            "reference_value": co.value if co is not None else "", "test": c.test,
            "p_value": fmt_p(o.p), "p_adjusted": fmt_p(adj_model[i]),
            "family": f"{fam[i]} (Holm)" if np.isfinite(o.p) else "",
            "interval": o.interval, "seeds": o.seeds, "verdict": v, "control_verdict": cv,
            "heads": o.heads, "note": note})
    return pd.DataFrame(rows, columns=COLUMNS)


def pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}%"


def span(lo: float, hi: float, scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    return f"[{scale * lo:.{digits}f}{unit}, {scale * hi:.{digits}f}{unit}]"


def heterogeneous_band(d: pd.DataFrame, label: str = "seed") -> tuple[list[str], list[bool]]:
    """Kovaleva's Heterogeneous-share claim per classifier seed of ``d`` (rows: ``seed``,
    ``task``, ``Heterogeneous`` share): each seed's range over the tasks as text
    (``"<label> 0: 12%-31%"``) and whether it lies within the published range widened by 5
    points on each side (:data:`~analysis_utils.papers.KOVALEVA_HETEROGENEOUS_RANGE`)."""
    from ..papers import KOVALEVA_HETEROGENEOUS_RANGE

    lo_band = KOVALEVA_HETEROGENEOUS_RANGE["low"][1] - 0.05
    hi_band = KOVALEVA_HETEROGENEOUS_RANGE["high"][1] + 0.05
    parts, inside = [], []
    for seed, g in d.groupby("seed"):
        a, b = g["Heterogeneous"].min(), g["Heterogeneous"].max()
        inside.append(bool(a >= lo_band and b <= hi_band))
        parts.append(f"{label} {seed}: {pct(a, 0)}-{pct(b, 0)}")
    return parts, inside

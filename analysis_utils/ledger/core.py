"""The claims ledger's machinery: claims declared with their criterion before any number is
read, one rule applied alike to the model and to its random-weights control, family-wise
correction, and the verdict.

A :class:`Claim` carries its wording, the paper's value, the ``criterion`` and ``reference``
as fixed text, the claims registry entries it tests (``registry``: the row's ``quote``), and a
``rule``: a function of a :class:`Tables` folder and ``which`` (``"model"`` or ``"control"``)
that returns an :class:`Outcome`. The same rule is run on the control's tables wherever the
notebook saved them; a ``yes`` that the random-weights model also earns keeps its verdict and
says so (``training_specific``).

A rule does not decide its verdict: it returns one :class:`Check` (``Outcome.check``: a
resampled test on the unit that was sampled) or, for claims about tasks, a list of Checks per
task (``Outcome.per_task``), and :func:`evaluate` judges them at the family-corrected level
``a = ALPHA / m`` (``m``: the tested rows of the row's Holm family, by default its notebook's
claims) with :mod:`.resample`'s rules. Verdicts (:data:`VERDICTS`):

- ``yes``: the interval lies on the claimed side of the null, beyond the smallest effect of
  interest where the criterion states one (the margin is applied before ``yes``). Holm's
  step-down is not a second way to ``yes``: it is one of the multiverse's routes (the
  interval at the row's Holm level, :func:`_holm_level`), which gives ``no`` on mirrored
  evidence as it gives ``yes`` (:mod:`.spec`). When the random-weights control earns the same ``yes`` under the same rule the row
  keeps its ``yes`` and its ``training_specific`` cell says "not specific to training";
- ``no``: the interval lies wholly on the other side of the null, or wholly short of the
  smallest effect of interest; for a "no effect" claim it lies beyond the margin, for a "no
  drop" claim below the margin's floor. BERT-base's effect decides ``no`` only where the
  claim's own words state a size on the same metric (``Check.sized``);
- ``inconclusive``: anything else: this test could not tell (the ``mde`` column says how
  large an effect it could have seen);
- ``mixed``: one task's fine-tuning seeds hold a conclusive ``yes`` and a conclusive ``no``
  (tasks that differ give ``no`` or ``yes`` by the claim's scope);
- ``untestable``: the data cannot decide (why in ``note``): fewer than ``MIN_SEEDS``
  fine-tuning seeds, a claim with no counterpart here.

Rules not yet moved to Checks (``effect``/``p``/``passes``/``per_seed``) are judged as before:
``yes`` when the effect points the claimed way and Holm's p (or the rule's interval) passes,
``mixed`` when ``per_seed`` disagrees, else ``no``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..analyses.significance import holm
from .words import bound_digits

ALPHA = 0.05
#: Fine-tuned models: a verdict needs at least this many fine-tuning seeds per task.
MIN_SEEDS = 3

COLUMNS = ["model", "notebook", "paper", "section", "claim", "quote", "paper_value",
           "this_run", "criterion", "reference", "reference_value", "test", "unit", "p_value",
           "p_adjusted", "family", "interval", "mde", "design_effect", "seeds", "per_task",
           "verdict", "control_verdict", "training_specific", "heads", "note", "about", "why",
           "specification", "specifications", "robust", "turns_on"]
#: The ``training_specific`` cell of a ``yes`` row whose random-weights control passes the
#: same rule: the verdict stands, and this says the rule also holds for attention no training
#: shaped.
NOT_SPECIFIC = "not specific to training: the random-weights control passes the same rule"
SPECIFIC = "specific to training: the random-weights control does not pass the same rule"
#: The five verdicts, in the ledger's order (:data:`.resample.VERDICTS5`).
VERDICTS = ("yes", "no", "inconclusive", "mixed", "untestable")


class _Folder(type(Path())):
    """A run folder's path that tells its :class:`Tables` which files a rule names in it
    (``t.path / "02_by_word_model.npz"``, ``t.path.glob("07_predictions_*.npz")``): the rules
    read their per-unit files (``.npz``) through the folder's path, not :meth:`Tables.read`,
    and cache what they load, so the names are recorded where the path is formed."""

    def _seen(self, name) -> None:
        tables = getattr(self, "_tables", None)
        if tables is not None:
            tables._touch(str(name))

    def __truediv__(self, key):
        self._seen(key)
        return Path(super().__truediv__(key))

    def glob(self, pattern, *args, **kwargs):
        for p in super().glob(pattern, *args, **kwargs):
            self._seen(p.name)
            yield Path(p)


class Tables:
    """One run folder's saved tables (``results/``, ``results/base/``): :meth:`read` a CSV,
    :meth:`params` a notebook's provenance parameters, and the model's shape. Inside
    :meth:`recording`, the names of the folder's files that a rule opens (:meth:`read`,
    :meth:`has` of a file that is there, ``path / name``, ``path.glob``) are collected: the
    evidence each ledger row rests on (``results/08_evidence.csv``)."""

    def __init__(self, path: str | Path):
        self.path = _Folder(path)
        self.path._tables = self
        self._reads: set[str] | None = None
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

    def _touch(self, name: str) -> None:
        """Record ``name`` (a file of this folder a rule named) while :meth:`recording`."""
        if self._reads is not None and "/" not in name and (Path(self.path) / name).is_file():
            self._reads.add(name)

    @contextlib.contextmanager
    def recording(self):
        """``with t.recording() as files:``: ``files`` collects the names of the folder's
        files read inside the block (nested blocks add theirs to the outer one)."""
        outer, self._reads = self._reads, set()
        try:
            yield self._reads
        finally:
            if outer is not None:
                outer |= self._reads
            self._reads = outer

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
    # are then ignored, and evaluate() writes the ``interval`` (at ``1 - a``, its level named),
    # ``mde``, ``design_effect`` and ``per_task`` cells from the results, in ``scale`` x the
    # statistic with ``digits`` decimals (more where a width would show < 2 significant digits)
    # and ``suffix`` ("%" after each number, " points" once after the interval).
    check: Check | None = None
    per_task: dict[str, list[Check]] = field(default_factory=dict)
    scope: str = ""  # "every" | "some": how per_task verdicts combine
    unit: str = ""  # what was resampled, e.g. "60 documents", "3 seeds x 277 dev examples"
    scale: float = 1.0  # the interval and MDE are shown as scale * value ...
    suffix: str = ""  # ... followed by this unit (" points", "%", " nats")
    digits: int = 1
    # the unit a claim figure's axis names where the numbers carry none in prose ("attention
    # weight", "Spearman rho"); a spaced ``suffix`` names the axis otherwise
    axis: str = ""


@dataclass
class Check:
    """One resampled test of a claim, judged by :func:`evaluate` (not by the rule, which does
    not know the family's size). ``result``: a :class:`~.resample.Resampled` or
    :class:`~.resample.MaxOverHeads` (anything with ``interval_at(alpha)``, ``p_value``, ``se``,
    ``design_effect``); ``kind``: ``"effect"`` (judge_effect: ``null``, ``paper_effect`` on the
    statistic's scale, ``direction`` +1 above / -1 below, ``margin`` for claims with no size),
    ``"no effect"`` (judge_no_effect: the band ``null +- margin``) or ``"no drop"``
    (judge_no_drop: above ``null - margin``, one-sided; with ``direction=-1`` no rise: below
    ``null + margin``); ``head``: for a MaxOverHeads, judge head ``head``'s simultaneous interval (and its own max-T p-value)
    instead of the best one's;
    ``untestable``: why this entry cannot be judged (the entry then reads ``untestable``)."""

    result: object = None
    kind: str = "effect"
    null: float = 0.0
    paper_effect: float | None = None
    direction: int = 1
    margin: float | None = None
    head: int | None = None
    untestable: str = ""
    #: the claim's own words state a size on this metric and baseline, so ``paper_effect``
    #: outside the interval reads ``no``; otherwise BERT-base's effect is shown, never decisive
    sized: bool = False
    #: the quantity's own level on the statistic's scale (e.g. the mean share that a
    #: difference of shares is a difference of), stated by the rule from its data: the
    #: multiverse's ``scaled`` margin is :data:`.spec.SCALED_FRACTION` of it (None: no such
    #: specification for this row)
    level: float | None = None
    #: other margins a source grounds (each a :class:`.spec.Margin` with its ``name``), judged
    #: as alternative specifications beside ``margin``
    alt_margins: tuple = ()
    #: the claim's own word of size that ``margin`` reads ("substantially"): the margin is
    #: then part of the claim, not a smallest effect of interest chosen beside it, so "no
    #: margin" is not one of its specifications (it would test another claim)
    states_size: str = ""

    def __post_init__(self):
        if self.kind not in CHECK_KINDS:
            raise TypeError(f"Check.kind must be one of {CHECK_KINDS}, got {self.kind!r}")
        if self.direction not in (1, -1):
            raise TypeError(f"Check.direction must be +1 or -1, got {self.direction!r}")
        if self.kind in ("no effect", "no drop") and not self.untestable and not (
                self.margin is not None and self.margin > 0):
            raise TypeError(f"a {self.kind!r} Check needs margin > 0: the band null +- margin "
                            "(or the floor null - margin) that the claim calls no effect")


#: What a :class:`Check` can claim: an effect (``judge_effect``), none (``judge_no_effect``)
#: or no drop, a gain of any size allowed (``judge_no_drop``).
CHECK_KINDS = ("effect", "no effect", "no drop")


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
    #: what the claim is about: ``"attention"`` (what trained attention does) or ``"data"`` (a
    #: check of the data or the pipeline, which says nothing about attention); the headline
    #: counts keep them apart
    about: str = "attention"
    #: words the claim uses that the paper leaves undefined, a key of
    #: :data:`.readings.READINGS` (``"earlier/later"``, ``"last two"``, ``"FrameNet heads"``):
    #: the rule is run again under each reading
    reading: str = ""

    def __post_init__(self):
        from .readings import READINGS

        if self.about not in ("attention", "data"):
            raise TypeError(f"Claim.about is 'attention' or 'data', got {self.about!r}")
        for key in (self.reading.split("+") if self.reading else ()):
            if key not in READINGS:
                raise TypeError(f"Claim.reading must be keys of {sorted(READINGS)} joined by "
                                f"'+', got {self.reading!r}")


def fmt_p(p: float) -> str:
    if p is None or not np.isfinite(p):
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _passes(o: Outcome, p_adj: float) -> bool:
    if o.passes is not None:
        return bool(o.passes) and o.effect
    return bool(o.effect) and np.isfinite(p_adj) and p_adj < ALPHA


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


# --- judging resampled Checks --------------------------------------------------------------


def _is_new(o: Outcome) -> bool:
    """The rule left its verdict to :func:`evaluate` (a Check, or Checks per task)."""
    return o.check is not None or bool(o.per_task)


def _tested(o: Outcome | None) -> bool:
    """The row counts in its family's ``m``: it has a Check, Checks per task or a p-value."""
    if o is None:
        return False
    if not _is_new(o):  # an old-style rule: as before, a row with a p-value
        return bool(np.isfinite(o.p))
    if o.untestable:
        return False
    if o.check is not None:
        return not o.check.untestable
    return True


def _head_p(r, k: int) -> float:
    """Head ``k``'s max-T p-value from a :class:`~.resample.MaxOverHeads` (single step: its
    own studentised margin against the resampled maximum), for a Check that judges a head other
    than the best."""
    se = float(r.ses[k])
    if not se > 0:
        return float("nan")
    t = float(r.margins[k]) / se
    t = {"two-sided": abs(t), "greater": t, "less": -t}[r.alternative]
    draws = np.asarray(r.max_draws, dtype=float)
    return float(min(1.0, (1 + np.sum(draws >= t)) / (len(draws) + 1)))


def _check_p(ch: Check) -> float:
    """The p-value Holm corrects for a Check's row (NaN when it has none)."""
    if ch.untestable or ch.result is None:
        return float("nan")
    if ch.head is not None and hasattr(ch.result, "max_draws"):
        return _head_p(ch.result, ch.head)
    return float(getattr(ch.result, "p_value", float("nan")))


def _interval(ch: Check, alpha: float) -> tuple[float, float]:
    r = ch.result
    lo, hi = r.head_interval(ch.head, alpha) if ch.head is not None else r.interval_at(alpha)
    return float(lo), float(hi)


def _mde(ch: Check, alpha: float) -> float:
    """The smallest effect the Check's test finds with 80% power at ``alpha`` (NaN when its
    result has no standard error): :meth:`Resampled.mde`; for the best of K heads the max-T
    critical value at ``1 - alpha`` in place of the normal one."""
    from .resample import Resampled, minimum_detectable_effect

    r = ch.result
    if r is None or ch.untestable:
        return float("nan")
    try:
        if isinstance(r, Resampled):
            return float(r.mde(alpha))
        se = float(r.ses[ch.head]) if ch.head is not None and hasattr(r, "ses") else \
            float(getattr(r, "se", float("nan")))
        if hasattr(r, "max_draws"):
            return minimum_detectable_effect(
                se, critical=float(np.quantile(np.asarray(r.max_draws, dtype=float),
                                               1 - alpha)))
        return minimum_detectable_effect(se, alpha=alpha,
                                         alternative=getattr(r, "alternative", "two-sided"))
    except (ValueError, TypeError, IndexError):
        return float("nan")


def _judge(ch: Check, a: float, p_adjusted: float | None):
    """A Check's :class:`~.resample.Judgement` at the family-corrected level ``a``: an effect
    claim from its ``1 - a`` interval (and Holm's ``p_adjusted`` for ``yes``, where the row has
    one); a no-effect or no-drop claim from its ``1 - 2a`` interval (TOST, or its lower end
    alone for no drop, for ``yes``) and its ``1 - a`` interval (for ``no``). An interval that cannot be judged (not finite: a one-sided test)
    gives ``untestable`` with the reason."""
    from .resample import Judgement, judge_effect, judge_no_drop, judge_no_effect

    if ch.untestable:
        return Judgement("untestable", ch.untestable)
    if ch.result is None:
        return Judgement("untestable", "the rule gave no resampled result to judge")
    if p_adjusted is not None and not np.isfinite(p_adjusted):
        p_adjusted = None
    try:
        if ch.kind == "effect":
            lo, hi = _interval(ch, a)
            j = judge_effect(lo, hi, null=ch.null, paper_effect=ch.paper_effect,
                             direction=ch.direction, margin=ch.margin,
                             p_adjusted=p_adjusted, alpha=ALPHA, sized=ch.sized)
            return _no_for_every_head(ch, a, j)
        inner = min(2 * a, 0.5)
        lo90, hi90 = _interval(ch, inner)
        alo, ahi = _interval(ch, a)
        if ch.kind == "no drop":
            return judge_no_drop(lo90, hi90, margin=ch.margin, null=ch.null, alpha_lo=alo,
                                 alpha_hi=ahi, inner_level=level(inner),
                                 direction=ch.direction)
        return judge_no_effect(lo90, hi90, margin=ch.margin, null=ch.null, alpha_lo=alo,
                               alpha_hi=ahi, inner_level=level(inner))
    except ValueError as err:
        return Judgement("untestable", f"the test's interval cannot be judged ({err}); call "
                                       "the test two-sided")


def _no_for_every_head(ch: Check, a: float, j):
    """A ``no`` about the best of many heads (a max-over-heads result judged on its best head)
    holds only if *no* head's simultaneous interval reaches the claimed side of the edge; where
    another head's does, the verdict is ``inconclusive``."""
    from .resample import Judgement

    r = ch.result
    if j.verdict != "no" or ch.head is not None or not hasattr(r, "max_draws") \
            or "paper's stated size" in j.reason:
        return j
    c = float(np.quantile(np.asarray(r.max_draws, dtype=float), 1 - a))
    m, s = np.asarray(r.margins, dtype=float), np.asarray(r.ses, dtype=float)
    edge = ch.null + ch.direction * float(ch.margin or 0.0)
    if ch.direction == 1:
        k = int(np.nanargmax(m + c * s))
        reach = float(m[k] + c * s[k])
        if reach < edge:
            return j
    else:
        k = int(np.nanargmin(m - c * s))
        reach = float(m[k] - c * s[k])
        if reach > edge:
            return j
    return Judgement("inconclusive", f"{j.reason}; but another head's simultaneous interval "
                                     f"reaches {reach:.4g}, past {edge:g}: no head is ruled "
                                     "out, so this test cannot tell")


def level(a: float) -> str:
    """The confidence level ``1 - a`` as a percentage with the digits it needs:
    ``0.05 -> "95%"``, ``0.05 / 6 -> "99.2%"``, ``0.05 / 5000 -> "99.999%"``."""
    x = 100 * (1 - a)
    d = 1
    while round(x, d) >= 100 and d < 6:
        d += 1
    return f"{x:.{d}f}".rstrip("0").rstrip(".") + "%"


def _digits(o: Outcome, size: float) -> int:
    """The Outcome's digits, or more where ``size`` (an interval's width, an MDE; in the
    statistic's units) would otherwise show fewer than two significant digits (a fraction
    shown with the default ``scale=1, digits=1``)."""
    v = abs(o.scale * size)
    if not (math.isfinite(v) and v > 0):
        return o.digits
    return max(o.digits, min(6, math.ceil(-math.log10(v)) + 1))


def _num(x: float, o: Outcome, digits: int, signed: bool = True) -> str:
    v = o.scale * x
    text = f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"
    return text + (o.suffix if o.suffix and not o.suffix.startswith(" ") else "")


def _span(lo: float, hi: float, o: Outcome) -> str:
    """``[+1.2, +3.4] points`` in the Outcome's scale, digits and suffix (``%`` after each
    number); ``""`` when not finite."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    d = _digits(o, hi - lo)
    tail = o.suffix if o.suffix.startswith(" ") else ""
    return (f"[{_num(lo, o, bound_digits(o.scale * lo, d))}, "
            f"{_num(hi, o, bound_digits(o.scale * hi, d))}]{tail}")


def _amount(x: float, o: Outcome) -> str:
    """An MDE in the Outcome's units (``2.3 points``); ``""`` when not finite."""
    if not math.isfinite(x):
        return ""
    return _num(x, o, _digits(o, x), signed=False) + (o.suffix if o.suffix.startswith(" ")
                                                      else "")


def _deff(r) -> str:
    d = getattr(r, "design_effect", float("nan"))
    try:
        d = float(d)
    except (TypeError, ValueError):
        return ""
    return f"{d:.2f}" if math.isfinite(d) else ""


@dataclass
class _Judged:
    """One outcome judged: the verdict and its reason, and the cells the judging fills."""

    verdict: str
    reason: str = ""
    interval: str | None = None  # None: keep the rule's own text
    mde: str = ""
    design_effect: str = ""
    per_task: str = ""
    #: the numbers that decided it (one Check): interval, level, null, margin, the paper's
    #: effect, in the statistic's units (:func:`_numbers`); per task: ``{task: [numbers]}``
    numbers: dict = field(default_factory=dict)
    tasks: dict = field(default_factory=dict)


def _per_task_text(per_task: dict[str, list[Check]], entries: dict[str, list[str]],
                   tasks: dict[str, str], seeded: bool = True) -> str:
    """``"STS-B yes; MRPC no; RTE mixed (yes, no, yes) (3 seeds)"``: each task's verdict, the
    seeds' own where they disagree, and how many entries each task has."""
    sizes = {t: len(v) for t, v in per_task.items()}
    same = len(set(sizes.values())) == 1
    parts = []
    for t, v in tasks.items():
        text = f"{t} {v}"
        if v == "mixed":
            text += f" ({', '.join(entries[t])})"
        if not same and sizes[t] > 1:
            text += f" ({sizes[t]} seeds)"
        parts.append(text)
    n = next(iter(sizes.values()))
    tail = (f" ({n} seeds)" if same and n > 1 else
            (" (seeds pooled)" if same and seeded else ""))
    return "; ".join(parts) + tail


def _numbers(ch: Check, a: float, verdict: str) -> dict:
    """What decided a single Check, in the statistic's units: its ``1 - a`` interval (``lo``,
    ``hi``), for a band its inner ``1 - 2a`` one too, the level, null, margin and its source,
    direction, kind and BERT-base's effect. Empty when the Check has no interval."""
    from .spec import margin_source

    if ch.untestable or ch.result is None:
        return {}
    try:
        lo, hi = _interval(ch, a)
    except ValueError:
        return {}
    out = {"verdict": verdict, "kind": ch.kind, "lo": lo, "hi": hi, "alpha": a,
           "level": level(a), "null": float(ch.null), "direction": int(ch.direction),
           "margin": float(ch.margin) if ch.margin is not None else None,
           "margin_source": margin_source(ch.margin),
           "paper_effect": (float(ch.paper_effect) if ch.paper_effect is not None else None),
           "sized": bool(ch.sized),
           "estimate": float(getattr(ch.result, "estimate", float("nan"))
                             if ch.head is None else ch.result.margins[ch.head])}
    if ch.kind != "effect":
        inner = min(2 * a, 0.5)
        try:
            out["inner_lo"], out["inner_hi"] = _interval(ch, inner)
            out["inner_level"] = level(inner)
        except ValueError:
            pass
        out["own_p"] = _own_p(ch)
    return out


def _own_p(ch: Check) -> float | None:
    """The p-value of a no-effect or no-drop claim's own test, from the resampled draws: TOST's
    (the larger of the two one-sided p-values against ``null -+ margin``) or the one-sided
    non-inferiority p against the guarded edge; None where the result keeps no draws (a
    max-over-heads result) or there is no margin."""
    from .resample import Resampled, _p_value

    r = ch.result
    if not isinstance(r, Resampled) or not len(r.draws) or not ch.margin:
        return None
    d = np.asarray(r.draws, dtype=float)
    d = d[np.isfinite(d)]
    if not len(d):
        return None
    m = float(ch.margin)

    def p(edge, alt):
        return _p_value(d, r.estimate, edge, alt, r.interval)

    if ch.kind == "no effect":
        return float(max(p(ch.null - m, "greater"), p(ch.null + m, "less")))
    return float(p(ch.null - m, "greater") if ch.direction == 1 else p(ch.null + m, "less"))


def _with_margin(o: Outcome, margin: str) -> Outcome:
    """The outcome with every Check under a margin choice (:func:`.spec.with_margin`)."""
    from .spec import with_margin

    if not margin or margin == "sourced":
        return o
    if o.check is not None:
        return dataclasses.replace(o, check=with_margin(o.check, margin))
    return dataclasses.replace(o, per_task={t: [with_margin(ch, margin) for ch in v]
                                            for t, v in o.per_task.items()})


def _judge_outcome(o: Outcome, a: float, p_adj: float, is_control: bool = False) -> _Judged:
    """A rule's outcome judged at the level ``a`` (the family-corrected ``0.05 / m``, or the
    row's Holm step-down level on the multiverse's Holm route), without the control gate.
    ``p_adj`` (Holm's adjusted p) serves only rules not yet moved to Checks: a Check's verdict
    comes from its interval at ``a`` alone, so the same route that can give ``yes`` gives
    ``no`` on mirrored evidence."""
    if o.untestable:
        return _Judged("untestable", o.untestable)
    if o.check is not None:
        ch = o.check
        j = _judge(ch, a, None)
        out = _Judged(j.verdict, j.reason, numbers=_numbers(ch, a, j.verdict))
        if out.numbers:
            out.numbers["reason"] = j.reason
        if ch.result is not None and not ch.untestable:
            try:
                lo, hi = _interval(ch, a)
                text = _span(lo, hi, o)
                out.interval = f"{text} ({level(a)})" if text else ""
            except ValueError:
                out.interval = ""
            out.mde = _amount(_mde(ch, a), o)
            out.design_effect = _deff(ch.result)
        return out
    if o.per_task:
        from .resample import judge_tasks

        if o.scope not in ("every", "some"):
            return _Judged("untestable", f"the rule gives per-task checks but no scope "
                                         f"('every' or 'some'), got {o.scope!r}")
        entries = {t: [_judge(ch, a, None).verdict for ch in checks]
                   for t, checks in o.per_task.items()}
        v, tasks, why = judge_tasks(entries, o.scope, MIN_SEEDS)
        numbers = {t: [_numbers(ch, a, e) for ch, e in zip(checks, entries[t], strict=True)]
                   for t, checks in o.per_task.items()}
        mdes = [_mde(ch, a) for checks in o.per_task.values() for ch in checks]
        mdes = [m for m in mdes if math.isfinite(m)]
        out = _Judged(v, why, per_task=_per_task_text(o.per_task, entries, tasks,
                                                      seeded=bool(o.seeds)),
                      mde=_amount(max(mdes), o) if mdes else "", tasks=numbers)
        pooled = {t: c[0] for t, c in o.per_task.items()
                  if len(c) == 1 and c[0].result is not None and not c[0].untestable}
        if pooled and len(pooled) == len(o.per_task):
            try:
                spans = [f"{t} {_span(*_interval(ch, a), o)}" for t, ch in pooled.items()]
                out.interval = "; ".join(spans) + f" ({level(a)})"
            except ValueError:
                pass
        return out
    # an old-style rule: effect / p / passes / per_seed (a control's seeds are not counted).
    # A seed that fails its test is not a conclusive no, so seeds that disagree, and an
    # estimate on the claimed side that its test does not carry, are inconclusive.
    if o.per_seed and len(set(o.per_seed)) > 1 and not is_control:
        return _Judged("inconclusive", f"{sum(o.per_seed)} of {len(o.per_seed)} seeds pass; "
                                       "a seed that fails its test is not a conclusive no")
    ok = _passes(o, p_adj)
    if not ok and o.passes is None and o.effect:
        return _Judged("inconclusive", f"the estimate points the claimed way but its test "
                                       f"does not reach {ALPHA} (p {fmt_p(p_adj)} after "
                                       "correction): not shown, and not reversed")
    return _Judged("yes" if ok else "no")


def _row_p(o: Outcome | None) -> float:
    """The p-value Holm corrects for a row: its Check's, or the old-style rule's ``p``; NaN
    for per-task rows, untestable rows and rules with an interval only."""
    if o is None:
        return float("nan")
    if not _is_new(o):
        return float(o.p)
    if o.untestable or o.per_task:
        return float("nan")
    return _check_p(o.check)


def _holm_counting_tested(p: np.ndarray, tested: np.ndarray) -> np.ndarray:
    """Holm over a family's p-values where every tested row counts in ``m``: a tested row
    without a p-value (Checks per task) enters as p = 1, which raises every other row's
    multiplier by one and is itself shown as blank."""
    q = np.where(tested & ~np.isfinite(p), 1.0, p)
    adj = holm(q)
    return np.where(np.isfinite(p), adj, np.nan)


def _holm_level(a: float, p: float, p_adj: float) -> float | None:
    """The row's level on Holm's route: ``ALPHA x p / p_adjusted``, the level at which its
    interval excludes the null exactly when Holm's adjusted p is below ``ALPHA`` (never below
    Bonferroni's ``a``, never above ``ALPHA``); None without both p-values."""
    if not (np.isfinite(p) and np.isfinite(p_adj)) or p_adj <= 0:
        return None
    return float(min(ALPHA, max(a, ALPHA * p / p_adj)))


def _route_choices(o: Outcome | None, p: float) -> tuple[str, ...]:
    """``("intervals", "holm")`` for a single Check with a p-value; ``("intervals",)`` for a
    row judged per task (no single p for Holm) or without a p; () for a rule not yet moved to
    Checks or an untestable row."""
    if o is None or not _is_new(o) or o.untestable:
        return ()
    if o.check is not None and (o.check.untestable or o.check.result is None):
        return ()
    return ("intervals", "holm") if o.check is not None and np.isfinite(p) else ("intervals",)


def _margin_choices(o: Outcome) -> tuple[str, ...]:
    """The margin choices every Check of the row admits (:func:`.spec.margin_choices`), in the
    first Check's order."""
    from .spec import margin_choices

    checks = [o.check] if o.check is not None else [c for v in o.per_task.values() for c in v]
    checks = [c for c in checks if not c.untestable and c.result is not None]
    if not checks:
        return ()
    common = [m for m in margin_choices(checks[0])
              if all(m in margin_choices(c) for c in checks[1:])]
    return tuple(common)


def _main_margin(o: Outcome | None) -> str:
    """The main specification's margin choice for a row ("" where it has no Check)."""
    if o is None or not _is_new(o) or o.untestable:
        return ""
    m = _margin_choices(o)
    return m[0] if m else ""


def _spec_text(c: Claim, o: Outcome | None, a: float, margins, routes, readings,
               same: tuple = ()) -> str:
    """The main specification in words, with the alternatives judged: generated from the
    Check's parameters, never written beside them. ``same``: the alternative readings that are
    the main one's evidence on this model (:func:`_same_evidence`), counted once."""
    from .spec import margin_source

    if o is None or not routes:
        return ""
    from .spec import with_margin

    checks = [o.check] if o.check is not None else [x for v in o.per_task.values() for x in v]
    base = next((x for x in checks if not x.untestable and x.result is not None), checks[0])
    ch = with_margin(base, margins[0]) if margins else base

    def margin_text(x: Check) -> str:
        if not x.margin and x.states_size:
            return f"no margin beside the bar ('{x.states_size}' is in the statistic)"
        if not x.margin:
            return "no margin"
        return f"a margin of {_plain(float(x.margin), o, signed=False)} ({margin_source(x.margin)})"

    def claim_text(x: Check) -> str:
        kind = {"effect": "an effect", "no effect": "no effect (a band)",
                "no drop": "no drop (one-sided)" if x.direction == 1 else
                "no rise (one-sided)"}[x.kind]
        return kind + (f", {'above' if x.direction == 1 else 'below'} the null "
                       f"{_plain(x.null, o)}" if x.kind == "effect" else "")

    # entries of a per-task row that claim different things (the parts of a two-part claim:
    # one below 0, one above 13 points) are each stated, not the first alone (referees, issue
    # 52); entries that claim the same thing (tasks under one rule) are stated once
    firsts = {name: next((x for x in v if not x.untestable and x.result is not None), v[0])
              for name, v in o.per_task.items() if v} if o.check is None else {}
    stated = {name: claim_text(with_margin(x, margins[0]) if margins else x)
              for name, x in firsts.items()}
    if len(set(stated.values())) > 1:
        by_text: dict[str, list[str]] = {}
        for name, t in stated.items():
            by_text.setdefault(t, []).append(name)
        parts = ["claim: " + "; ".join(f"{t} ({', '.join(names)})"
                                       for t, names in by_text.items())]
    else:
        parts = [f"claim: {claim_text(ch)}"]
    parts.append(margin_text(ch))
    parts.append(f"intervals at {level(a)} (0.05 / m, Bonferroni within the family)")
    words = c.reading.replace("+", ", ")
    if readings:
        parts.append(f"{words}: {readings[0]}")
    alts = [margin_text(with_margin(base, m)) for m in margins[1:]]
    if "holm" in routes:
        alts.append("Holm's step-down level")
    alts += [f"{words}: {d}" + (" (on this model the same evidence as the main reading: "
                                "counted once)" if d in same else "")
             for d in readings[1:]]
    if alts:
        parts.append("also judged under: " + "; ".join(x for x in alts if x))
    if readings:
        from .readings import SOURCES

        parts.append("where the readings come from: " + "; ".join(
            f"{k}: {SOURCES[k]}" for k in c.reading.split("+")))
    return "; ".join(parts)


def _plain(x: float | None, o: Outcome, signed: bool = True) -> str:
    if x is None or not math.isfinite(x):
        return ""
    return _num(x, o, _digits(o, abs(x) / 10 if x else 0), signed=signed) + (
        o.suffix if o.suffix.startswith(" ") else "")


def _why(j: _Judged, o: Outcome) -> str:
    """The row's one sentence of why (:func:`.spec.why`), from the numbers that decided it."""
    from .spec import why

    if j.verdict == "untestable" or not _is_new(o):
        return f"{j.verdict}: {j.reason}" if j.reason else j.verdict
    if j.numbers:
        n = j.numbers
        use_inner = n["kind"] != "effect" and j.verdict == "yes" and "inner_lo" in n
        lo, hi = (n["inner_lo"], n["inner_hi"]) if use_inner else (n["lo"], n["hi"])
        lvl = n.get("inner_level", n["level"]) if use_inner else n["level"]
        return why(j.verdict, kind=n["kind"], lo=lo, hi=hi, level=lvl, null=n["null"],
                   margin=n["margin"], direction=n["direction"], paper_effect=n["paper_effect"],
                   sized=n["sized"], scale=o.scale, suffix=o.suffix, digits=o.digits,
                   reason=j.reason, own_p=n.get("own_p"))
    return f"{j.verdict}: {j.reason}" + (f" ({j.per_task})" if j.per_task else "")


def _same_evidence(a: Outcome, b: Outcome) -> bool:
    """Whether two readings' outcomes are the same evidence (the same test parameters, unit,
    heads, estimate and resampled draws; their words may differ): a reading that coincides
    with the main one on this model (behaviours the main reading already reads relative to the
    model) is one specification, not a second that agrees."""
    if (a.untestable or b.untestable or a.unit != b.unit or a.heads != b.heads
            or a.per_task or b.per_task):
        return False
    ca, cb = a.check, b.check
    if ca is None or cb is None or ca.result is None or cb.result is None:
        return False
    # every parameter of the test (null, direction, margin, the head judged, ...), and the
    # result itself: the same estimate and the same resampled draws (equal intervals at one
    # level are not enough: halves and thirds may agree there and part at the family's)
    if dataclasses.replace(ca, result=None) != dataclasses.replace(cb, result=None):
        return False
    ra, rb = ca.result, cb.result
    da, db = getattr(ra, "draws", None), getattr(rb, "draws", None)
    if da is None or db is None or len(da) == 0 or np.shape(da) != np.shape(db):
        return False
    return ra.estimate == rb.estimate and bool(np.array_equal(da, db, equal_nan=True))


def _multiverse(c: Claim, tables: Tables, o: Outcome, a: float, i: int, idx: np.ndarray,
                p_family: np.ndarray, tested: np.ndarray, main: _Judged) -> tuple[dict, list]:
    """The row judged under every specification (:mod:`.spec`): the margin choices, the routes
    and, for a claim whose words the paper leaves undefined, the rule run again under each
    reading. Returns the agreement cells and one record per specification."""
    import contextlib
    import itertools

    from .readings import READINGS, reading
    from .spec import Spec, agreement, specs

    p = _row_p(o)
    margins, routes = _margin_choices(o), _route_choices(o, p)
    keys = c.reading.split("+") if c.reading and routes else []
    combos = list(itertools.product(*(READINGS[k] for k in keys))) if keys else []
    readings = tuple(" / ".join(x) for x in combos)
    if not routes:
        return {"specification": "", "specifications": "", "robust": "", "turns_on": ""}, []
    outs = {readings[0] if readings else "": (o, p)}
    same = []
    for d, combo in zip(readings[1:], combos[1:], strict=True):
        with contextlib.ExitStack() as stack:
            for k, v in zip(keys, combo, strict=True):
                stack.enter_context(reading(k, v))
            od = _apply(c, tables, "model")
        if od is not None and _same_evidence(od, o):
            same.append(d)  # the main reading itself on this model: one specification, not two
            continue
        outs[d] = (od, _row_p(od)) if od is not None else (None, float("nan"))
    cells = {"specification": _spec_text(c, o, a, margins, routes, readings, tuple(same)),
             "specifications": "", "robust": "", "turns_on": ""}
    verdicts, records = {}, []
    every, first_margin = [], {}
    for d, (od, pd_) in outs.items():  # each reading's own margin choices, routes and units
        if od is None:
            continue
        if od.untestable:
            every += [(s, od, pd_) for s in specs(margins[:1], routes[:1], (d,) if d else ())]
            continue
        mc = _margin_choices(od)
        first_margin[d] = mc[0] if mc else ""
        every += [(s, od, pd_) for s in specs(mc, _route_choices(od, pd_), (d,) if d else ())]
    me = list(idx).index(i)
    holm_level: dict[str, float | None] = {}  # per reading: its p in the family, Holm once
    for s, od, pd_ in every:
        if s.route == "holm":
            if s.reading not in holm_level:
                q = p_family.copy()
                q[me] = pd_
                holm_level[s.reading] = _holm_level(a, pd_, _holm_counting_tested(q, tested)[me])
            a_s = holm_level[s.reading]
            if a_s is None:
                continue
        else:
            a_s = a
        if od.untestable:
            j = _Judged("untestable", od.untestable)
        else:
            j = _judge_outcome(_with_margin(od, s.margin), a_s, float("nan"))
        verdicts[s] = j.verdict
        rec = {"spec": s.label(), "margin_choice": s.margin, "route": s.route,
               "reading": s.reading, "verdict": j.verdict, "alpha": a_s,
               "main": s == Spec(margins[0] if margins else "", routes[0],
                                 readings[0] if readings else ""),
               "scale": od.scale, "suffix": od.suffix, "digits": od.digits, "axis": od.axis}
        if j.numbers:
            rec.update({k: v for k, v in j.numbers.items() if k != "verdict"})
        records.append(rec)
        if rec["main"] and j.tasks:
            for t, entries in j.tasks.items():
                for e, n in enumerate(entries):
                    if n:
                        records.append({**rec, **n, "task": t, "entry": e, "spec": s.label()})
    main_spec = next(s for s in verdicts if s == Spec(margins[0] if margins else "",
                                                       routes[0],
                                                       readings[0] if readings else ""))
    if verdicts[main_spec] != main.verdict:
        raise AssertionError(f"{c.claim}: the main specification gives {verdicts[main_spec]} "
                             f"but the row {main.verdict}")
    k, n, robust, text = agreement(main_spec, verdicts, c.reading.replace("+", ", "),
                                   first_margin)
    cells.update({"specifications": text, "robust": "yes" if robust else "no",
                  "turns_on": "; ".join(text.split("; turns on ")[1:])})
    return cells, records


def evaluate(claims: list[Claim], tables: Tables, control: bool = True,
             multiverse: bool = True) -> pd.DataFrame:
    """The ledger rows of ``claims`` for one folder: each rule on the model's tables and, where
    the claim says so, on the control's; within each family Holm over the rows' p-values and
    the level ``a = ALPHA / m`` (``m``: the family's tested rows) at which every Check's
    interval is judged; verdicts, the control gate, and the ``quote`` of each row from the
    claims registry; each row's one sentence of ``why`` and its main specification. With
    ``multiverse`` each tested row is also judged under every specification of :mod:`.spec`
    (``specifications``, ``robust``, ``turns_on``; the records in the ``multiverse`` column,
    JSON). The ``evidence`` column names the folder's files each row's rule read, on the
    model and the control and under every reading (:meth:`Tables.recording`; joined by
    :data:`EVIDENCE_SEP`), which the stage writes as ``08_evidence.csv``. Pure: nothing is
    written."""
    rows, outs, reads = [], [], []
    for c in claims:
        missing = [n for n in c.needs if not tables.has(n)]
        if missing or not _present(c.notebook, tables):
            continue
        with _recording(tables) as files:
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
        reads.append(files)
    fam = [c.family or f"notebook {c.notebook} claims" for c, _, _ in outs]
    p_model = np.array([_row_p(o) for _, o, _ in outs], dtype=float)
    p_ctrl = np.array([_row_p(co) for _, _, co in outs], dtype=float)
    t_model = np.array([_tested(o) for _, o, _ in outs], dtype=bool)
    t_ctrl = np.array([_tested(co) for _, _, co in outs], dtype=bool)
    adj_model, adj_ctrl = np.full(len(outs), np.nan), np.full(len(outs), np.nan)
    m_of = np.zeros(len(outs), dtype=int)
    members = {}
    for f in dict.fromkeys(fam):
        idx = np.array([i for i, x in enumerate(fam) if x == f])
        members[f] = idx
        adj_model[idx] = _holm_counting_tested(p_model[idx], t_model[idx])
        adj_ctrl[idx] = _holm_counting_tested(p_ctrl[idx], t_ctrl[idx])
        m_of[idx] = max(int(t_model[idx].sum()), 1)
    quotes = _quotes()
    for i, (c, o, co) in enumerate(outs):
        a = ALPHA / m_of[i]
        mm = _main_margin(o)
        j = _judge_outcome(_with_margin(o, mm), a, adj_model[i])
        cj = (_judge_outcome(_with_margin(co, mm if mm in _margin_choices(co) else ""), a,
                             adj_ctrl[i], True) if co is not None else None)
        v, why = j.verdict, j.reason
        specific = ""
        if v == "yes" and cj is not None and cj.verdict != "untestable":
            specific = NOT_SPECIFIC if cj.verdict == "yes" else SPECIFIC
        note = "; ".join(x for x in (_subset_note(tables, c.notebook), o.note, why) if x)
        tested = _tested(o)
        idx = members[fam[i]]
        if multiverse:
            with _recording(tables) as files:  # a reading may read other files
                cells, records = _multiverse(c, tables, o, a, i, idx, p_model[idx],
                                             t_model[idx], j)
            reads[i] |= files
        else:
            cells, records = {}, []
        rows.append({
            "model": tables.label(), "notebook": c.notebook, "paper": c.paper,
            "section": c.section, "claim": c.claim, "quote": _quote(c, quotes),
            "paper_value": c.paper_value, "this_run": o.value, "criterion": c.criterion,
            "reference": c.reference, "reference_value": co.value if co is not None else "",
            "test": c.test, "unit": o.unit, "p_value": fmt_p(p_model[i]),
            "p_adjusted": fmt_p(adj_model[i]),
            "family": (f"{fam[i]} (Holm, m = {m_of[i]})" if tested and _is_new(o)
                       else f"{fam[i]} (Holm)" if np.isfinite(p_model[i]) else ""),
            "interval": o.interval if j.interval is None else j.interval,
            "mde": j.mde, "design_effect": j.design_effect, "seeds": o.seeds,
            "per_task": j.per_task, "verdict": v,
            "control_verdict": cj.verdict if cj is not None else "",
            "training_specific": specific, "heads": o.heads,
            "note": note, "about": c.about, "why": _why(j, o),
            "specification": cells.get("specification", ""),
            "specifications": cells.get("specifications", ""),
            "robust": cells.get("robust", ""), "turns_on": cells.get("turns_on", ""),
            "multiverse": json.dumps(records, default=_json_default) if records else "",
            "evidence": EVIDENCE_SEP.join(sorted(reads[i]))})
    return pd.DataFrame(rows, columns=[*COLUMNS, "multiverse", "evidence"])


#: Between the file names of a row's ``evidence`` cell.
EVIDENCE_SEP = "; "


def _recording(tables):
    """``tables.recording()``: the files a rule reads; an empty set for a stand-in folder
    (tests') that cannot record."""
    rec = getattr(tables, "recording", None)
    return rec() if rec is not None else contextlib.nullcontext(set())


#: Parameters that cut a notebook's data to a subset (0: the full set).
_SUBSET_PARAMS = {"max_train": "training sentences", "max_dev": "dev sentences",
                  "max_test": "test sentences", "max_sentences": "sentences",
                  "max_documents": "documents"}


def _subset_note(tables: Tables, notebook: str) -> str:
    """``"run note: notebook 04 here ran on subsets: 2,000 training sentences, ..."`` where the
    notebook's recorded parameters cut its data (every row of that notebook says so), else
    ``""``."""
    p = tables.params(notebook) if hasattr(tables, "params") else {}  # tests' stand-ins
    cut = [f"{int(p[k]):,} {what}" for k, what in _SUBSET_PARAMS.items()
           if isinstance(p.get(k), int | float) and p.get(k)]
    if not cut:
        return ""
    return (f"run note: notebook {notebook} here ran on subsets ({', '.join(cut)}), not the "
            "full sets the paper and the default profile use: its numbers, baselines included, "
            "are not comparable with theirs")


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON-able: {type(x)}")


#: The notebook of the ledger itself: registry claims no notebook measures are its rows.
LEDGER_NOTEBOOK = "08"


def _present(notebook: str, tables: Tables) -> bool:
    """Whether a claim of ``notebook`` has a row in this folder: the notebook's provenance is
    there; claims of the ledger's own notebook (08, registry entries no notebook measures)
    appear in every folder that holds a run, since the ledger is built before 08 writes its
    provenance and 08 covers every model."""
    if notebook == LEDGER_NOTEBOOK:
        return bool(tables.notebooks)
    return notebook in tables.notebooks


def _quotes() -> dict[str, str]:
    from .. import claims as registry

    return registry.quotes()


def _quote(c: Claim, quotes: dict[str, str]) -> str:
    """The paper's words the row tests: its registry entries' quotes, ``" | "`` between
    several; an id the registry lacks is named so, never dropped silently."""
    return " | ".join(quotes.get(i, f"(no registry entry {i!r})") for i in c.registry)


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``12th``, ``13th``, ``22nd``, ``73rd``.

    >>> [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 73, 111)]
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '22nd', '73rd', '111th']
    """
    from .words import ordinal as in_words

    return in_words(n, spelled=False)


def pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}%"


def span(lo: float, hi: float, scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    return f"[{scale * lo:.{digits}f}{unit}, {scale * hi:.{digits}f}{unit}]"


#: Kovaleva's Heterogeneous share (Section 4.1, "32-61%") is matched within the published range
#: widened by this much on each side (5 points): the classifier's own error, a convention.
HETEROGENEOUS_WIDENING = 0.05


def heterogeneous_limits() -> tuple[float, float]:
    """The band a Heterogeneous share must fall in: the published range
    (:data:`~analysis_utils.papers.KOVALEVA_HETEROGENEOUS_RANGE`) widened by
    :data:`HETEROGENEOUS_WIDENING` on each side."""
    from ..papers import KOVALEVA_HETEROGENEOUS_RANGE

    return (KOVALEVA_HETEROGENEOUS_RANGE["low"][1] - HETEROGENEOUS_WIDENING,
            KOVALEVA_HETEROGENEOUS_RANGE["high"][1] + HETEROGENEOUS_WIDENING)


def heterogeneous_band_words() -> str:
    """:func:`heterogeneous_limits` as the criteria write it: ``"27-66%"``."""
    from .words import points  # refuses to round the band into other numbers

    lo, hi = heterogeneous_limits()
    return f"{points(lo)}-{points(hi)}%"


def heterogeneous_band(d: pd.DataFrame, label: str = "seed") -> tuple[list[str], list[bool]]:
    """Kovaleva's Heterogeneous-share claim per classifier seed of ``d`` (rows: ``seed``,
    ``task``, ``Heterogeneous`` share): each seed's range over the tasks as text
    (``"<label> 0: 12%-31%"``) and whether it lies within the published range widened by
    :data:`HETEROGENEOUS_WIDENING` on each side (:func:`heterogeneous_limits`)."""
    lo_band, hi_band = heterogeneous_limits()
    parts, inside = [], []
    for seed, g in d.groupby("seed"):
        a, b = g["Heterogeneous"].min(), g["Heterogeneous"].max()
        inside.append(bool(a >= lo_band and b <= hi_band))
        parts.append(f"{label} {seed}: {pct(a, 0)}-{pct(b, 0)}")
    return parts, inside

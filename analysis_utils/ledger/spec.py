"""Each claim's test as parameters, and every verdict judged across the defensible ways to test
it (issue 52: a multiverse, Steegen et al. 2016; a specification curve, Simonsohn, Simmons and
Nelson 2020).

A rule (:mod:`.clark`, :mod:`.kovaleva`) computes its resampled result once and hands the
ledger core a :class:`~.core.Check`: the statistic's interval at any level, the null, the
direction, and the smallest effect of interest (``margin``). Wherever the paper leaves a choice
open, this module names the alternatives and :func:`judge_all` judges the same evidence under
each combination:

- **margin** (:data:`MARGIN_CHOICES`): ``none`` (a claim of direction: any effect on the claimed
  side), ``sourced`` (the rule's own :class:`Margin`, with its source: a number the paper
  states, or a convention of this compendium written once and named) and ``scaled`` (a stated
  fraction, :data:`SCALED_FRACTION`, of the quantity's own level, ``Check.level``, which the
  rule states from the data it was given). A claim of no effect or no drop needs a band, so
  ``none`` is not one of its choices; a claim against a threshold the paper states ("over
  50%") has no margin to choose;
- **route** (:data:`ROUTE_CHOICES`): ``intervals`` (each row's two-sided interval at the
  family's Bonferroni level ``a = 0.05 / m``, the ledger's main route) or ``holm`` (the interval
  at Holm's step-down level for that row, ``0.05 x p / p_adjusted``: it excludes the null
  exactly when Holm's adjusted p is below 0.05, so Holm can give ``no`` on reversed evidence as
  it gives ``yes``);
- **reading** (:data:`READINGS`, :mod:`.readings`): words the paper leaves undefined, each
  reading named with its source: earlier and later layers as the halves or the thirds of the
  depth; "the last two layers" as this model's last two or BERT-base's 11-12 at relative
  depth; the FrameNet heads that "stand out" as the best of all heads or notebook 06's own
  standouts. The rule is run again under each.

The row's verdict is the main specification's (the first choice of each axis that applies);
the row says in how many of the ``n`` specifications the same verdict holds
(``specifications``), whether all agree (``robust``), and, where not, which single change of
choice turns it (``turns_on``). Its one-sentence ``why`` is generated from the numbers and
parameters that made the verdict (:func:`why`), never written by hand.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass

from . import readings as _readings
from .words import bound_digits

#: A claim of direction with a margin scaled to the quantity: the smallest effect of interest is
#: this fraction of the quantity's own level (``Check.level``). A convention of the compendium:
#: a tenth is the smallest change in a share or an entropy that the papers' figures would show
#: as a visible difference (their colour scales and bar charts resolve about a tenth of the
#: plotted range); named here once.
SCALED_FRACTION = 0.10
SCALED_SOURCE = (f"scaled: {SCALED_FRACTION:.0%} of the quantity's own level, a convention "
                 "(ledger.spec.SCALED_FRACTION)")

MARGIN_CHOICES = ("sourced", "none", "scaled")
#: A convention's margin above this fraction of the quantity's own level gives way to the
#: scaled margin as the main specification (:func:`margin_choices`).
LEVEL_CAP = 0.5
#: The routes, the main one first (:func:`.core._route_choices` offers Holm only with a p).
ROUTE_CHOICES = ("intervals", "holm")
#: The readings a rule can be run under, by the words the claim uses (the first of each is the
#: main reading): :data:`.readings.READINGS`.
READINGS = _readings.READINGS


class Margin(float):
    """A smallest effect of interest with its source: ``Margin(0.02, "convention", "why")``.
    A float everywhere it is used; ``kind`` is ``"paper"`` (a number the paper states),
    ``"convention"`` (a convention of this compendium, named where it is defined) or
    ``"scaled"`` (:data:`SCALED_FRACTION` of the quantity)."""

    kind: str
    source: str
    name: str

    def __new__(cls, value: float, kind: str, source: str, name: str = ""):
        if kind not in ("paper", "convention", "scaled"):
            raise ValueError(f"a Margin's kind is paper, convention or scaled, got {kind!r}")
        if not source:
            raise ValueError("a Margin needs its source: where the number comes from")
        m = super().__new__(cls, value)
        m.kind, m.source, m.name = kind, source, name
        return m

    def __reduce__(self):  # worker processes pickle Checks
        return (Margin, (float(self), self.kind, self.source, self.name))

    def __repr__(self) -> str:
        return f"Margin({float(self)!r}, {self.kind!r}, {self.source!r})"


def margin_source(margin) -> str:
    """Where a Check's margin comes from: its :class:`Margin`'s kind and source, or, for a
    plain number, that the rule set it without naming one (:func:`judge_all` refuses none; a
    test checks every rule names its margins)."""
    if margin is None:
        return ""
    if isinstance(margin, Margin):
        return f"{margin.kind}: {margin.source}" if not margin.source.startswith(
            margin.kind) else margin.source
    return "unnamed: set in the rule without a source"


@dataclass(frozen=True)
class Spec:
    """One specification: a choice on every axis that applies to the row ("" where none)."""

    margin: str = ""
    route: str = ""
    reading: str = ""

    def label(self) -> str:
        parts = []
        if self.margin.startswith("alt:"):
            parts.append(self.margin[len("alt:"):])
        elif self.margin:
            parts.append({"sourced": "the rule's margin", "none": "no margin",
                          "scaled": f"margin {SCALED_FRACTION:.0%} of the level"}[self.margin])
        if self.route:
            parts.append({"intervals": "Bonferroni intervals", "holm": "Holm"}[self.route])
        if self.reading:
            parts.append(self.reading)
        return ", ".join(parts)


def margin_choices(check) -> tuple[str, ...]:
    """The margin choices that apply to one Check: ``sourced`` where the rule set a margin,
    ``none`` for an effect claim (not for a band: a claim of no effect needs one; nor where
    the margin reads the claim's own word of size, ``Check.states_size``), ``scaled``
    where the rule states the quantity's level. An effect claim against a threshold with no
    margin and no level has one choice, ``none``."""
    out = []
    if check.margin is not None and check.margin > 0:
        out.append("sourced")
    out += [f"alt:{m.name or m.source}" for m in check.alt_margins]
    if check.kind == "effect" and (out or check.level is not None) and not (
            check.states_size and out):
        out.append("none")
    scaled = check.level is not None and math.isfinite(check.level) and check.level != 0
    if scaled:
        out.append("scaled")
    if not out:
        out.append("none" if check.kind == "effect" else "sourced")
    # A convention's margin larger than LEVEL_CAP of the quantity's own level cannot be the
    # smallest effect of interest for it (2 points on a share of 2.6%): the scaled margin is
    # the main specification there, the convention an alternative.
    if (scaled and out[0] == "sourced" and getattr(check.margin, "kind", "") == "convention"
            and float(check.margin) > LEVEL_CAP * abs(check.level)):
        out.remove("scaled")
        out.insert(0, "scaled")
    return tuple(dict.fromkeys(out))


def with_margin(check, choice: str):
    """The Check under a margin choice (a copy; the rule's own untouched)."""
    if choice == "sourced":
        return check
    if choice.startswith("alt:"):
        m = next(m for m in check.alt_margins if f"alt:{m.name or m.source}" == choice)
        return dataclasses.replace(check, margin=m)
    if choice == "none":
        return dataclasses.replace(check, margin=None)
    if choice == "scaled":
        return dataclasses.replace(check, margin=Margin(abs(SCALED_FRACTION * check.level),
                                                        "scaled", SCALED_SOURCE))
    raise ValueError(f"unknown margin choice {choice!r}; one of {MARGIN_CHOICES}")


def specs(margins: tuple[str, ...], routes: tuple[str, ...],
          readings: tuple[str, ...]) -> list[Spec]:
    """Every combination, the main one (each axis's first choice) first."""
    return [Spec(m, r, d) for d, m, r in itertools.product(readings or ("",), margins or ("",),
                                                           routes or ("",))]


_AXES = ("margin", "route", "reading")


def turns_on(main: Spec, verdicts: dict[Spec, str], words: str = "",
             reading_margin: dict[str, str] | None = None) -> list[str]:
    """The axes whose change alone, from the main specification, changes the verdict:
    ``["margin (no margin: yes)"]``; a reading is named by the claim's ``words``
    (``"earlier/later (thirds: yes)"``). Another reading is taken with its own main margin
    (``reading_margin``: reading -> its first margin choice), since a reading may bring its
    own smallest effect of interest."""
    base = verdicts[main]
    out = []
    rm = reading_margin or {}
    for axis in _AXES:
        for s, v in verdicts.items():
            others = [a for a in _AXES if a != axis]

            def same(a, s=s, axis=axis):
                if axis == "reading" and a == "margin":
                    return s.margin == rm.get(s.reading, main.margin)
                return getattr(s, a) == getattr(main, a)

            if (getattr(s, axis) != getattr(main, axis)
                    and all(same(a) for a in others) and v != base):
                name = words if axis == "reading" and words else axis
                out.append(f"{name} ({Spec(**{axis: getattr(s, axis)}).label()}: {v})")
    return out


def agreement(main: Spec, verdicts: dict[Spec, str], words: str = "",
              reading_margin: dict[str, str] | None = None) -> tuple[int, int, bool, str]:
    """``(k, n, robust, text)``: how many of the ``n`` specifications give the main one's
    verdict, whether all do, and the cell text (``"yes in 3 of 4; turns on margin (...)"``)."""
    base = verdicts[main]
    k, n = sum(v == base for v in verdicts.values()), len(verdicts)
    text = f"{base} in {k} of {n}"
    if k < n:
        others = sorted({v for v in verdicts.values() if v != base})
        text += " (" + ", ".join(f"{v} in {sum(x == v for x in verdicts.values())}"
                                 for v in others) + ")"
        t = turns_on(main, verdicts, words, reading_margin)
        if not t:  # no single change turns it: name the specifications that disagree
            t = [f"{s.label()} together ({v})" for s, v in verdicts.items() if v != base][:3]
        text += "; turns on " + "; ".join(t)
    return k, n, k == n, text


# --- the one sentence of why -------------------------------------------------------------


def _fmt(x: float, scale: float, digits: int, suffix: str, signed: bool = True) -> str:
    v = scale * x
    s = f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"
    if suffix and not suffix.startswith(" "):
        s += suffix
    return s


def _digits_for(width: float, scale: float, digits: int) -> int:
    v = abs(scale * width)
    if not (math.isfinite(v) and v > 0):
        return digits
    return max(digits, min(6, math.ceil(-math.log10(v)) + 1))


def why(verdict: str, *, kind: str = "effect", lo: float = math.nan, hi: float = math.nan,
        level: str = "", null: float = 0.0, margin: float | None = None, direction: int = 1,
        paper_effect: float | None = None, sized: bool = False, scale: float = 1.0,
        suffix: str = "", digits: int = 1, reason: str = "",
        own_p: float | None = None) -> str:
    """One sentence of why a single test gave its verdict, in the row's display units
    (``scale`` x the statistic, ``digits``, ``suffix``), from the numbers that decided it:

    >>> why("yes", lo=0.0125, hi=0.0193, level="99.7%", margin=0.005, scale=100,
    ...     suffix=" points")
    'yes: the 99.7% interval [+1.25, +1.93] points lies above the margin +0.50 points (the null +0.00 points plus the smallest effect of interest)'
    >>> why("inconclusive", lo=-0.004, hi=0.105, level="99.8%", scale=100, suffix=" points")
    'inconclusive: the 99.8% interval [-0.4, +10.5] points holds the null +0.0 points: this test cannot tell'

    A verdict the numbers do not explain (untestable; a per-task row) takes ``reason``. A claim of
    no effect or no drop adds its own test's p (``own_p``: TOST's, or the one-sided
    non-inferiority p), where known."""
    if verdict == "untestable" or not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{verdict}: {reason}" if reason else verdict
    text = _why(verdict, kind, lo, hi, level, null, margin, direction, paper_effect, sized,
                scale, suffix, digits, reason)
    if kind != "effect" and own_p is not None and math.isfinite(own_p):
        test = "the equivalence test (TOST)" if kind == "no effect" else \
            "the non-inferiority test"
        text += f"; {test}'s own p {'< 0.001' if own_p < 0.001 else f'{own_p:.3f}'}"
    return text


def _why(verdict, kind, lo, hi, level, null, margin, direction, paper_effect, sized, scale,
         suffix, digits, reason) -> str:
    d = _digits_for(hi - lo, scale, digits)
    tail = suffix if suffix.startswith(" ") else ""

    def n(x):
        return _fmt(x, scale, d, suffix) + tail

    span = (f"the {level} interval [{_fmt(lo, scale, bound_digits(scale * lo, d), suffix)}, "
            f"{_fmt(hi, scale, bound_digits(scale * hi, d), suffix)}]{tail}")
    m = float(margin) if margin else 0.0
    if kind == "no effect":
        band = f"the band {n(null - m)} to {n(null + m)}"
        if verdict == "yes":
            return f"yes: {span.replace(level, 'inner (TOST) ' + level if level else level)} " \
                   f"lies within {band}"
        if verdict == "no":
            return f"no: {span} lies outside {band}: an effect larger than the margin is shown"
        return f"inconclusive: {span} reaches beyond {band} without excluding it"
    if kind == "no drop":
        edge = null - direction * m
        what, side = ("drop", "above") if direction == 1 else ("rise", "below")
        other = "below" if side == "above" else "above"
        if verdict == "yes":
            return f"yes: {span} lies {side} {n(edge)}: no {what} beyond the margin"
        if verdict == "no":
            return f"no: {span} lies {other} {n(edge)}: a {what} beyond the margin is shown"
        return f"inconclusive: {span} reaches {other} {n(edge)} without excluding it"
    side = "above" if direction == 1 else "below"
    other = "below" if direction == 1 else "above"
    edge = null + direction * m
    target = (f"the margin {n(edge)} (the null {n(null)} "
              f"{'plus' if direction == 1 else 'minus'} the smallest effect of interest)"
              if m else f"the null {n(null)}")
    if verdict == "yes":
        return f"yes: {span} lies {side} {target}"
    if verdict == "no":
        if (direction == 1 and hi < null) or (direction == -1 and lo > null):
            return f"no: {span} lies {other} the null {n(null)}: on the other side from the claim"
        if m and ((direction == 1 and hi < edge) or (direction == -1 and lo > edge)):
            return (f"no: {span} lies short of {target}: any effect is smaller than the "
                    "smallest effect of interest")
        if sized and paper_effect is not None:
            return f"no: the paper's stated size {n(paper_effect)} lies outside {span}"
        return f"no: {span}" + (f" ({reason})" if reason else "")
    if not (lo <= null <= hi or lo <= edge <= hi) and reason:
        return f"inconclusive: {span}; {reason.split('; but ')[-1]}"
    held = "holds the null " + n(null) if lo <= null <= hi else f"reaches {target}"
    if m and lo <= null <= hi:
        held = f"holds both the null {n(null)} and the margin {n(edge)}"
    return f"inconclusive: {span} {held}: this test cannot tell"

"""The figure on a claim page that draws the rule a verdict was judged by (issue 53, item 2),
from the claims ledger's ``results/08_multiverse.csv`` (the main specification's records):

- the interval, a bar (for a claim of no effect or no drop, the inner TOST interval that
  decides ``yes`` drawn dark inside the wider one that decides ``no``);
- the null, a dashed line labelled ``null <value>`` (also for claims of no effect);
- the rule's edge: for a claim of an effect with a margin, the margin edge
  ``null + direction x margin`` (a solid line); for a claim of no effect, the equivalence band
  ``null +- margin``; for a claim of no drop (or no rise), its one-sided floor (ceiling);
  shaded, the side where the interval must lie for ``yes``;
- the paper's effect (BERT-base's value), a diamond, where the record gives one.

The axis always holds all of these, never only the bar. A row judged per task (notebooks 02,
06 and 07) draws one line per task and, where seeds are judged apart, per seed. Numbers are
kept in the statistic's raw units and shown as ``scale x value`` with the record's
``suffix``. The caption (:func:`caption`) is generated from the same records: the level and
how it was corrected, the margin and its source, and whether BERT-base's value decides.

A row without records (a ledger written before the multiverse) falls back on the numbers
its note states (:func:`from_note`). Output is an inline SVG string (no plotting library,
no file: the book works offline and from ``file://``)."""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import paths, profiles


@dataclass(frozen=True)
class Line:
    """One interval of the figure (a row's, or one task's or one seed's), raw units."""
    lo: float
    hi: float
    null: float = 0.0
    kind: str = "effect"  # effect | no effect | no drop
    direction: int = 1
    margin: float | None = None
    paper: float | None = None
    estimate: float | None = None
    inner_lo: float | None = None
    inner_hi: float | None = None
    verdict: str = ""
    task: str = ""
    entry: str = ""  # the seed's index where seeds are judged apart, else ""

    def edge(self) -> float | None:
        """The rule's edge: the margin edge of an effect claim, the floor (ceiling) of a
        no-drop (no-rise) claim; None for a band or a claim with no margin."""
        if not self.margin:
            return None
        if self.kind == "effect":
            return self.null + self.direction * self.margin
        if self.kind == "no drop":
            return self.null - self.direction * self.margin
        return None

    def band(self) -> tuple[float, float] | None:
        if self.kind == "no effect" and self.margin:
            return self.null - self.margin, self.null + self.margin
        return None

    def values(self) -> list[float]:
        """Every value the axis must hold."""
        out = [self.lo, self.hi, self.null]
        out += [v for v in (self.inner_lo, self.inner_hi, self.edge(), self.paper)
                if v is not None]
        if self.band():
            out += list(self.band())
        return [v for v in out if math.isfinite(v)]


@dataclass(frozen=True)
class Rule:
    """A row's figure: its lines and what the caption says of them."""
    lines: tuple[Line, ...]
    level: str = ""
    inner_level: str = ""
    route: str = "intervals"
    margin_source: str = ""
    sized: bool = False
    scale: float = 1.0
    suffix: str = ""
    digits: int = 2
    family: str = ""
    from_note: bool = False
    #: the axis's unit where the numbers carry none (the ledger's ``axis``: "attention weight")
    axis_unit: str = ""

    @property
    def per_task(self) -> bool:
        return any(ln.task for ln in self.lines)

    @property
    def seeds(self) -> bool:
        return any(ln.entry for ln in self.lines) and len(
            {ln.entry for ln in self.lines}) > 1

    def axis(self) -> tuple[float, float]:
        """The axis in raw units: every line's values, padded by 8% either side."""
        vals = [v for ln in self.lines for v in ln.values()]
        lo, hi = min(vals), max(vals)
        span = hi - lo or abs(hi) or 1.0
        return lo - 0.08 * span, hi + 0.08 * span

    def show(self, v: float, signed: bool = False, digits: int | None = None,
             strip: bool = True) -> str:
        """``v`` (raw) in display units: ``scale x v``, the record's digits with trailing
        zeros dropped, ``%`` kept on the number (a spaced suffix names the axis instead)."""
        d = self.digits if digits is None else digits
        x = self.scale * v
        s = f"{x:+.{d}f}" if signed else f"{x:.{d}f}"
        if strip and "." in s:
            s = s.rstrip("0").rstrip(".")
        if s in ("-0", "+0"):
            s = "0"
        if self.suffix and not self.suffix.startswith(" "):
            s += self.suffix
        return s.replace("-", "\u2212")

    def interval(self, lo: float, hi: float) -> str:
        """``[a, b]`` in display units, with a spaced suffix after the bracket."""
        tail = self.suffix if self.suffix.startswith(" ") else ""
        return f"[{self.show(lo, True, strip=False)}, {self.show(hi, True, strip=False)}]{tail}"

    def unit(self) -> str:
        """The axis's unit in words (``points``, ``nats``, or the record's ``axis``: "attention
        weight"), or ``""`` (a ``%`` stays on the numbers)."""
        return self.suffix.strip() if self.suffix.startswith(" ") else self.axis_unit


# ---------------------------------------------------------------- records


def _float(v) -> float | None:
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def load(root: str | Path | None = None) -> pd.DataFrame:
    """Every model's multiverse records, ``results/08_multiverse.csv`` with a profile's own
    ``results/<sub>/08_multiverse.csv`` replacing that model's records; an empty frame where
    the ledger wrote none (its rows' figures fall back on their notes)."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    frames = []
    main = root / "results" / "08_multiverse.csv"
    df = (pd.read_csv(main, dtype=str, keep_default_na=False) if main.is_file()
          else pd.DataFrame(columns=["model", "id", "main"]))
    for sub in sorted(set(profiles.SUBFOLDER.values())):
        own = root / "results" / sub / "08_multiverse.csv"
        if own.is_file():
            extra = pd.read_csv(own, dtype=str, keep_default_na=False)
            df = df[~df["model"].isin(set(extra["model"]))]
            frames.append(extra)
    return pd.concat([df, *frames], ignore_index=True) if frames else df


def main_records(mv: pd.DataFrame, model: str, claim_id: str) -> list[dict]:
    """The main specification's records of one ledger row, in the ledger's order."""
    if mv.empty:
        return []
    sel = mv[(mv["model"] == model) & (mv["id"] == claim_id)
             & (mv["main"].astype(str).str.lower() == "true")]
    return sel.to_dict("records")


def rule(records: list[dict], family: str = "") -> Rule | None:
    """The figure of a row from its main-specification records (:func:`main_records`): one
    line per record with an interval (a per-task row's summary record, with none, is left
    out); None where no record has one."""
    lines, first = [], None
    for r in records:
        lo, hi = _float(r.get("lo")), _float(r.get("hi"))
        if lo is None or hi is None:
            continue
        first = first or r
        d = _float(r.get("direction")) or 1.0
        entry = str(r.get("entry") or "")
        lines.append(Line(
            lo=lo, hi=hi, null=_float(r.get("null")) or 0.0, kind=r.get("kind") or "effect",
            direction=1 if d > 0 else -1, margin=_float(r.get("margin")),
            paper=_float(r.get("paper_effect")), estimate=_float(r.get("estimate")),
            inner_lo=_float(r.get("inner_lo")), inner_hi=_float(r.get("inner_hi")),
            verdict=r.get("verdict") or "", task=str(r.get("task") or ""),
            entry=str(int(float(entry))) if _float(entry) is not None else ""))
    if not lines:
        return None
    # seeds judged apart: several entries of one task; a pooled task has one line
    tasks = [ln.task for ln in lines]
    if all(tasks.count(t) == 1 for t in tasks):
        lines = [Line(**{**ln.__dict__, "entry": ""}) for ln in lines]
    return Rule(tuple(lines), level=first.get("level") or "",
                inner_level=first.get("inner_level") or "", route=first.get("route") or "",
                margin_source=first.get("margin_source") or "",
                sized=str(first.get("sized")).lower() == "true",
                scale=_float(first.get("scale")) or 1.0, suffix=first.get("suffix") or "",
                digits=int(_float(first.get("digits")) or 2), family=family,
                axis_unit=str(first.get("axis") or ""))


def from_note(numbers: dict, scale: float = 1.0, unit: str = "") -> Rule:
    """The fallback figure of a row without records: the interval, null and paper's effect
    its note states (``claimpages.interval_numbers``, raw units)."""
    ln = Line(lo=numbers["lo"], hi=numbers["hi"],
              null=numbers["null"] if numbers.get("null") is not None else math.nan,
              paper=numbers.get("paper"))
    return Rule((ln,), scale=scale, suffix=unit, digits=3, from_note=True)


# ---------------------------------------------------------------- the figure

W = 640
GREEN, BLUE, ORANGE = "#1a6b2f", "#3b6fb6", "#c2571a"


def _ticks(lo: float, hi: float) -> list[float]:
    step = 10 ** math.floor(math.log10((hi - lo) / 4))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= 6:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _text(x: float, y: float, text: str, size: int = 11, anchor: str = "middle",
          fill: str = "currentColor", cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return (f'<text{c} x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'fill="{fill}">{html.escape(text)}</text>')


def _width(text: str, size: int = 11) -> float:
    return len(text) * size * 0.56 + 6


def _uniform(values: list[float | None]) -> float | None:
    """The one value every line shares, or None."""
    vs = {None if v is None or not math.isfinite(v) else round(v, 12) for v in values}
    return vs.pop() if len(vs) == 1 else None


def svg(r: Rule, label: str, width: int = W, cls: str = "") -> str:
    """The figure as an inline SVG (``class="interval rule <cls>"``), ``width`` wide in its
    viewBox (its text stays 11 units high: a narrow figure for a phone keeps it legible)."""
    W = width  # noqa: N806 - the figure's width, as the module's default names it
    lo, hi = r.axis()
    lines = r.lines
    multi = len(lines) > 1
    gutter = 0.0
    if multi:
        gutter = min(0.3 * W, max(_width(ln.task or "row", 11) for ln in lines) + 8)
        if r.seeds:
            gutter += 22
    L, R = gutter + 10, W - 14

    def x(v: float) -> float:
        return L + (v - lo) / (hi - lo) * (R - L)

    # labels of the marks every line shares, placed in up to three tiers above the lines
    labels: list[tuple[float, str, str, str]] = []  # x, text, colour, class
    null = _uniform([ln.null for ln in lines])
    if null is not None:
        labels.append((x(null), f"null {r.show(null)}", "currentColor", "null-label"))
    edge = _uniform([ln.edge() for ln in lines])
    kind = lines[0].kind
    signed = null == 0  # a difference reads +2 against 0; a level reads 52% against 50%
    if edge is not None:
        word = ("margin" if kind == "effect" else
                "floor" if lines[0].direction == 1 else "ceiling")
        labels.append((x(edge), f"{word} {r.show(edge, signed)}", GREEN, "edge-label"))
    band = [ln.band() for ln in lines]
    if band[0] and all(b == band[0] for b in band):
        labels.append((x(band[0][0]), f"band {r.show(band[0][0], signed)}", GREEN,
                       "band-label"))
        labels.append((x(band[0][1]), r.show(band[0][1], signed), GREEN, "band-label"))
    paper = _uniform([ln.paper for ln in lines])
    if paper is not None:
        labels.append((x(paper), f"paper {r.show(paper)}", ORANGE, "paper-label"))
    tiers: list[list[tuple[float, float]]] = []
    placed = []
    for lx, text, colour, lcls in labels:
        w = _width(text)
        cx = min(max(lx, w / 2), W - w / 2)
        t = next((i for i, spans in enumerate(tiers)
                  if all(cx + w / 2 < a or cx - w / 2 > b for a, b in spans)), len(tiers))
        if t == len(tiers):
            tiers.append([])
        tiers[t].append((cx - w / 2, cx + w / 2))
        placed.append((cx, t, text, colour, lcls))
    top = 8 + 14 * max(len(tiers), 1)
    pitch, bar = (13.0, 9.0) if multi else (24.0, 14.0)
    rows, y, prev = [], top + 4, None
    for ln in lines:
        if multi and prev is not None and ln.task != prev:
            y += 6
        rows.append(y)
        y += pitch
        prev = ln.task
    bottom = y + 2
    axis_y = bottom + 4
    height = axis_y + 36 + (14 if r.unit() else 0)
    names = f"interval rule {cls}".strip()
    parts = [f'<svg class="{names}" viewBox="0 0 {W} {height:.0f}" width="{W}" '
             f'height="{height:.0f}" role="img" aria-label="{html.escape(label)}" '
             f'data-axis-lo="{lo!r}" data-axis-hi="{hi!r}" '
             f'xmlns="http://www.w3.org/2000/svg">']
    # where the interval must lie for yes, shaded per line
    for ln, ry in zip(lines, rows, strict=True):
        y0, y1 = ry - (pitch - bar) / 2 - 1, ry + bar + (pitch - bar) / 2 + 1
        b, e = ln.band(), ln.edge()
        if b is not None:
            a0, a1 = x(b[0]), x(b[1])
        elif ln.kind == "no drop" and e is not None:
            a0, a1 = (x(e), R) if ln.direction == 1 else (L, x(e))
        elif ln.kind == "effect" and math.isfinite(ln.null):
            start = e if e is not None else ln.null
            a0, a1 = (x(start), R) if ln.direction == 1 else (L, x(start))
        else:
            continue
        parts.append(f'<rect class="yes-region" x="{a0:.1f}" y="{y0:.1f}" '
                     f'width="{max(a1 - a0, 0):.1f}" height="{y1 - y0:.1f}" fill="{GREEN}" '
                     f'fill-opacity="0.09"/>')
    # vertical marks: per line, so a mark that differs by task is drawn where it belongs
    for i, (ln, ry) in enumerate(zip(lines, rows, strict=True)):
        y0 = ry - (pitch - bar) / 2 - (3 if multi else 2)
        y1 = ry + bar + (pitch - bar) / 2 + (3 if multi else 2)
        if i == 0:
            y0 = top - 2
        if math.isfinite(ln.null):
            parts.append(f'<line class="null" data-value="{ln.null!r}" x1="{x(ln.null):.1f}" '
                         f'y1="{y0:.1f}" x2="{x(ln.null):.1f}" y2="{y1:.1f}" '
                         f'stroke="currentColor" stroke-dasharray="4 3" stroke-width="1.5">'
                         f'<title>null {r.show(ln.null)}</title></line>')
        e = ln.edge()
        if e is not None:
            word = ("margin edge" if ln.kind == "effect" else
                    "floor" if ln.direction == 1 else "ceiling")
            parts.append(f'<line class="edge" data-value="{e!r}" x1="{x(e):.1f}" '
                         f'y1="{y0:.1f}" x2="{x(e):.1f}" y2="{y1:.1f}" stroke="{GREEN}" '
                         f'stroke-width="2"><title>{word} {r.show(e, True)}</title></line>')
        b = ln.band()
        if b is not None:
            for v in b:
                parts.append(f'<line class="band-edge" data-value="{v!r}" x1="{x(v):.1f}" '
                             f'y1="{y0:.1f}" x2="{x(v):.1f}" y2="{y1:.1f}" stroke="{GREEN}" '
                             f'stroke-width="1.2"/>')
    # the intervals
    for i, (ln, ry) in enumerate(zip(lines, rows, strict=True)):
        name = " ".join(p for p in (ln.task, f"seed {int(ln.entry) + 1}" if ln.entry and
                                    r.seeds else "") if p)
        tip = (f"{name + ': ' if name else ''}{r.level + ' ' if r.level else ''}interval "
               f"{r.interval(ln.lo, ln.hi)}" + (f", {ln.verdict}" if ln.verdict else ""))
        inner = ln.inner_lo is not None and ln.inner_hi is not None
        parts.append(f'<rect class="bar" data-lo="{ln.lo!r}" data-hi="{ln.hi!r}" '
                     f'x="{x(ln.lo):.1f}" y="{ry:.1f}" width="{max(x(ln.hi) - x(ln.lo), 2):.1f}" '
                     f'height="{bar}" rx="2" fill="{BLUE}" '
                     f'fill-opacity="{0.35 if inner else 0.8}"><title>{html.escape(tip)}'
                     '</title></rect>')
        if inner:
            parts.append(f'<rect class="inner-bar" x="{x(ln.inner_lo):.1f}" y="{ry + 2:.1f}" '
                         f'width="{max(x(ln.inner_hi) - x(ln.inner_lo), 2):.1f}" '
                         f'height="{bar - 4}" rx="1.5" fill="{BLUE}" fill-opacity="0.95">'
                         f'<title>inner (TOST) {r.inner_level} interval '
                         f'{html.escape(r.interval(ln.inner_lo, ln.inner_hi))}</title></rect>')
        if ln.estimate is not None and lo <= ln.estimate <= hi:
            xe = x(ln.estimate)
            parts.append(f'<line class="estimate" x1="{xe:.1f}" y1="{ry - 1:.1f}" x2="{xe:.1f}" '
                         f'y2="{ry + bar + 1:.1f}" stroke="#1b2f4f" stroke-width="1.5"/>')
        if ln.paper is not None:
            xp, cy, s = x(ln.paper), ry + bar / 2, bar / 2 + 2
            parts.append(f'<path class="paper" data-value="{ln.paper!r}" '
                         f'd="M{xp:.1f} {cy - s:.1f} l{s * 0.7:.1f} {s:.1f} '
                         f'l{-s * 0.7:.1f} {s:.1f} l{-s * 0.7:.1f} {-s:.1f} z" '
                         f'fill="{ORANGE}" stroke="#fff" '
                         f'stroke-width="0.8"><title>paper (BERT-base) {r.show(ln.paper, True)}'
                         '</title></path>')
        if multi:
            first_of_task = i == 0 or lines[i - 1].task != ln.task
            if first_of_task:
                parts.append(_text(gutter - (22 if r.seeds else 0), ry + bar - 1,
                                   _clip(ln.task or "row", gutter), anchor="end"))
            if r.seeds and ln.entry:
                parts.append(_text(gutter + 4, ry + bar - 1, f"s{int(ln.entry) + 1}", size=9,
                                   anchor="end", fill="#777"))
    # labels of the shared marks
    for cx, t, text, colour, lcls in placed:
        parts.append(_text(cx, 18 + 14 * t, text, fill=colour, cls=lcls))
    # the axis
    parts.append(f'<line x1="{L}" y1="{axis_y:.1f}" x2="{R}" y2="{axis_y:.1f}" stroke="#888"/>')
    for t in _ticks(r.scale * lo, r.scale * hi):
        xt = x(t / r.scale)
        parts.append(f'<line x1="{xt:.1f}" y1="{axis_y:.1f}" x2="{xt:.1f}" y2="{axis_y + 4:.1f}" '
                     f'stroke="#888"/>' + _text(xt, axis_y + 16, _tick(t, r)))
    if r.unit():
        parts.append(_text((L + R) / 2, axis_y + 31, r.unit(), fill="#666"))
    parts.append("</svg>")
    return "".join(parts)


def _tick(t: float, r: Rule) -> str:
    s = f"{t:.6f}".rstrip("0").rstrip(".")
    if s in ("-0", ""):
        s = "0"
    if r.suffix and not r.suffix.startswith(" "):
        s += r.suffix
    return s.replace("-", "\u2212")


def _clip(text: str, width: float) -> str:
    n = max(int((width - 6) / (11 * 0.56)), 4)
    return text if len(text) <= n else text[:n - 1] + "\u2026"


# ---------------------------------------------------------------- the caption


def _level(r: Rule) -> str:
    """``99.7% interval, Bonferroni within the family (notebook 01 claims, m = 15)``."""
    if r.from_note:
        return "interval the ledger's note states"
    fam = re.sub(r" \((?:Holm, )?(m = \d+)\)", r", \1", r.family) if r.family else ""
    within = f"within the family ({fam})" if fam else "within the family"
    how = ("Holm's step-down level " if r.route == "holm" else "Bonferroni ") + within
    return f"{r.level} interval, {how}" if r.level else f"interval, {how}"


def caption(r: Rule) -> str:
    """The figure's caption in plain text, generated from the same records."""
    ln = r.lines[0]
    out = []
    what = ("One line per task" + (" and seed" if r.seeds else "")) + ". " if r.per_task \
        else ""
    inner = ln.inner_lo is not None and ln.inner_hi is not None
    if inner:
        out.append(f"{what}The pale bar is the {_level(r)}, which must lie beyond the rule's "
                   f"edge for no; the dark bar inside it the inner (TOST) {r.inner_level} "
                   "interval, which must lie within it for yes")
    else:
        out.append(f"{what}The bar is the {_level(r)}; the tick in it the estimate"
                   if any(x.estimate is not None for x in r.lines) else
                   f"{what}The bar is the {_level(r)}")
    nulls = {x.null for x in r.lines if math.isfinite(x.null)}
    if len(nulls) == 1:
        out.append(f"the dashed line is the null {r.show(next(iter(nulls)))}")
    elif nulls:
        out.append("the dashed line is each line's null")
    margins = sorted({x.margin for x in r.lines if x.margin})
    m = ", ".join(r.show(v) for v in margins)
    src = f" (source: {r.margin_source})" if r.margin_source else ""
    if ln.kind == "no effect" and margins:
        out.append(f"the shaded band is the equivalence band, the null \u00b1 the margin {m}{src}")
    elif ln.kind == "no drop" and margins:
        word = "floor, the null minus" if ln.direction == 1 else "ceiling, the null plus"
        out.append(f"the green line is the {word} the margin {m}{src}; the shaded side is "
                   "where the inner interval must lie for yes")
    elif margins:
        out.append(f"the green line is the margin edge, the null "
                   f"{'plus' if ln.direction == 1 else 'minus'} the smallest effect of "
                   f"interest {m}{src}; the shaded side is where the interval must lie for yes")
    elif ln.kind == "effect" and not r.from_note:
        out.append("no margin: the shaded side of the null is where the interval must lie "
                   "for yes")
    if any(x.paper is not None for x in r.lines):
        each = " per task" if r.per_task and _uniform([x.paper for x in r.lines]) is None else ""
        decisive = ("decisive here, since the claim's own words state its size" if r.sized
                    else "shown for comparison, not decisive (the claim states no size on "
                    "this metric)")
        out.append(f"the diamond is the paper's effect (BERT-base's value{each}), {decisive}")
    text = "; ".join(out) + "."
    if r.unit() and r.scale != 1:
        text += f" Units: {r.unit()} ({r.scale:g} \u00d7 the statistic)."
    elif r.unit():
        text += f" Units: {r.unit()}."
    return text[:1].upper() + text[1:]

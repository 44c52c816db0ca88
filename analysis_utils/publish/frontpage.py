"""The book's front page and walkthrough, filled from the claims ledger at build time
(:func:`analysis_utils.publish.book.stage` calls :func:`fill`), so that no verdict, count or
seed number they state can go stale (issue 53, item 5).

``book/index.md`` and ``book/walkthrough.md`` hold placeholders that the staged copies replace:

- ``<!-- frontpage:go -->`` (a line of its own, below the title): the link to the findings
  index, in the first screen on a phone;
- ``<!-- frontpage:findings -->`` (a line of its own): what was found, one line per paper and
  model (:func:`headline`, the counts of :func:`analysis_utils.ledger.headline_counts` on
  that paper's rows), then one line on the data checks and the rows the random-weights
  control passes too; the link to the findings index; the legend of the verdicts
  (:func:`legend_html`, its badges carry their meaning as a tooltip);
- ``{{fact NAME}}``: a number of the default profile's run (:func:`facts`: the fine-tuning
  seeds per task and the random-init fine-tunes, from ``results/06_provenance.json``);
- ``{{ledger ID MODEL FIELD}}``: the ledger's ``FIELD`` of claim ``ID`` (the ``id`` column,
  the claim page's name) for the model whose name contains ``MODEL``; a verdict is shown as
  its badge, any other field as text.

A placeholder that names a claim, model, field or fact the ledger does not hold raises
``ValueError``: the build fails rather than show a stale number.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd

#: What each verdict means, as the legend and every badge's tooltip say it (the rules are
#: written once in ``analysis_utils/ledger/resample.py``; the findings page says how).
MEANINGS = {
    "yes": "the claim holds here: the interval lies on the claimed side of the null (and "
           "beyond the smallest effect of interest where the claim states one)",
    "no": "the claim is refuted here: the interval lies wholly on the wrong side of the "
          "null or short of the effect the claim states (for a claim of no effect: beyond "
          "its margin)",
    "inconclusive": "this test cannot tell: the interval holds both the null and the "
                    "claimed effect",
    "mixed": "the fine-tuning seeds of one task disagree: a conclusive yes beside a "
             "conclusive no",
    "untestable": "the data here cannot decide (no counterpart, or too few fine-tuning "
                  "seeds); the claim's page says why",
}

#: The random-weights control, as the legend says it.
CONTROL_MEANING = ("The random-weights control runs the same rule on a model with random "
                   "weights. For a claim that holds, the control's no is the good outcome: "
                   "the effect needs the trained weights. A control's yes marks the claim "
                   "\u201cnot specific to training\u201d.")

MARKER = "<!-- frontpage:findings -->"
#: A line of its own right below the title: the link to the findings index, in the first
#: screen on a phone too, and to the lines of what was found.
GO = "<!-- frontpage:go -->"
_PLACEHOLDER = re.compile(r"\{\{\s*(fact|ledger)\s+([^{}]*?)\s*\}\}")
_VERDICT_FIELDS = ("verdict", "control_verdict")


def badge(verdict: str, control: bool = False) -> str:
    """A verdict's badge (``book.css``: ``.verdict-<v>``) with its meaning as a tooltip;
    ``control``: the random-weights control's verdict (its ``no`` is the good outcome)."""
    v = verdict or "not run"
    cls = html.escape(v) if v in MEANINGS else "none"
    tip = MEANINGS.get(v, "no row for this model")
    if control:
        tip = ("the random-weights control: " + {
            "no": "no, the good outcome for a claim that holds (the effect needs training)",
            "yes": "yes, so the claim is not specific to training"}.get(v, tip))
    return (f'<span class="verdict verdict-{cls}" title="{html.escape(tip)}">'
            f"{html.escape(v)}</span>")


def legend_html(anchor: str | None = "verdict-legend") -> str:
    """The verdicts' legend: each badge and its meaning, then the control's; one HTML block
    (no blank line), with ``id=anchor``."""
    ident = f' id="{anchor}"' if anchor else ""
    items = "".join(f"<dt>{badge(v)}</dt><dd>{html.escape(m)}</dd>"
                    for v, m in MEANINGS.items())
    return (f'<div class="verdict-legend"{ident}><p class="verdict-legend-title">'
            f"What the verdicts mean</p><dl>{items}</dl>"
            f'<p class="verdict-legend-control">{html.escape(CONTROL_MEANING)}</p></div>')


def model_name(label: str) -> str:
    """``"all-MiniLM-L6-v2 (6 x 12)"`` -> ``"all-MiniLM-L6-v2"``."""
    return label.split(" (")[0]


def paper_name(paper: str) -> str:
    """``"Clark et al. 2019"`` -> ``"Clark et al."``."""
    return re.sub(r"\s+\d{4}$", "", paper)


def headline_counts(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`analysis_utils.ledger.headline_counts` per paper: one row per paper, model
    and group, in the ledger's order."""
    from ..ledger import headline_counts as counts

    parts = []
    for paper in dict.fromkeys(df["paper"]):
        hc = counts(df[df["paper"] == paper])
        hc.insert(0, "paper", paper)
        parts.append(hc)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def headline(df: pd.DataFrame) -> list[str]:
    """The front page's lines, as HTML: one per paper and model, on the claims about trained
    attention (the verdicts that hold under every specification, the ones that turn on a
    choice, the untestable), then one on what is counted apart (data and pipeline checks,
    ``yes`` the random-weights control earns too)."""
    from ..ledger import GROUPS
    from ..ledger import headline_counts as counts

    out = []
    hc = headline_counts(df)
    for (paper, model), g in hc.groupby(["paper", "model"], sort=False):
        a = g[g["group"] == GROUPS[0]].iloc[0]
        bits = [f"{a['robust yes']} of {a['tested']} tested claims about trained attention "
                f"hold under every specification and draw ({badge('yes')})",
                f"{a['robust no']} are refuted under every specification and draw "
                f"({badge('no')})",
                f"{a['robust inconclusive']} stay {badge('inconclusive')}"]
        if a["fragile"]:
            bits.append(f"{a['fragile']} turn on a choice the paper leaves open or on a draw "
                        "(fragile)")
        if a["mixed"]:
            bits.append(f"{a['mixed']} are {badge('mixed')}")
        line = (f"<strong>{html.escape(paper_name(paper))} on "
                f"{html.escape(model_name(model))}</strong>: " + ", ".join(bits))
        if a["untestable"]:
            line += f"; {a['untestable']} more are {badge('untestable')} here"
        out.append(line + ".")
    apart = []
    for model, g in counts(df).groupby("model", sort=False):
        d = g[g["group"] == GROUPS[1]].iloc[0]
        c = g[g["group"] == GROUPS[2]].iloc[0]
        apart.append(f"on {html.escape(model_name(model))}, {d['rows']} data and pipeline "
                     f"checks ({d['robust yes']} yes, {d['robust no']} no) and {c['rows']} "
                     f"{badge('yes')} that the random-weights control earns too (not "
                     "specific to training)")
    if apart:
        out.append("Counted apart from these lines: " + "; ".join(apart) + ".")
    return out


def findings_block(df: pd.DataFrame) -> str:
    """What :data:`MARKER` becomes: the lines, the link to the findings index, the legend
    (one HTML block)."""
    lines = "".join(f"<li>{line}</li>" for line in headline(df))
    return ('<div class="front-findings">'
            '<p class="front-findings-go"><a class="front-findings-index" '
            'href="findings.html#verdict-legend">Open the findings index</a>: every claim '
            f"of both papers ({df['id'].nunique()}), its verdict for each model, each with "
            "a page of the test behind it.</p>"
            f'<ul class="front-headline">{lines}</ul>'
            f"{legend_html(anchor='front-legend')}</div>")


def facts(root: str | Path) -> dict[str, int]:
    """The run's numbers the front page states: ``finetune_seeds`` (fine-tuning seeds per
    task) and ``random_init`` (random-init fine-tunes per task), from the parameters
    notebook 06's provenance records (``results/06_provenance.json``)."""
    prov = Path(root) / "results" / "06_provenance.json"
    out: dict[str, int] = {}
    if prov.is_file():
        params = json.loads(prov.read_text()).get("parameters", {})
        if params.get("seeds") not in (None, ""):
            out["finetune_seeds"] = len([s for s in str(params["seeds"]).split(",")
                                         if s.strip()])
        if params.get("random_init") not in (None, ""):
            out["random_init"] = int(params["random_init"])
    return out


def _ledger_value(df: pd.DataFrame, spec: str) -> str:
    parts = spec.split()
    if len(parts) != 3:
        raise ValueError(f"{{{{ledger {spec}}}}}: want {{{{ledger ID MODEL FIELD}}}}")
    cid, model, field = parts
    rows = df[(df["id"] == cid) & df["model"].str.contains(model, regex=False)]
    if len(rows) != 1:
        raise ValueError(f"{{{{ledger {spec}}}}}: the ledger has {len(rows)} rows of claim "
                         f"{cid!r} for a model named like {model!r} (results/08_claims.csv)")
    if field not in rows.columns:
        raise ValueError(f"{{{{ledger {spec}}}}}: the ledger has no column {field!r}")
    value = str(rows.iloc[0][field])
    if field in _VERDICT_FIELDS:
        return badge(value, control=field == "control_verdict")
    return re.sub(r"([\\`*_\[\]<>|$])", r"\\\1", value)


def fill(text: str, df: pd.DataFrame, root: str | Path) -> str:
    """``text`` (a page of ``book/``) with :data:`MARKER` and every placeholder replaced
    (see the module's docstring); ``ValueError`` names one that cannot be filled."""
    known = facts(root)

    def one(m: re.Match) -> str:
        kind, spec = m.group(1), m.group(2)
        if kind == "fact":
            if spec not in known:
                raise ValueError(f"{{{{fact {spec}}}}}: no such fact of the run "
                                 f"(known: {sorted(known)}; results/06_provenance.json)")
            return str(known[spec])
        return _ledger_value(df, spec)

    text = _PLACEHOLDER.sub(one, text)
    if MARKER in text:
        text = text.replace(MARKER, findings_block(df))
    if GO in text:
        text = text.replace(GO, go_line(df))
    return text


def go_line(df: pd.DataFrame) -> str:
    """What :data:`GO` becomes: one line, the findings index and what was found."""
    return ('<p class="front-go"><a class="front-findings-link" '
            'href="findings.html#verdict-legend">The findings index</a>: '
            f"{df['id'].nunique()} claims of both papers, each with its verdict for each "
            'model and a legend of the verdicts. <a href="#what-was-found">What was found'
            f"</a>, in {len(headline(df))} lines, is below.</p>")


def findings_with_legend(text: str) -> str:
    """The staged findings page with the verdicts' legend just above the index (after the
    ledger block's start line), unless the page already carries one."""
    start = "<!-- ledger:start -->"
    if 'class="verdict-legend"' in text or start not in text:
        return text
    return text.replace(start + "\n", f"{start}\n\n{legend_html()}\n\n", 1)

"""The book's claim pages and its findings index, generated at build time from the claims
ledger's committed outputs (:mod:`analysis_utils.publish.book` calls :func:`write`).

Input: ``results/08_claims.csv`` (every model's rows, as notebook 08 saves them) and, where a
ledger stage writes one, ``results/<profile>/08_claims.csv`` (a model's rows found in both are
read from the profile's own file). Columns: :data:`analysis_utils.ledger.core.COLUMNS`.

Output, into the staged book source (never committed):

- ``claims/<id>.md``, one page per claim (a claim is a ``(notebook, claim)`` pair; its rows
  are the models'): the verdicts first, the models side by side; the paper's words; the
  criterion, the test and the unit; the interval drawn against the null and the paper's
  effect (an inline SVG, no plotting library); the mde, the control's verdict, per task; the
  evidence: each file the row's test read, linked at the output of the model's notebook page
  that shows it, the figures drawn beside it and the outputs of the notebook's section on
  that part of the paper (:mod:`.evidence`), else the row's line in the page's list of
  claims; the heads it names, opened in each model's atlas on the property the claim is
  about (``atlas/<model>.html#L-H&p=<property>``);
- the findings index, which replaces the ledger's generated block of ``findings.md`` in the
  staged copy: one line per claim (verdicts, paper, section, notebook, the claim in a few
  words, linking to its page), a stable anchor per claim (``#<id>``, the page's name), and
  filters by paper, notebook, verdict and model (``book/_static/findings.js``).

A claim's id is :func:`claim_id`: ``NN-`` and a slug of the ledger's one-line claim
(``03-the-best-head-beats-the-nearest-mention``), stable as long as the ledger's wording is.

Pure text in, text out; nothing here is imported by a notebook.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import paths, profiles
from ..claims.display import display_quote
from . import claimfigure, evidence
from .readme import Run, runs

VERDICTS = ("yes", "no", "inconclusive", "mixed", "untestable")
PAPERS = {"Clark et al. 2019": "Clark", "Kovaleva et al. 2019": "Kovaleva"}


def claim_id(notebook: str, claim: str) -> str:
    """``"NN-slug"``: lower case, words joined by ``-``, at most 80 characters, cut at a
    word."""
    words = re.findall(r"[a-z0-9]+", claim.lower().replace("'", ""))
    slug = ""
    for w in words:
        if len(slug) + len(w) + 1 > 80:
            break
        slug = f"{slug}-{w}" if slug else w
    return f"{notebook}-{slug}"


def short_model(model: str) -> str:
    """``"all-MiniLM-L6-v2 (6 x 12)"`` -> ``"MiniLM"``; ``all-mpnet-base-v2`` -> ``"mpnet"``."""
    name = model.split(" (")[0]
    for key in ("MiniLM", "mpnet", "bert"):
        if key.lower() in name.lower():
            return key if key != "bert" else name
    return name


@dataclass
class Claim:
    id: str
    notebook: str
    paper: str
    section: str
    claim: str
    rows: dict[str, dict] = field(default_factory=dict)  # model label -> ledger row

    @property
    def first(self) -> dict:
        return next(iter(self.rows.values()))


def ledger(root: str | Path | None = None) -> pd.DataFrame:
    """Every model's ledger rows: ``results/08_claims.csv``, with a profile's own
    ``results/<sub>/08_claims.csv`` (where there is one) replacing that model's rows."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    main = root / "results" / "08_claims.csv"
    if not main.is_file():
        raise FileNotFoundError(f"{main} is missing: run notebook 08 "
                                "(`python -m analysis_utils run --only 08`) first")
    df = pd.read_csv(main, dtype=str, keep_default_na=False)
    for sub in sorted(set(profiles.SUBFOLDER.values())):
        own = root / "results" / sub / "08_claims.csv"
        if own.is_file():
            extra = pd.read_csv(own, dtype=str, keep_default_na=False)
            df = pd.concat([df[~df["model"].isin(set(extra["model"]))], extra],
                           ignore_index=True)
    return df


def claims(df: pd.DataFrame) -> list[Claim]:
    """The ledger's rows grouped into claims, in the ledger's order (notebook, then row)."""
    out: dict[str, Claim] = {}
    for row in df.to_dict("records"):
        cid = claim_id(row["notebook"], row["claim"])
        c = out.get(cid)
        if c is None:
            c = out[cid] = Claim(cid, row["notebook"], row["paper"], row["section"],
                                 row["claim"])
        if row["model"] in c.rows:
            raise ValueError(f"two ledger rows of {row['model']} read {row['claim']!r} "
                             f"(notebook {row['notebook']}); claim ids must be unique")
        c.rows[row["model"]] = row
    return sorted(out.values(), key=lambda c: c.notebook)


# ---------------------------------------------------------------- the atlas property of a row

_SYNTAX = re.compile(r"^(\S+)(?: \([^)]*\))? \d+-\d+ (dep2head|head2dep)")


def atlas_property(row: dict) -> str | None:
    """The atlas property (``p=`` of ``atlas/<model>.html#L-H&p=``) a ledger row is about:
    the relation and direction of a syntax row, the mention type of a coreference row, the
    surface pattern of 01, the task of 06-07; None where no property fits."""
    nb, text = row["notebook"], row["claim"].lower()
    if nb == "01":
        for key, prop in (("previous token", "01.previous"), ("next token", "01.next"),
                          ("current token", "01.current"), ("any word", "01.max_weight"),
                          ("entropy from [cls]", "01.entropy_cls"), ("broad", "01.entropy"),
                          ("from [sep]", "01.sep_to_sep"), ("[sep]'s attention", "01.sep_to_sep"),
                          ("to [sep]", "01.sep"), ("periods", "01.punct"), ("[cls]", "01.cls")):
            if key in text:
                return prop
        return "01.entropy"
    if nb == "02":
        m = _SYNTAX.match(row["this_run"])
        return f"02.{m.group(1)}.{m.group(2)}" if m else "02.All.dep2head"
    if nb == "03":
        for kind in ("nominal", "pronoun", "proper"):
            if kind in text:
                return f"03.type.{kind}"
        return "03.all.All"
    if nb == "04":  # a probe row names a single head only as 02's best head on all words
        return "02.All.dep2head"
    if nb == "05":
        return "05.behaviour"
    task = re.search(r"\b(MRPC|STS-B|SST-2|RTE|CoLA)\b", row["this_run"])
    if nb == "06":
        if "framenet" in text:
            return "06.framenet.score"
        return f"06.drift.{task.group(1)}" if task else None
    if nb == "07":
        return f"07.disable.{task.group(1)}.uniform" if task else None
    return None


# ---------------------------------------------------------------- the interval figure

_NUM = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def interval_numbers(note: str) -> dict | None:
    """The interval, null and paper's effect a row's ``note`` states in the ledger's raw
    units (``the interval [a, b] excludes 0.5 ...``, ``holds both the null 0 and the paper's
    effect 0.002``, ``the paper's effect 0.05 lies outside the interval [a, b]``); None when
    the note states no single interval."""
    m = re.search(rf"interval \[({_NUM}), ({_NUM})\]", note)
    if not m:
        return None
    out = {"lo": float(m.group(1)), "hi": float(m.group(2)), "null": None, "paper": None}
    tail = note[m.start():]
    for pattern in (rf"the null ({_NUM})", rf"\] excludes ({_NUM})", rf"\] holds ({_NUM})",
                    rf"other side of ({_NUM})"):
        n = re.search(pattern, tail)
        if n:
            out["null"] = float(n.group(1))
            break
    p = re.search(rf"the paper's effect ({_NUM})", note)
    if p:
        out["paper"] = float(p.group(1))
    w = re.search(rf"within ({_NUM}) \+- ({_NUM})", tail)
    if w:
        out["paper"] = float(w.group(1))
    return out


def in_display_units(numbers: dict, interval: str) -> tuple[dict, str]:
    """``numbers`` (raw units, from the note) scaled to the units of the row's ``interval``
    cell where that cell shows them x 100 (points, %), with the unit's name for the
    caption; unchanged otherwise."""
    shown = re.search(rf"\[({_NUM})%?, ({_NUM})%?\]", interval.replace("+", ""))
    if not shown:
        return numbers, ", raw units"
    a, b = float(shown.group(1)), float(shown.group(2))
    for scale, unit in ((100.0, " in points" if "point" in interval else ", %"), (1.0, "")):
        if math.isclose(a, numbers["lo"] * scale, rel_tol=0.06, abs_tol=0.06) and \
                math.isclose(b, numbers["hi"] * scale, rel_tol=0.06, abs_tol=0.06):
            return ({k: (v * scale if v is not None else None) for k, v in numbers.items()},
                    unit)
    return numbers, ", the ledger's raw units"


def interval_svg(numbers: dict, label: str) -> str:
    """The fallback figure of a row the multiverse has no record of: the interval as a bar
    against the null (dashed) and the paper's effect (a diamond) where the note gives them;
    numbers as given (:func:`.claimfigure.from_note`)."""
    return claimfigure.svg(claimfigure.from_note(numbers), label)


def _note_rule(row: dict) -> claimfigure.Rule | None:
    """The fallback figure of a row without multiverse records, from its note's numbers, in
    the units of its ``interval`` cell where those are x 100."""
    numbers = interval_numbers(row["note"])
    if not numbers or not row["interval"]:
        return None
    shown, unit = in_display_units(numbers, row["interval"])
    scale = (shown["lo"] / numbers["lo"] if numbers["lo"] else
             shown["hi"] / numbers["hi"] if numbers["hi"] else 1.0)
    suffix = {" in points": " points", ", %": "%"}.get(unit, "")
    r = claimfigure.from_note(numbers)
    return claimfigure.Rule(r.lines, scale=round(scale), suffix=suffix, digits=2,
                            from_note=True)


# ---------------------------------------------------------------- pages

def _md(text: str) -> str:
    """Ledger text as Markdown: tags (the paper's ``<b>76.3</b>``) dropped, Markdown's
    special characters escaped."""
    text = re.sub(r"</?[a-z][^>]*>", "", str(text))
    return re.sub(r"([\\`*_\[\]<>|$])", r"\\\1", text)


def _verdict(v: str) -> str:
    v = v or "not run"
    cls = "none" if v == "not run" else html.escape(v)
    return f'<span class="verdict verdict-{cls}">{html.escape(v)}</span>'


def _where(c: Claim) -> str:
    return f"{PAPERS.get(c.paper, c.paper)} §{c.section.split(',')[0]}"


def _atlas_links(row: dict, run: Run, root: Path, up: str) -> list[tuple[str, str]]:
    atlas = run.atlas_page(root)
    heads = [h.strip() for h in row["heads"].split(",") if h.strip()]
    if not atlas or not heads:
        return []
    prop = atlas_property(row)
    out = []
    for h in heads:
        p = head_property(row, h) or prop
        out.append((h, f"{up}{atlas}#{h}" + (f"&p={p}" if p else "")))
    return out


_TASKS = r"(MRPC|STS-B|SST-2|RTE|CoLA)"


def head_property(row: dict, head: str) -> str | None:
    """For a 06-07 row whose value names heads task by task (``"MRPC s42: 4-8 +1.22; STS-B
    s42: 2-3 +1.74"``), the atlas property of the task that names ``head`` first, so a head
    opens on the task it was found on (not the row's first task); None otherwise."""
    if row["notebook"] not in ("06", "07"):
        return None
    for part in row["this_run"].split(";"):
        m = re.search(rf"\b{_TASKS}\b", part)
        if m and re.search(rf"(?<![\d-]){re.escape(head)}(?![\d-])", part):
            return (f"07.disable.{m.group(1)}.uniform" if row["notebook"] == "07"
                    else f"06.drift.{m.group(1)}")
    return None


def _table_name(section: str) -> str:
    m = re.search(r"Table \d+", section)
    return m.group(0) if m else "table"


def registry_by_quote() -> dict:
    """``{quote: claims registry entry}``: where each of the paper's words stands (``source``:
    text, table or caption), so a table row is shown as one, not as a sentence."""
    from .. import claims as registry

    return {" ".join(e.quote.split()): e for e in registry.load()}


#: what each verdict means, in one line beside its badge
MEANS = {
    "yes": "the claim holds on this model: the interval clears the rule on the claimed side",
    "no": "the claim fails on this model: the interval lies on the wrong side of the rule",
    "inconclusive": "this test cannot tell: the interval reaches both sides of the rule",
    "mixed": "the claim holds on some tasks and fails on others",
    "untestable": "the claim cannot be tested here, for the reason below",
}


def _control_badge(v: str, good: bool = False) -> str:
    """A control's verdict: its own neutral style, never a claim's red or green (a control's
    ``no`` is the outcome a ``yes`` row hopes for)."""
    cls = " control-good" if good else ""
    return (f'<span class="verdict verdict-control control-{html.escape(v)}{cls}" '
            f'title="the random-weights control\'s verdict under the same rule">'
            f'{html.escape(v)}</span>')


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    text = text[:1].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def why_sentence(row: dict) -> str:
    """The row's ``why`` without its leading ``<verdict>:`` (the badge stands beside it), as
    a sentence; an untestable row's reason where ``why`` is empty (the note holds it)."""
    v, why = row.get("verdict", ""), (row.get("why") or "").strip()
    if why.startswith(f"{v}:"):
        why = why[len(v) + 1:].strip()
    if why == v:
        why = ""
    return _sentence(why or (row.get("note", "") if v == "untestable" else ""))


def specifications_sentence(row: dict) -> str:
    """``specifications`` and ``turns_on`` in words: ``Holds in 2 of 2 specifications:
    robust.``, or for a fragile row the choice it turns on, and, where the verdict changes
    under another bootstrap seed or without one fine-tuning seed (``turns_on`` items of
    :func:`analysis_utils.ledger.stability.fold`), that draw."""
    from ..ledger.stability import TURNS_ON_NAMES

    spec = (row.get("specifications") or "").strip()
    m = re.match(r"(\w+) in (\d+) of (\d+)(?: \(([^)]*)\))?", spec)
    if not m:
        return ""
    v, k, n, others = m.groups()
    lead = f"{'Holds' if v == 'yes' else f'The verdict is {v}'} in {k} of {n} specifications"
    items = [t.strip() for t in (row.get("turns_on") or "").split("; ") if t.strip()]
    draws = [t for t in items if t.startswith(tuple(TURNS_ON_NAMES.values()))]
    choices_text = "; ".join(t for t in items if t not in draws)
    drawn = f" It is not robust to {' or '.join(draws)}." if draws else ""
    if (row.get("robust") == "yes" or k == n) and not draws:
        return f"{lead}: robust to the choices the paper leaves open."
    if k == n:
        return f"{lead}: robust to the choices the paper leaves open, but not to " \
            f"{' or '.join(draws)}."
    out = lead + (f" ({others})" if others else "")
    choices: dict[str, list[str]] = {}
    for name, alt in re.findall(r"(\w+) \(([^()]*)\)", choices_text):
        choices.setdefault(name, []).append(alt)
    if choices:
        out += ": it turns on " + " and ".join(
            f"the {name} ({'; '.join(alts)})" for name, alts in choices.items())
    return out + "." + drawn


def control_sentence(row: dict) -> str:
    """The random-weights control's result in words, with what it says of training (HTML)."""
    cv = row.get("control_verdict") or ""
    if not cv:
        return ""
    ts = (row.get("training_specific") or "").split(":")[0].strip()
    if ts:
        tail = f"so this is {html.escape(ts)}"
    elif row.get("verdict") == "untestable" or cv == "untestable":
        tail = "the control cannot be judged either"
    else:
        tail = "it bears on training only where the claim holds"
    good = ts == "specific to training"
    return (f"The random-weights control, under the same rule: "
            f"{_control_badge(cv, good)} \u2014 {tail}.")


def per_task_verdicts(row: dict) -> dict[str, str]:
    """``{task: verdict}`` from the row's ``per_task`` cell (``MRPC yes; STS-B no (5
    seeds)``)."""
    text = re.sub(r"\s*\((?:seeds pooled|\d+ seeds?)\)\s*$", "", row.get("per_task") or "")
    out = {}
    for part in text.split("; "):
        task, _, v = part.strip().rpartition(" ")
        if task and v in VERDICTS:
            out[task] = v
    return out


def tasks_table(rule: claimfigure.Rule, row: dict) -> str:
    """The compact per-task table of a row judged per task: task, verdict, interval (or
    the seeds' verdicts where seeds are judged apart) and the paper's value."""
    verdicts = per_task_verdicts(row)
    tasks: dict[str, list[claimfigure.Line]] = {}
    for ln in rule.lines:
        tasks.setdefault(ln.task, []).append(ln)
    paper = any(ln.paper is not None for ln in rule.lines)
    head = ("<tr><th scope=\"col\">task</th><th scope=\"col\">verdict</th>"
            f"<th scope=\"col\">{html.escape(rule.level)} interval</th>"
            + ("<th scope=\"col\">paper</th>" if paper else "") + "</tr>")
    body = []
    for task, lines in tasks.items():
        seen = [ln.verdict for ln in lines]
        v = verdicts.get(task) or (seen[0] if len(set(seen)) == 1 else "mixed")
        if len(lines) == 1:
            cell = html.escape(rule.interval(lines[0].lo, lines[0].hi))
        else:
            counts = ", ".join(f"{seen.count(x)} {x}" for x in VERDICTS if x in seen)
            cell = f"{len(lines)} seeds: {html.escape(counts)}"
        pv = {ln.paper for ln in lines if ln.paper is not None}
        pcell = html.escape(rule.show(pv.pop())) if len(pv) == 1 else "\u2013"
        body.append(f"<tr><td>{html.escape(task)}</td><td>{_verdict(v)}</td><td>{cell}</td>"
                    + (f"<td>{pcell}</td>" if paper else "") + "</tr>")
    return (f'<table class="claim-tasks"><thead>{head}</thead><tbody>{"".join(body)}'
            "</tbody></table>")


_MULTIVERSE: dict[tuple[str, float], pd.DataFrame] = {}


def multiverse(root: str | Path | None = None) -> pd.DataFrame:
    """:func:`.claimfigure.load`, read once per file version."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    f = root / "results" / "08_multiverse.csv"
    key = (str(root), f.stat().st_mtime if f.is_file() else 0.0)
    if key not in _MULTIVERSE:
        _MULTIVERSE[key] = claimfigure.load(root)
    return _MULTIVERSE[key]


def figure(row: dict, mv: pd.DataFrame) -> claimfigure.Rule | None:
    """The rule figure of a ledger row: from its main specification's records, or from its
    note's numbers where the multiverse has none; None for a row without an interval."""
    r = claimfigure.rule(claimfigure.main_records(mv, row["model"], row["id"]
                                                  if row.get("id") else
                                                  claim_id(row["notebook"], row["claim"])),
                         family=row.get("family", ""))
    return r if r is not None else _note_rule(row)


def model_head(model: str, row: dict, mv: pd.DataFrame) -> list[str]:
    """The top of a model's section: the verdict, what it means, why, the specifications,
    the control in words; for a row judged per task its table; then the figure of the rule
    and its generated caption."""
    v = row["verdict"] or "not run"
    lines = [f'<div class="claim-why" data-verdict="{html.escape(v)}">',
             f'<p class="claim-verdict-line">{_verdict(row["verdict"])} '
             f'<span class="meaning">{html.escape(MEANS.get(v, ""))}</span></p>']
    why = why_sentence(row)
    if why:
        lines.append(f'<p class="why"><strong>Why.</strong> {html.escape(why)}</p>')
    spec = specifications_sentence(row)
    if spec:
        lines.append(f'<p class="specs">{html.escape(spec)}</p>')
    control = control_sentence(row)
    if control:
        lines.append(f'<p class="control">{control}</p>')
    lines.append("</div>")
    out = ["\n".join(lines), ""]
    rule = figure(row, mv)
    if rule is None:
        return out
    if rule.per_task:
        out += [tasks_table(rule, row), ""]
    label = f"{model}: {row['verdict']}; {why}"
    # two layouts of one figure, the narrow one shown on a phone (CSS: book/_static/claims.css)
    out += ['<figure class="claim-rule">' + claimfigure.svg(rule, label, cls="rule-wide")
            + claimfigure.svg(rule, label, width=360, cls="rule-narrow")
            + f"<figcaption>{html.escape(claimfigure.caption(rule))}</figcaption></figure>", ""]
    return out


def _card_text(row: dict) -> str:
    """What a model's card says under its verdict: ``this_run``, or for a row judged per
    task its per-task verdicts (the per-task and per-seed numbers are folded further down)."""
    if row.get("per_task"):
        return "per task: " + row["per_task"]
    return row["this_run"] or "\u2013"


def evidence_files(root: str | Path | None = None) -> dict[tuple[str, str], list[str]]:
    """What each row's test read (:func:`.evidence.read_files`: ``{(model, claim id):
    files}``); where the ledger stage predates ``results/08_evidence.csv``, each claim's
    declared tables (``Claim.needs``) under ``("*", claim id)``, the same for every model."""
    found = evidence.read_files(root)
    if found is not None:
        return found
    from .. import ledger

    return {("*", claim_id(c.notebook, c.claim)): list(c.needs) for c in ledger.claims()}


def evidence_line(c: Claim, row: dict, model: str, run: Run, root: Path,
                  evidence_files: dict | None, pages: dict | None) -> str:
    """The row's evidence (HTML): each table and figure its rule read, at the output of the
    model's notebook page that shows it (a file of another notebook, on that notebook's
    page), the figures drawn beside them, and the outputs of the notebook's section on the
    row's part of the paper (:func:`.evidence.links`); then the row's line in the page's list
    of claims, which is all it links where nothing of the above is anchored."""
    nb = run.notebook_page(row["notebook"], root)
    url = re.sub(r"\.ipynb$", ".html", nb)
    recorded = (evidence_files or {}).get((model, c.id))
    files = recorded or (evidence_files or {}).get(("*", c.id)) or []
    pages = pages or {}
    found = []
    for prefix in dict.fromkeys([row["notebook"], *(f[:2] for f in files)]):
        mine = [f for f in files if f[:2] == prefix]
        if prefix == row["notebook"]:
            found += evidence.links(mine, url, pages.get(nb), row.get("section", ""))
            continue
        try:
            other = run.notebook_page(prefix, root)
        except FileNotFoundError:
            continue
        found += [x for x in evidence.links(mine, re.sub(r"\.ipynb$", ".html", other),
                                             pages.get(other)) if x.why == "read"]
    found.sort(key=lambda x: {"read": 0, "drawn": 1, "section": 2}[x.why])  # stable
    listed = (f'<a class="evidence-row" href="../{url}#claim-{html.escape(c.id)}">'
              f"its line in notebook {html.escape(row['notebook'])}'s list of claims</a>")
    if not found:
        return f'<div class="claim-evidence"><p>Evidence: {listed}.</p></div>'
    what = {"table": "table", "figure": "figure", "output": "saved by that cell, not shown"}

    def one(x: evidence.Link) -> str:
        names = ", ".join(f"<code>{html.escape(f)}</code>" for f in x.files)
        return (f'<a class="evidence-link" data-kind="{x.kind}" data-why="{x.why}" '
                f'href="{html.escape(x.href)}">{names}</a> ({what[x.kind]})')

    parts = []
    read = [one(x) for x in found if x.why == "read"]
    if read:
        parts.append(("what the test read: " if recorded else "the tables the test needs: ")
                     + ", ".join(read))
    drawn = [one(x) for x in found if x.why == "drawn"]
    if drawn:
        parts.append("drawn in the same cell: " + ", ".join(drawn))
    for title in dict.fromkeys(x.section for x in found if x.why == "section"):
        shown = [one(x) for x in found if x.why == "section" and x.section == title]
        parts.append(f"shown in its section \u201c{html.escape(title.replace('`', ''))}\u201d: "
                     + ", ".join(shown))
    return (f'<div class="claim-evidence"><p>Evidence in notebook '
            f'{html.escape(row["notebook"])}:</p><ul>'
            + "".join(f"<li>{x}</li>" for x in [*parts, listed]) + "</ul></div>")


def page(c: Claim, found: dict[str, Run], root: Path, sources: dict | None = None,
         mv: pd.DataFrame | None = None, evidence_files: dict | None = None,
         anchors: dict | None = None) -> str:
    """The Markdown of claim ``c``'s page (it sits in ``claims/``); ``sources``:
    :func:`registry_by_quote`; ``mv``: the multiverse's records (:func:`multiverse`, read
    from ``root`` when not given); ``evidence_files``: :func:`evidence_files`;
    ``anchors``: :func:`.evidence.pages` (without them, each row links its line in the
    notebook page's list of claims)."""
    sources = sources or {}
    mv = multiverse(root) if mv is None else mv
    up = "../"
    models = list(c.rows)
    first = c.first
    out = ["---", "orphan: true", "---", "", f"({c.id})=", f"# {_md(c.claim[:1].upper() + c.claim[1:])}", "",
           f"{c.paper}, {'Section ' if c.section[:1].isdigit() else ''}{_md(c.section)} · "
           f"notebook {c.notebook} · "
           f'<a href="../findings.html#{c.id}">all findings</a>', ""]
    cards = ['<div class="claim-verdicts">']
    for model in models:
        row = c.rows[model]
        control = row["control_verdict"]
        good = row["training_specific"].startswith("specific")
        cards.append(
            f'<div class="model-card"><h3>{html.escape(model)}</h3>{_verdict(row["verdict"])}'
            + (f'<p>random-weights control: {_control_badge(control, good)}</p>'
               if control else "")
            + f'<p>{html.escape(_card_text(row))}</p></div>')
    for model in found:
        if model not in c.rows:
            cards.append(f'<div class="model-card"><h3>{html.escape(model)}</h3>'
                         f'{_verdict("")}<p>no row: notebook {html.escape(c.notebook)} has not '
                         f'run on this model (see the findings\' counts)</p></div>')
    cards.append("</div>")
    out += ["\n".join(cards), ""]
    out += ["Verdicts: " + "; ".join(f"{_md(m)} **{c.rows[m]['verdict']}**" for m in models),
            ""]
    out += ["## The paper's words", ""]
    for piece in first["quote"].split(" | "):
        entry = sources.get(" ".join(piece.split()))
        if entry is not None and entry.source == "table":
            row = re.sub(r"<b>(.*?)</b>", "\x00\\1\x01", piece.strip())
            row = " · ".join(_md(cell) for cell in re.split(r"\t+", row))
            row = row.replace("\x00", "**").replace("\x01", "**")
            out += [f"From the paper's {_md(_table_name(entry.section))} (as printed, bold kept)"
                    f": {row}", "",
                    f"What the row claims, in a line: {_md(entry.claim)}.", ""]
        else:
            out += [f"> {_md(display_quote(piece))}", ""]
    out += [f"The paper: {_md(first['paper_value']) or '–'}.", "",
            "## The criterion and the test", "",
            f"**Criterion.** {_md(first['criterion']) or '–'}", ""]
    if first["reference"]:
        out += [f"**Compared with.** {_md(first['reference'])}", ""]
    out += ["## Each model", ""]
    for model in models:
        row = c.rows[model]
        run = found.get(model)
        out += [f"### {_md(model)}", ""]
        out += model_head(model, row, mv)
        folded = bool(row.get("per_task"))
        fields = [("this run", row["this_run"]), ("interval", row["interval"]),
                  ("p (Holm)", row["p_adjusted"]), ("family", row["family"]),
                  ("mde", row["mde"]), ("unit resampled", row["unit"]),
                  ("design effect", row["design_effect"]), ("seeds", row["seeds"]),
                  ("per task", row["per_task"]), ("control's value", row["reference_value"]),
                  ("test", row["test"]), ("specification", row.get("specification", "")),
                  ("note", row["note"])]
        if folded:
            out += ['<details class="claim-numbers"><summary>Every number of this row: '
                    'per task and seed, the test, the note</summary>', ""]
        out += ['<div class="claim-detail">', "", "| | |", "|---|---|"]
        out += [f"| {name} | {_md(value)} |" for name, value in fields if value]
        out += ["", "</div>", ""]
        if folded:
            out += ["</details>", ""]
        if run is not None:
            out += [evidence_line(c, row, model, run, root, evidence_files, anchors), ""]
            links = _atlas_links(row, run, root, up)
            if links:
                prop = atlas_property(row) or "its default property"
                out += ["Heads in the atlas (on " + _md(prop) + "): " +
                        ", ".join(f'<a class="atlas-head" href="{html.escape(href)}">{h}</a>'
                                  for h, href in links), ""]
    return "\n".join(out) + "\n"


def index(cs: list[Claim], found: dict[str, Run]) -> str:
    """The findings index (raw HTML inside the staged ``findings.md``)."""
    models = list(dict.fromkeys(m for c in cs for m in c.rows))
    counts = []
    for m in models:
        rows = [c.rows[m]["verdict"] for c in cs if m in c.rows]
        counts.append(f"{html.escape(m)}: " + ", ".join(
            f"{rows.count(v)} {v}" for v in VERDICTS))
    opts = {
        "paper": sorted({PAPERS.get(c.paper, c.paper) for c in cs}),
        "notebook": sorted({c.notebook for c in cs}),
        "verdict": list(VERDICTS),
        "model": [short_model(m) for m in models],
    }
    out = ['<div class="findings-index-wrap" id="findings-index">',
           f'<p>{len(cs)} claims, each with its page (click the claim). '
           + "; ".join(counts) + ".</p>",
           '<form class="findings-filters" aria-label="Filter the claims">']
    for key, values in opts.items():
        out.append(f'<label>{key} <select data-filter="{key}"><option value="">all</option>'
                   + "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>'
                             for v in values) + "</select></label>")
    out.append('<span class="findings-shown" aria-live="polite"></span></form>')
    out.append('<table class="findings-index"><colgroup><col class="c-verdict">'
               '<col class="c-where"><col class="c-claim"></colgroup>'
               '<thead><tr><th scope="col">verdict</th><th scope="col">where</th>'
               '<th scope="col">claim</th></tr></thead><tbody>')
    for c in cs:
        verdicts = " ".join(c.rows[m]["verdict"] for m in c.rows)
        ms = " ".join(short_model(m) for m in c.rows)
        cell = "".join(
            f'<span data-model="{short_model(m)}" data-verdict="{html.escape(r["verdict"])}">'
            f'{_verdict(r["verdict"])}<small>{html.escape(short_model(m))}</small></span>'
            for m, r in c.rows.items())
        paper = PAPERS.get(c.paper, c.paper)
        out.append(
            f'<tr id="{c.id}" data-paper="{paper}" data-notebook="{c.notebook}" '
            f'data-verdicts="{html.escape(verdicts)}" data-models="{ms}">'
            f'<td class="v">{cell}</td>'
            f'<td class="w">{html.escape(paper)} §{html.escape(c.section.split(",")[0])}'
            f'<small>nb {c.notebook}</small></td>'
            f'<td class="c"><a href="claims/{c.id}.html">{html.escape(c.claim)}</a></td></tr>')
    out.append("</tbody></table></div>")
    return "\n".join(out) + "\n"


def write(source: Path, root: str | Path | None = None,
          anchors: dict | None = None) -> dict[Path, str]:
    """``{path relative to the staged source: text}``: every claim page, and the staged
    ``findings.md`` with its ledger block replaced by the index. ``anchors``: the notebook
    pages' evidence anchors and sections (:func:`.evidence.pages`, read when not given)."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    df = ledger(root)
    found = runs(root / "results")
    cs = claims(df)
    sources = registry_by_quote()
    mv = claimfigure.load(root)
    files = evidence_files(root)
    anchors = anchors if anchors is not None else evidence.pages(root)
    out = {Path("claims") / f"{c.id}.md": page(c, found, root, sources, mv, files, anchors)
           for c in cs}
    findings = (root / "book" / "findings.md").read_text()
    start, end = "<!-- ledger:start -->", "<!-- ledger:end -->"
    i, j = findings.find(start), findings.find(end)
    if i < 0 or j < i:
        raise ValueError("book/findings.md lost its <!-- ledger:start --> ... "
                         "<!-- ledger:end --> lines, where the findings index goes")
    block = (f"{start}\n<!-- the book build replaces this block with the findings index "
             f"(analysis_utils/publish/claimpages.py) -->\n\n{index(cs, found)}\n")
    out[Path("findings.md")] = findings[:i] + block + findings[j:]
    return out

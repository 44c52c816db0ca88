"""Evidence that lands (issue 53, item 3): each claim page links the tables and figures its
verdict reads, each at the output of the notebook's page that shows it.

Two halves, both computed when the book is built; no committed notebook is changed.

- **Anchors.** In the book's copy of a rendered notebook, every file the notebook's run
  wrote (its ``NN_provenance.json``'s ``outputs``: ``NN_name.csv``, ``NN_name.npz``,
  ``figures/NN_name.png``) gets an anchor, ``out-NN_name-csv`` (:func:`anchor_id`), at the
  output of the code cell that writes it: the cell whose source calls ``run.table(df,
  "name")``, ``run.arrays("name", ...)`` or ``run.figure(fig, "name")`` (names may be
  f-strings: :func:`writes` reads them as patterns). Within that cell the anchor sits right
  above the output that shows the file (:func:`place`): a figure's image (the cell's figures
  in the order it draws them), a table whose header holds the file's columns (or the cell's
  one table when it writes one), an output that names the file (``01_by_segment_model.npz:
  2.80 MB``), else the cell's first output. Each anchor is an output of its own, put just
  before the one it marks (:func:`insert`), and says what it lands on (:class:`Anchor`
  ``kind``: ``"table"``, ``"figure"`` or ``"output"``).
- **Links.** The claims ledger records the files each row's rule read
  (``results/08_evidence.csv``: id, model, notebook, file; :mod:`.ledger_stage`); a claim
  page links, per model, each of them at its anchor in that model's notebook page, and the
  figures drawn in the same cell as a table it reads (:func:`links`). Where the ledger
  predates that file, the claim's declared tables (``Claim.needs``) stand in for it; a row
  with no anchored file keeps the link to its line in the notebook page's list of claims
  (``#claim-<id>``).

Pure text in, text out; nothing here is imported by a notebook.
"""

from __future__ import annotations

import ast
import csv
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import paths, profiles

#: What each ``run.<method>`` writes: the file's suffix and where its name argument sits.
WRITERS = {"table": (".csv", 1), "figure": (".png", 1), "arrays": (".npz", 0)}
#: What a link says it lands on.
KINDS = ("table", "figure", "output")
#: The class of an anchor's output (the browser test and the CSS find them by it).
ANCHOR_CLASS = "evidence-anchor"


@dataclass(frozen=True)
class Write:
    """One ``run.<method>(...)`` call of a code cell: ``method`` (table, figure, arrays), the
    file name it writes as a regular expression (``01_by_segment_.+?\\.npz``) and, for a
    figure, whether the notebook shows it (``show=False``: saved and linked only)."""

    method: str
    pattern: str
    shown: bool = True
    #: the variables the written data is made of (``run.table(norm_layers, ...)``)
    data: frozenset[str] = frozenset()

    def matches(self, name: str) -> bool:
        return re.fullmatch(self.pattern, name) is not None


@dataclass(frozen=True)
class Anchor:
    """Where a file lands on a notebook's page: the anchor's ``id``, the ``kind`` of output
    right below it, the index of the code cell that writes the file and of the output of that
    cell the anchor goes above (in the committed notebook; ``len(outputs)`` for none)."""

    file: str
    id: str
    kind: str
    cell: int
    output: int


def anchor_id(file: str) -> str:
    """``"01_by_segment_model.npz"`` -> ``"out-01_by_segment_model-npz"``."""
    stem, _, ext = Path(file).name.rpartition(".")
    return f"out-{re.sub(r'[^A-Za-z0-9_-]', '-', stem)}-{ext}"


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _name_pattern(node: ast.expr) -> str | None:
    """A literal or f-string name as a regular expression; None for anything else (a
    variable: the cell's name is not known from its source)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(re.escape(str(v.value)))
            else:
                parts.append(".+?")
        return "".join(parts)
    return None


def writes(source: str, prefix: str) -> list[Write]:
    """The ``run.table`` / ``run.arrays`` / ``run.figure`` calls of a code cell's ``source``,
    in the order they appear, each with the file name it writes (``NN_`` put before a name
    that lacks it, as :meth:`analysis_utils.publish.report.Run.table` does)."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.split("\n"))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in WRITERS and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "run"):
            continue
        suffix, at = WRITERS[node.func.attr]
        arg = next((k.value for k in node.keywords if k.arg == "name"), None)
        if arg is None and len(node.args) > at:
            arg = node.args[at]
        pattern = _name_pattern(arg) if arg is not None else None
        if pattern is None:
            continue
        if not pattern.startswith(re.escape(f"{prefix}_")):
            pattern = re.escape(f"{prefix}_") + pattern
        shown = not any(k.arg == "show" and isinstance(k.value, ast.Constant)
                        and k.value.value is False for k in node.keywords)
        data = (_variables(node.args[0]) if node.func.attr == "table" and node.args
                else frozenset())
        found.append((node.lineno, node.col_offset,
                      Write(node.func.attr, pattern + re.escape(suffix), shown, data)))
    return [w for *_, w in sorted(found, key=lambda x: (x[0], x[1]))]


def _variables(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))


def shown_last(source: str) -> frozenset[str]:
    """The variables of a cell's last statement when it is an expression (the value the cell
    shows as its result, ``layer_shares``); empty otherwise."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.split("\n"))
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return frozenset()
    if body and isinstance(body[-1], ast.Expr):
        return _variables(body[-1].value)
    return frozenset()


# ---------------------------------------------------------------- what a cell's outputs show

def _text(output: dict, mime: str) -> str:
    v = output.get("data", {}).get(mime, "")
    return "".join(v) if isinstance(v, list) else v


def output_kind(output: dict) -> str:
    """``"figure"`` (an image), ``"table"`` (an HTML table or a Markdown one) or
    ``"output"`` (text, a link, anything else)."""
    data = output.get("data", {})
    if any(k.startswith("image/") for k in data):
        return "figure"
    if "<table" in _text(output, "text/html"):
        return "table"
    if re.search(r"^\s*\|?[\s:|-]*---[\s:|-]*\|", _text(output, "text/markdown"), re.M):
        return "table"
    return "output"


def _headers(output: dict) -> set[str]:
    """The column names an HTML or Markdown table output shows."""
    h = _text(output, "text/html")
    if h:
        return {html.unescape(re.sub(r"<[^>]+>", "", x)).strip()
                for x in re.findall(r"<th[^>]*>(.*?)</th>", h, re.S)} - {""}
    md = _text(output, "text/markdown")
    m = re.search(r"^\s*\|(.*)\|\s*\n\s*\|?[\s:|-]*---", md, re.M)
    return {x.strip().strip("*`") for x in m.group(1).split("|")} - {""} if m else set()


def _columns(csv_path: Path) -> set[str]:
    try:
        with open(csv_path, newline="") as fh:
            return {c.strip() for c in next(csv.reader(fh), [])} - {""}
    except OSError:
        return set()


def _names(output: dict) -> str:
    """Every text an output holds (stream text, Markdown, HTML, plain text)."""
    if "text" in output:
        t = output["text"]
        return "".join(t) if isinstance(t, list) else t
    return " ".join(_text(output, m) for m in output.get("data", {}))


def place(cell: dict, file: str, cell_writes: list[Write], folder: Path | None) -> tuple[int, str]:
    """``(index of the output of ``cell`` the anchor of ``file`` goes above, kind)``; index
    ``len(outputs)`` (kind ``"output"``) for a cell without outputs."""
    outputs = cell.get("outputs", [])
    kinds = [output_kind(o) for o in outputs]
    mine = next(w for w in cell_writes if w.matches(file))
    if mine.method == "figure" and mine.shown:
        shown = [w for w in cell_writes if w.method == "figure" and w.shown]
        images = [i for i, k in enumerate(kinds) if k == "figure"]
        if images:
            j = shown.index(mine)
            return (images[j] if len(images) == len(shown) else images[0]), "figure"
    if mine.method == "table":
        tables = [i for i, k in enumerate(kinds) if k == "table"]
        result = [i for i in tables if outputs[i].get("output_type") == "execute_result"]
        last = shown_last(_source(cell))
        if result and mine.data & last:  # the cell ends by showing what it wrote
            return result[0], "table"
        if result and any(w.method == "table" and w.data & last for w in cell_writes):
            tables = [i for i in tables if i not in result]  # that shows another table
        cols = _columns(folder / file) if folder is not None else set()
        if tables and cols:
            score = {i: len(cols & _headers(outputs[i])) / len(cols) for i in tables}
            best = max(tables, key=lambda i: score[i])
            if score[best] >= 0.5:
                return best, "table"
        if len(tables) == 1 and sum(w.method == "table" for w in cell_writes) == 1:
            return tables[0], "table"
    for i, o in enumerate(outputs):  # an output that names the file (a link, a size)
        if file in _names(o):
            return i, "output"
    return 0, "output"


def notebook_anchors(nb: dict, prefix: str, files: list[str],
                     folder: Path | None = None) -> dict[str, Anchor]:
    """``{file: Anchor}`` for each of ``files`` (the run's outputs) that a code cell of
    ``nb`` writes; ``folder``: the run folder, whose CSV headers pick the table a file is
    shown as."""
    cells = nb.get("cells", [])
    by_cell = {i: writes(_source(c), prefix) for i, c in enumerate(cells)
               if c.get("cell_type") == "code"}
    out = {}
    for f in files:
        name = Path(f).name
        for i, ws in by_cell.items():
            if any(w.matches(name) for w in ws):
                at, kind = place(cells[i], name, ws, folder)
                out[name] = Anchor(name, anchor_id(name), kind, i, at)
                break
    return out


def insert(nb: dict, anchors: dict[str, Anchor]) -> dict:
    """Put each anchor in ``nb`` (changed in place: the book's copy, whose outputs are those
    the anchors were placed on) as an output of its own just above the output it marks;
    anchors at one output share one."""
    at: dict[tuple[int, int], list[str]] = {}
    for a in anchors.values():
        at.setdefault((a.cell, a.output), []).append(a.id)
    for (cell, i), ids in sorted(at.items(), reverse=True):  # later outputs first
        tags = "".join(f'<a id="{html.escape(x)}" class="{ANCHOR_CLASS}"></a>'
                       for x in sorted(ids))
        nb["cells"][cell].setdefault("outputs", []).insert(i, {
            "output_type": "display_data", "metadata": {},
            "data": {"text/html": f'<div class="{ANCHOR_CLASS}s">{tags}</div>'}})
    return nb


@dataclass(frozen=True)
class Section:
    """A heading of a notebook (level 2 and below) and the cells up to the next heading of
    its level or above: ``start`` (the heading's cell) to ``end`` (excluded)."""

    title: str
    level: int
    start: int
    end: int


def sections(nb: dict) -> list[Section]:
    """The notebook's sections under its title, in order."""
    heads = []
    for i, c in enumerate(nb.get("cells", [])):
        if c.get("cell_type") != "markdown":
            continue
        for line in _source(c).split("\n"):
            m = re.match(r"(#{2,6})\s+(.*)", line)
            if m:
                heads.append((i, len(m.group(1)), m.group(2).strip()))
    n = len(nb.get("cells", []))
    out = []
    for k, (i, level, title) in enumerate(heads):
        end = next((j for j, lv, _ in heads[k + 1:] if lv <= level and j > i), n)
        out.append(Section(title, level, i, end))
    return out


def _covers(text: str, word: str, number: str) -> bool:
    """Whether ``text`` names ``word`` ``number`` (``Figure 2``, ``Section 4.4``) alone or in
    a range (``Figures 6-7``, ``Sections 4.2-4.5``)."""
    def key(x: str) -> tuple[int, ...]:
        return tuple(int(p) for p in x.split("."))

    want = key(number)
    for m in re.finditer(rf"\b{word}s?\s+(\d+(?:\.\d+)?)(?:\s*[-\u2013]\s*(\d+(?:\.\d+)?))?",
                         text):
        lo, hi = key(m.group(1)), key(m.group(2) or m.group(1))
        if lo == want or (lo <= want <= hi and len(lo) == len(want) == len(hi)):
            return True
    return False


def claim_sections(secs: list[Section], section: str, title: str = "") -> list[Section]:
    """The notebook sections on a ledger row's ``section`` (``"3.2, Figure 2"``, ``"4.3,
    Table 1"``, ``"4.4"``, ``"1 (restating 4.2)"``): those whose heading names the paper's
    figure or table; else those that open with one of the row's section numbers (``## 3.1
    Relative position``) or name it (``(Section 4.3, Figure 5)``, ``(Sections 4.4-4.5,
    ...)``); else, where the notebook's ``title`` names that section (``Sections 4.1-4.2,
    Table 1``), those on the figures and tables the title names; none otherwise."""
    def on(named):
        return [s for s in secs if any(_covers(s.title, w, n) for w, n in named)]

    hit = on(re.findall(r"\b(Figure|Table) (\d+)", section))
    if hit:
        return _innermost(hit)
    nums = re.findall(r"(?<![\d.])(\d+\.\d+)(?![\d.])", section)
    hit = [s for s in secs if any(s.title.startswith(f"{n} ") or _covers(s.title, "Section", n)
                                  for n in nums)]
    if hit or not any(_covers(title, "Section", n) for n in nums):
        return _innermost(hit)
    return _innermost(on(re.findall(r"\b(Figure|Table)s? (\d+)", title)))


def _innermost(secs: list[Section]) -> list[Section]:
    """``secs`` without those that hold another of them (``## Fine-tuning (Table 1)`` gives
    way to its ``### Table 1 beside the paper``)."""
    return [s for s in secs if not any(o is not s and s.start <= o.start and o.end <= s.end
                                       for o in secs)]


@dataclass
class Page:
    """A notebook page as the claim pages link it: its anchors, sections and title."""

    anchors: dict[str, Anchor]
    sections: list[Section]
    title: str = ""


def run_folder(root: Path, rel: Path) -> Path:
    """The run folder of a rendered notebook: ``notebooks/NN_x.ipynb`` -> ``results/``,
    ``notebooks/base/NN_x.ipynb`` -> ``results/base/``."""
    sub = Path(rel).parent.relative_to("notebooks")
    return root / "results" / sub


def outputs(root: Path, rel: Path) -> list[str]:
    """The files the run of notebook ``rel`` wrote (its provenance's ``outputs``)."""
    prov = run_folder(root, rel) / f"{Path(rel).name[:2]}_provenance.json"
    try:
        return list(json.loads(prov.read_text()).get("outputs", []))
    except (OSError, json.JSONDecodeError):
        return []


def page(root: Path, rel: Path, nb: dict | None = None) -> Page:
    """The committed notebook at ``rel``: its anchors over its run's outputs
    (:func:`notebook_anchors`) and its sections."""
    nb = nb if nb is not None else json.loads((root / rel).read_text())
    return Page(notebook_anchors(nb, Path(rel).name[:2], outputs(root, rel),
                                 run_folder(root, rel)), sections(nb), notebook_title(nb))


def notebook_title(nb: dict) -> str:
    """The notebook's first ``# `` heading."""
    for c in nb.get("cells", []):
        if c.get("cell_type") == "markdown":
            m = re.search(r"^#\s+(.*)$", _source(c), re.M)
            if m:
                return m.group(1).strip()
    return ""


def rendered(root: Path) -> list[Path]:
    """The rendered notebooks the book shows, relative to ``root``: ``notebooks/NN_*.ipynb``,
    then each profile subfolder's (:data:`analysis_utils.profiles.SUBFOLDER`)."""
    subs = ["", *sorted(set(profiles.SUBFOLDER.values()))]
    return [p.relative_to(root) for sub in subs
            for p in sorted((root / "notebooks" / sub).glob("[0-9][0-9]_*.ipynb"))]


def pages(root: str | Path | None = None, rels: list[Path] | None = None) -> dict[str, Page]:
    """``{notebook page (notebooks/…/NN_x.ipynb): Page}`` of ``rels`` (default: every
    rendered notebook the book shows)."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    rels = rels if rels is not None else rendered(root)
    return {Path(rel).as_posix(): page(root, rel) for rel in rels}


# ---------------------------------------------------------------- what each claim read

#: The ledger stage's record of the files each claim's rule read (:mod:`.ledger_stage`).
EVIDENCE_TABLE = "08_evidence.csv"


def read_files(root: str | Path | None = None) -> dict[tuple[str, str], list[str]] | None:
    """``{(model, claim id): files its rule read}`` from ``results/08_evidence.csv`` (the ledger
    stage writes every model's rows there); None where the ledger predates that file
    (:func:`analysis_utils.publish.claimpages.evidence_files` then takes each claim's declared
    tables)."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    frames = [root / "results" / EVIDENCE_TABLE]
    found = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in frames if f.is_file()]
    if not found:
        return None
    out: dict[tuple[str, str], list[str]] = {}
    for r in pd.concat(found, ignore_index=True).to_dict("records"):
        files = out.setdefault((r["model"], r["id"]), [])
        if r["file"] not in files:
            files.append(r["file"])
    return out


@dataclass(frozen=True)
class Link:
    """One evidence link: the ``files`` that land at one anchor (``href``), the ``kind`` of
    output there and ``why`` it is linked: ``"read"`` (the rule read the files), ``"drawn"``
    (a figure the cell that writes a file read draws) or ``"section"`` (an output of the
    notebook's section on the row's part of the paper, ``section``: its heading)."""

    files: tuple[str, ...]
    href: str
    kind: str
    why: str
    section: str = ""

    @property
    def label(self) -> str:
        return ", ".join(self.files)


_ORDER = {"table": 0, "figure": 1, "output": 2}


def links(files: list[str], url: str, pg: Page | None, section: str = "",
          up: str = "../") -> list[Link]:
    """The evidence links of one ledger row on the notebook page served at ``url``
    (``notebooks/NN_x.html``):

    - each file its rule read, at its anchor (files that land at one output make one link;
      a control's file whose model's file is also read and lands in the same cell is left
      out), tables first, then figures, then other outputs (data a cell writes, shown as
      its size);
    - each figure drawn by a cell that writes a file read;
    - the tables and figures of the notebook's sections on the row's ``section`` of the paper
      (:func:`claim_sections`; at most :data:`MAX_SECTION_LINKS`).

    Files no cell of the page writes are left out."""
    if pg is None:
        return []
    anchors = pg.anchors
    by_place = {}  # the files that land at each output, in the page's order, those that
    for _, a in sorted(anchors.items(),  # the output shows (a table, a figure) first
                       key=lambda x: (x[1].cell, x[1].output, _ORDER[x[1].kind], x[0])):
        by_place.setdefault((a.cell, a.output), []).append(a)

    def link(place, fs, why, title=""):
        a = next(x for x in by_place[place] if x.file == fs[0])
        return Link(tuple(fs), f"{up}{url}#{a.id}", a.kind, why, title)

    read: dict[tuple[int, int], list[str]] = {}
    for f in files:
        a = anchors.get(f)
        if a is None:
            continue
        twin = anchors.get(f.replace("_control", "_model")) if "_control" in f else None
        if twin is not None and twin.file in files and twin.cell == a.cell:
            continue
        read.setdefault((a.cell, a.output), []).append(f)
    out = sorted((link(k, fs, "read") for k, fs in read.items()),
                 key=lambda x: (_ORDER.get(x.kind, 3), x.files))
    seen = set(read)
    cells = {c for c, _ in read}
    for place, here in by_place.items():
        if place[0] in cells and place not in seen and here[0].kind == "figure":
            seen.add(place)
            out.append(link(place, [a.file for a in here if a.kind == "figure"], "drawn"))
    shown = 0
    for sec in claim_sections(pg.sections, section, pg.title):
        for place, here in by_place.items():
            if (sec.start <= place[0] < sec.end and place not in seen and shown < MAX_SECTION_LINKS
                    and here[0].kind in ("table", "figure")):
                seen.add(place)
                shown += 1
                out.append(link(place, [a.file for a in here if a.kind == here[0].kind],
                                "section", sec.title))
    return out


#: The most outputs of the row's notebook sections a claim page links (the first ones).
MAX_SECTION_LINKS = 6

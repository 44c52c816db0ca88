"""Each notebook page of the book lists its claims with their verdicts (issue 53, item 3),
generated from the claims ledger when the book is built; the rendered notebooks are never
changed (:func:`analysis_utils.publish.book.notebook_for_book` puts the list in the book's
copy).

The rows a page lists are those whose claim pages' evidence link lands on it: a model's row
of notebook ``NN`` belongs to that model's render of ``NN``
(:meth:`analysis_utils.publish.readme.Run.notebook_page`: ``notebooks/NN_x.ipynb`` or
``notebooks/base/NN_x.ipynb``; notebook 08, rendered once, holds both models' rows). They go
under the heading the link's anchor names (:func:`analysis_utils.publish.readme.row_anchor`:
"Verdicts", or notebook 08's ledger section), right below it: per model a table of the claim
(linking its page, ``claims/<id>.html``), its verdict as a badge with its meaning as a
tooltip, and the ledger's one sentence of why. Each row's id is ``claim-<id>``.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from .frontpage import badge
from .readme import Run, row_anchor


def rows_by_page(df: pd.DataFrame, found: dict[str, Run], root: Path) -> dict[str, list[dict]]:
    """``{notebook page (notebooks/…/NN_x.ipynb): its ledger rows, in the ledger's order}``;
    a model with no run folder is left out (its claim pages have no evidence link either)."""
    out: dict[str, list[dict]] = {}
    for row in df.to_dict("records"):
        run = found.get(row["model"])
        if run is None:
            continue
        try:
            page = run.notebook_page(row["notebook"], root)
        except FileNotFoundError:
            continue
        out.setdefault(page, []).append(row)
    return out


def block(rows: list[dict], rel: Path) -> str:
    """The generated list of a notebook page at ``rel`` (one HTML block, no blank line): per
    model, its claims with verdict and why, each linking its claim page."""
    up = "../" * (len(Path(rel).parts) - 1)
    models = list(dict.fromkeys(r["model"] for r in rows))
    parts = ['<div class="notebook-claims">',
             f"<p>This notebook's claims and their verdicts ({len(rows)} "
             f"row{'s' if len(rows) != 1 else ''}), generated from the claims ledger "
             "(<code>results/08_claims.csv</code>) when the book is built; each claim links "
             "its page, with the test behind the verdict.</p>"]
    for model in models:
        mine = [r for r in rows if r["model"] == model]
        parts.append(f'<p class="notebook-claims-model"><strong>{html.escape(model)}</strong>'
                     f" ({len(mine)} claim{'s' if len(mine) != 1 else ''})</p>")
        parts.append('<table class="notebook-claims-table"><thead><tr><th scope="col">claim'
                     '</th><th scope="col">verdict</th><th scope="col">why</th></tr></thead>'
                     "<tbody>")
        for r in mine:
            why = r.get("why") or ""
            if str(r.get("robust", "")) == "no" and (r.get("turns_on") or
                                                      r.get("specifications")):
                frag = f"turns on {r['turns_on']}" if r.get("turns_on") else r["specifications"]
                why = f"{why} (fragile: {frag})" if why else f"fragile: {frag}"
            parts.append(
                f'<tr id="claim-{html.escape(r["id"])}" data-verdict="'
                f'{html.escape(r["verdict"])}"><td><a href="{up}claims/{html.escape(r["id"])}'
                f'.html">{html.escape(r["claim"])}</a></td><td>{badge(r["verdict"])}</td>'
                f"<td>{html.escape(why)}</td></tr>")
        parts.append("</tbody></table>")
    parts.append("</div>")
    return "".join(parts)


def _slug(heading: str) -> str:
    """MyST's heading anchor of ``heading`` (the text after ``#``s), as
    ``myst_heading_anchors`` writes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def insert(nb: dict, notebook: str, text: str) -> bool:
    """Put ``text`` right below the heading of ``nb`` whose anchor is ``row_anchor(notebook)``
    (in the book's copy of the notebook: ``nb`` is changed); whether the heading was found."""
    anchor = row_anchor(notebook)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        lines = src.split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"#{1,6}\s+(.*)", line)
            if m and _slug(m.group(1)) == anchor:
                cell["source"] = "\n".join(lines[:i + 1] + ["", text, ""] + lines[i + 1:])
                return True
    return False

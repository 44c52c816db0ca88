"""The front page tells the finding, and nothing it or the walkthrough states can go stale
(issue 53, items 3 and 5): its lines per paper and model equal what ``results/08_claims.csv``
holds, counted here apart from the code that writes them; its seed numbers are the run's;
the walkthrough's verdicts, heads and numbers, and the screenshots' record, are the ledger's;
every notebook page lists its claims with their verdicts and links their pages; and in
chromium the front page reaches the findings index in one click, where the verdicts' legend
is in view above the index."""

from __future__ import annotations

import html as htmllib
import json
import re

import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.publish import book, claimpages, frontpage, notebook_claims
from analysis_utils.publish import readme as readme_md

ROOT = paths.REPO_ROOT
VERDICTS = ("yes", "no", "inconclusive", "mixed", "untestable")


@pytest.fixture(scope="module")
def csv():
    """The ledger as committed, read with pandas alone."""
    return pd.read_csv(ROOT / "results" / "08_claims.csv", dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """The book's sources as the build lays them out (no Sphinx: a few seconds)."""
    return book.stage(ROOT, tmp_path_factory.mktemp("frontpage") / "source")


def _text(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment))


def _expected(csv: pd.DataFrame) -> dict[tuple[str, str], dict[str, int]]:
    """Per (paper, model name): the counts the front page should state, from the CSV's
    columns (``about``, ``verdict``, ``control_verdict``, ``robust``) directly."""
    out = {}
    for (paper, model), g in csv.groupby(["paper", "model"], sort=False):
        attention = g[(g["about"] != "data")
                      & ~((g["verdict"] == "yes") & (g["control_verdict"] == "yes"))]
        robust = attention["robust"] != "no"
        tested = attention["verdict"] != "untestable"
        out[(re.sub(r" \d{4}$", "", paper), model.split(" (")[0])] = {
            "yes": int(((attention["verdict"] == "yes") & robust).sum()),
            "no": int(((attention["verdict"] == "no") & robust).sum()),
            "inconclusive": int(((attention["verdict"] == "inconclusive") & robust).sum()),
            "fragile": int((tested & ~robust & (attention["verdict"] != "mixed")).sum()),
            "mixed": int((attention["verdict"] == "mixed").sum()),
            "tested": int(tested.sum()),
            "untestable": int((~tested).sum())}
    return out


_LINE = re.compile(
    r"(?P<paper>.+?) on (?P<model>\S+): (?P<yes>\d+) of (?P<tested>\d+) tested claims about "
    r"trained attention hold under every specification and draw \(yes\), (?P<no>\d+) are "
    r"refuted under every specification and draw \(no\), (?P<inconclusive>\d+) stay "
    r"inconclusive(?:, (?P<fragile>\d+) turn on a choice the paper leaves open or on a draw "
    r"\(fragile\))?"
    r"(?:, (?P<mixed>\d+) are mixed)?(?:; (?P<untestable>\d+) more are untestable here)?\.$")


def test_front_page_lines_equal_the_csv(staged, csv):
    text = (staged / "index.md").read_text()
    block = re.search(r'<ul class="front-headline">(.*?)</ul>', text).group(1)
    lines = [_text(li) for li in re.findall(r"<li>(.*?)</li>", block)]
    expected = _expected(csv)
    found = {}
    for line in lines[:-1]:
        m = _LINE.match(line)
        assert m, line
        found[(m["paper"], m["model"])] = {k: int(m[k] or 0) for k in (
            "yes", "no", "inconclusive", "fragile", "mixed", "tested", "untestable")}
    assert found == expected
    assert len(lines) == len(expected) + 1 == 5  # two papers x two models, then the rest
    for k in found.values():  # every tested row is counted once
        assert k["yes"] + k["no"] + k["inconclusive"] + k["fragile"] + k["mixed"] == k["tested"]
    apart = lines[-1]
    for model, g in csv.groupby("model", sort=False):
        data = int((g["about"] == "data").sum())
        ctrl = int(((g["about"] != "data") & (g["verdict"] == "yes")
                    & (g["control_verdict"] == "yes")).sum())
        assert (f"on {model.split(' (')[0]}, {data} data and pipeline checks" in apart
                and f") and {ctrl} yes that the random-weights control earns too" in apart), (
            model, apart)
    assert f"every claim of both papers ({csv['id'].nunique()})" in _text(text)


def test_front_page_states_the_runs_seeds_and_no_stale_text(staged):
    text = (staged / "index.md").read_text()
    params = json.loads((ROOT / "results" / "06_provenance.json").read_text())["parameters"]
    m = re.search(r"on (\d+) fine-tuning seeds per task and\s+(\d+) random-init runs", text)
    assert m, "the front page no longer states the fine-tuning seeds"
    assert int(m.group(1)) == len(params["seeds"].split(","))
    assert int(m.group(2)) == int(params["random_init"])
    assert "end with their own rows" not in text
    assert "{{" not in text and frontpage.MARKER not in text
    # the findings index one click away, with the legend beside the lines
    assert text.index('class="front-findings-link" href="findings.html#verdict-legend"') < \
        text.index("<li>")  # above the lines, right below the title
    for v in VERDICTS:
        assert f'verdict-{v}" title="{htmllib.escape(frontpage.MEANINGS[v])}"' in text


_PLACEHOLDER = re.compile(r"\{\{\s*ledger\s+(\S+)\s+(\S+)\s+(\S+)\s*\}\}")


def test_walkthrough_states_the_ledgers_verdicts_and_numbers(staged, csv):
    """Every verdict, head and number of the walkthrough is a placeholder filled from the
    ledger: the staged page shows the CSV's value for each, and the source states none of
    its own (no verdict word in code, no head label, no signed number)."""
    source = (ROOT / "book" / "walkthrough.md").read_text()
    text = (staged / "walkthrough.md").read_text()
    assert "{{" not in text
    specs = _PLACEHOLDER.findall(source)
    assert len(specs) >= 15
    for cid, model, field in specs:
        row = csv[(csv["id"] == cid) & csv["model"].str.contains(model, regex=False)]
        assert len(row) == 1, (cid, model)
        value = row.iloc[0][field]
        if field in ("verdict", "control_verdict"):
            assert f'>{value}</span>' in text, (cid, model, field, value)
        else:
            assert value and _text(value) in text.replace("\\", ""), (cid, model, field)
    bare = _PLACEHOLDER.sub("", source)
    assert not re.findall(r"`(?:yes|no|inconclusive|mixed|untestable)`", bare)
    assert not re.findall(r"(?<![\w#-])\d{1,2}-\d{1,2}(?![\w-])", bare)
    assert not re.findall(r"[+-]\d+\.\d", bare)
    assert "3-notebook-verdicts" not in source  # the screenshot of a table that is gone
    for png in re.findall(r"\]\((walkthrough/[^)]+\.png)\)", source):
        assert (ROOT / "book" / png).is_file(), png


def test_walkthrough_screenshots_show_what_the_ledger_says(csv):
    """``shoot.py`` records each screenshot's claim and its verdicts when it was taken; a
    verdict, control verdict or head the ledger no longer gives fails here (re-run
    ``python book/walkthrough/shoot.py`` after ``make book``)."""
    shots = json.loads((ROOT / "book" / "walkthrough" / "shots.json").read_text())
    pngs = {p.stem for p in (ROOT / "book" / "walkthrough").glob("*.png")}
    assert set(shots) == pngs
    for shot, rec in shots.items():
        rows = csv[csv["id"] == rec["claim"]]
        now = {r["model"]: {k: r[k] for k in ("verdict", "control_verdict", "heads")}
               for r in rows.to_dict("records")}
        assert rec["models"] == now, shot


def test_a_notebook_without_its_verdicts_heading_is_refused():
    nb = {"cells": [{"cell_type": "markdown", "source": "# 01 · x\n"},
                    {"cell_type": "markdown", "source": "## Verdicts\n\nElsewhere."}]}
    assert notebook_claims.insert(nb, "01", "<div>rows</div>")
    assert nb["cells"][1]["source"].startswith("## Verdicts\n\n<div>rows</div>\n")
    assert not notebook_claims.insert({"cells": [nb["cells"][0]]}, "01", "x")
    with pytest.raises(ValueError, match="no heading #verdicts"):
        from pathlib import Path

        book.notebook_for_book({"cells": [{"cell_type": "markdown", "source": "# 01 · x"}]},
                               Path("notebooks/01_x.ipynb"), None, claims="<div></div>")


@pytest.fixture(scope="module")
def site(book_site):
    """The site built once for the session (``tests/conftest.py``)."""
    return book_site


def test_every_notebook_page_lists_its_claims(site):
    """Each ledger row is listed, with its verdict and its sentence of why, on the page its
    claim page's evidence link lands on, under that anchor, linking back to its claim
    page."""
    df = claimpages.ledger(ROOT)
    found = readme_md.runs()
    listed = 0
    pages = {}
    for row in df.to_dict("records"):
        nb = found[row["model"]].notebook_page(row["notebook"], ROOT)
        if nb not in pages:
            pages[nb] = (site / nb).with_suffix(".html").read_text()
        page = pages[nb]
        anchor = readme_md.row_anchor(row["notebook"])
        assert f'id="{anchor}"' in page, nb
        tr = re.search(rf'<tr id="claim-{re.escape(row["id"])}"[^>]*>(.*?)</tr>', page[
            page.index(f'id="{anchor}"'):], re.S)
        assert tr, (nb, row["id"])
        up = "../" * (nb.count("/"))
        assert f'href="{up}claims/{row["id"]}.html"' in tr.group(1), (nb, row["id"])
        assert f'>{row["verdict"]}</span>' in tr.group(1), (nb, row["id"])
        assert htmllib.escape(row["why"]) in tr.group(1), (nb, row["id"])
        listed += 1
    assert listed == len(df)
    assert len(pages) == len(book.notebooks(ROOT))  # no notebook page without its claims
    for page in pages.values():
        assert "The verdicts are not computed here" not in page.split('id="claim-', 1)[0][-4000:]


def test_front_page_reaches_the_findings_index_and_its_legend_in_one_click(site, chromium):
    """One click from the front page lands on the findings page with the verdicts' legend
    in view and the index right below it; the front page's badges carry their meaning as a
    tooltip."""
    for width in (1280, 390):
        context = chromium.new_context(viewport={"width": width, "height": 800})
        off: list[str] = []

        def route(r, off=off):
            if r.request.url.startswith(("file:", "data:", "about:", "blob:")):
                r.continue_()
            else:
                off.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.goto((site / "index.html").as_uri())
        link = page.locator("article a.front-findings-link")
        box = link.bounding_box()
        assert box and box["y"] + box["height"] < 800, f"the link is {box} down at {width} px"
        titles = page.eval_on_selector_all(".front-findings .verdict",
                                           "els => els.map(e => [e.textContent, e.title])")
        assert {t for t, _ in titles} == set(VERDICTS)
        assert all(tip == frontpage.MEANINGS[v] for v, tip in titles), titles
        link.click()
        page.wait_for_load_state()
        assert page.url.endswith("findings.html#verdict-legend")
        legend = page.locator("#verdict-legend")
        assert legend.is_visible()
        shown = page.evaluate("""() => {
            const r = document.querySelector('#verdict-legend').getBoundingClientRect();
            const t = document.querySelector('table.findings-index').getBoundingClientRect();
            return {top: r.top, bottom: r.bottom, index: t.top, h: window.innerHeight};
        }""")
        assert 0 <= shown["top"] < shown["h"], shown
        assert shown["index"] - shown["bottom"] < 400, shown  # the index right below it
        words = legend.inner_text()
        for v in VERDICTS:
            assert v in words
        assert "control's no is the good outcome" in words
        assert off == []
        context.close()

"""The book (``make book``, :mod:`analysis_utils.publish.book`): it builds from the committed
files with Sphinx (warnings are errors), every rendered notebook has its page with Binder and
Colab buttons, no internal link is broken, the findings link every ledger row to its notebook
and every head to the atlas, and the front page and the offline search work in Debian's
chromium. One build for the module (about 20 s here)."""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest

from analysis_utils import paths
from analysis_utils.publish import book, claimpages, evidence, links
from analysis_utils.publish import readme as readme_md


@pytest.fixture(scope="module")
def site(book_site):
    """The site built once for the session (``tests/conftest.py``)."""
    return book_site


def test_the_book_builds_with_its_pages(site):
    for page in ("index", "findings", "atlas", "search", "methods/data", "methods/runplan",
                 "methods/performance", "methods/architecture", "methods/tests",
                 "methods/limitations", "methods/cite"):
        assert (site / f"{page}.html").is_file(), f"no page {page}.html"
    assert (site / "searchindex.js").is_file()  # Sphinx's offline search index
    for name in book.atlas_pages(paths.REPO_ROOT):
        assert (site / name).is_file(), name


def test_every_notebook_has_a_page_with_its_outputs_and_launch_buttons(site):
    repo, branch = links.published()
    rendered = book.notebooks(paths.REPO_ROOT)
    assert len(rendered) >= 13  # 01-08 and base 01-05
    for nb in rendered:
        page = site / nb.with_suffix(".html")
        assert page.is_file(), f"{nb} has no page in the book"
        html = page.read_text()
        assert f"https://mybinder.org/v2/gh/{repo}/{branch}?urlpath=lab/tree/{nb}" in html, nb
        assert f"https://colab.research.google.com/github/{repo}/blob/{branch}/{nb}" in html, nb
        assert "cell_output" in html, f"{nb}: no outputs on its page"


def test_no_internal_link_is_broken(site):
    assert book.broken_links(site) == []


def test_findings_index_every_claim_and_its_page_links_its_evidence(site):
    """The findings index has one row per claim with its anchor and its page; each page links
    every model's row to its line in the list of claims of that model's notebook (the
    outputs it read are linked beside it: tests/test_evidence.py) and every head it names to
    that model's atlas, on the claim's property."""
    ledger = claimpages.ledger()
    cs = claimpages.claims(ledger)
    html = (site / "findings.html").read_text()
    assert re.findall(r'<tr id="([^"]+)"', html) == [c.id for c in cs]
    assert re.findall(r'href="claims/([^"#]+)\.html"', html) == [c.id for c in cs]
    found = readme_md.runs()
    verdict_links = atlas_links = 0
    for c in cs:
        page = (site / "claims" / f"{c.id}.html").read_text()
        for model, row in c.rows.items():
            nb = found[model].notebook_page(row["notebook"], paths.REPO_ROOT)
            link = f'href="../{nb[:-len(".ipynb")]}.html#claim-{c.id}"'
            assert link in page, (c.id, model, link)
            verdict_links += 1
            atlas = found[model].atlas_page(paths.REPO_ROOT)
            for head in (h.strip() for h in row["heads"].split(",") if h.strip()):
                assert f'href="../{atlas}#{head}&amp;p=' in page, (c.id, model, head)
                atlas_links += 1
    assert verdict_links == len(ledger)
    assert atlas_links == sum(len([h for h in r.split(",") if h.strip()])
                              for r in ledger["heads"]) > 0


def test_a_claims_atlas_links_name_its_property():
    rows = claimpages.ledger().to_dict("records")
    coref = next(r for r in rows if r["notebook"] == "03" and r["heads"])
    assert claimpages.atlas_property(coref).startswith("03.")
    syntax = next(r for r in rows if r["notebook"] == "02" and r["this_run"].startswith("nsubj"))
    assert claimpages.atlas_property(syntax) == "02.nsubj.dep2head"


def test_the_interval_figure_reads_the_notes_numbers():
    note = ("1,882 words; the interval [-0.007659, 0.04273] holds both the null 0 and the "
            "paper's effect 0.002")
    n = claimpages.interval_numbers(note)
    assert n == {"lo": -0.007659, "hi": 0.04273, "null": 0.0, "paper": 0.002}
    svg = claimpages.interval_svg(n, "x")
    assert svg.startswith("<svg") and "null 0" in svg and "paper 0.002" in svg
    assert claimpages.interval_numbers("no interval here") is None


def _open(chromium, url: str):
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    return page, errors, requests


def test_front_page_loads_in_chromium_offline_without_errors(site, chromium):
    page, errors, requests = _open(chromium, (site / "index.html").as_uri())
    page.wait_for_selector("nav.bd-links a[href='findings.html']")
    assert errors == []
    assert [u for u in requests if not u.startswith("file://")] == []
    assert "make reproduce" in page.inner_text("article")
    page.close()


def test_search_works_offline(site, chromium):
    page, errors, _ = _open(chromium, (site / "search.html").as_uri() + "?q=coreference")
    page.wait_for_selector("#search-results ul.search li", timeout=20_000)
    found = page.eval_on_selector_all("#search-results ul.search li a",
                                      "as => as.map(a => a.getAttribute('href'))")
    assert any("03_coreference" in h for h in found), found
    assert errors == []
    page.close()


def test_broken_links_finds_missing_files_and_anchors(tmp_path):
    (tmp_path / "atlas").mkdir()
    (tmp_path / "atlas" / "m.html").write_text("<p>atlas</p>")
    (tmp_path / "b.html").write_text('<h1 id="top">b</h1>')
    (tmp_path / "index.html").write_text(
        '<a href="b.html#top">ok</a> <a href="b.html#gone">no anchor</a> '
        '<a href="missing.html">no file</a> <img src="img/x.png"> '
        '<a href="https://example.org/x">external</a> <a href="#here">here</a> '
        '<span id="here"></span> <a href="atlas/m.html#3-9">head</a> '
        '<a href="atlas/m.html#nsubj">not a head</a> <a href="../outside.html">out</a>')
    (tmp_path.parent / "outside.html").write_text("outside the site")
    assert book.broken_links(tmp_path) == [
        "index.html: b.html#gone", "index.html: missing.html", "index.html: img/x.png",
        "index.html: atlas/m.html#nsubj", "index.html: ../outside.html"]


def test_stage_copies_what_changed_and_drops_what_went(tmp_path):
    source = tmp_path / "source"
    book.stage(paths.REPO_ROOT, source)
    index = source / "index.md"
    mtime = index.stat().st_mtime_ns
    (source / "gone.md").write_text("no longer in book/")
    book.stage(paths.REPO_ROOT, source)
    assert index.stat().st_mtime_ns == mtime  # unchanged: not copied again
    assert not (source / "gone.md").exists()
    for nb in book.notebooks(paths.REPO_ROOT):
        assert (source / nb).is_file(), nb


def test_every_slow_test_file_is_named_on_the_tests_page():
    """The slow tier (`make test-all` only) is listed where a reader looks for it, with what
    guards the same path in `make test`."""
    page = (paths.REPO_ROOT / "book" / "methods" / "tests.md").read_text()
    slow = sorted(p.name for p in (paths.REPO_ROOT / "tests").glob("test_*.py")
                  if re.search(r"pytest\.mark\.slow\b", p.read_text()))
    assert "tests/test_paper_profile.py" in [f"tests/{n}" for n in slow]
    for name in slow:
        assert f"`tests/{name}`" in page, (f"tests/{name} is marked slow: list it on "
                                          "book/methods/tests.md")


# ---------------------------------------------------------------- evidence that lands
# (issue 53, item 3; analysis_utils/publish/evidence.py, tests/test_evidence.py)

_LINK = re.compile(r'<a class="evidence-link" data-kind="(\w+)" data-why="(\w+)" '
                   r'href="\.\./([^"#]+)#([^"]+)"')


def _after_anchor(page_html: str, anchor: str) -> str:
    """The HTML of the output right below the anchor output holding ``anchor``."""
    i = page_html.index(f'id="{anchor}"')
    j = page_html.index("</div></div>", i) + len("</div></div>")
    rest = page_html[j:].lstrip()
    k = rest.find('<div class="output', 1)
    return rest[:k if k > 0 else 4000]


def test_every_evidence_link_lands_on_its_kind_of_output(site):
    """Every anchor a claim page links is on the notebook's page; a link that says table
    lands right above a table, one that says figure right above an image; every claim page
    links each model's row to its line in the notebook page's list of claims; and most
    claim pages link a table or a figure."""
    cs = claimpages.claims(claimpages.ledger())
    pages: dict[str, str] = {}
    with_output = 0
    for c in cs:
        text = (site / "claims" / f"{c.id}.html").read_text()
        assert text.count('class="claim-evidence"') == len(c.rows), c.id
        assert text.count(f'#claim-{c.id}"') >= len(c.rows), c.id
        found = _LINK.findall(text)
        for kind, _why, page, anchor in found:
            if page not in pages:
                pages[page] = (site / page).read_text()
            assert f'id="{anchor}"' in pages[page], (c.id, page, anchor)
            below = _after_anchor(pages[page], anchor)
            if kind == "figure":
                assert below.startswith("<img"), (c.id, anchor, below[:200])
            elif kind == "table":
                assert "<table" in below, (c.id, anchor, below[:200])
        with_output += any(k in ("table", "figure") for k, *_ in found)
    assert with_output >= 2 * len(cs) // 3, (with_output, len(cs))


def test_the_committed_notebooks_are_not_changed_and_each_output_is_anchored_once(site):
    for rel in book.notebooks(paths.REPO_ROOT):
        committed = json.loads((paths.REPO_ROOT / rel).read_text())
        assert "evidence-anchor" not in json.dumps(committed), rel
        text = (site / rel.with_suffix(".html")).read_text()
        ids = re.findall(r'<a id="(out-[^"]+)" class="evidence-anchor">', text)
        assert len(ids) == len(set(ids)), rel
        pg = evidence.page(paths.REPO_ROOT, rel)
        assert sorted(htmllib.unescape(i) for i in ids) == sorted(a.id for a in pg.anchors.values())


def test_a_page_whose_source_is_gone_is_removed(tmp_path):
    """Sphinx never deletes the page of a deleted source: a claim renamed in the ledger would
    leave its old page, and its broken links, in an incremental build. book.remove_orphans
    deletes such pages and keeps every page a source, a copied extra or Sphinx itself makes."""
    source, out = tmp_path / "source", tmp_path / "html"
    for rel in ("index.md", "claims/kept.md", "notebooks/01_x.ipynb",
                "_extra/figures/atlas/m.html"):
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text("x")
    for rel in ("index.html", "claims/kept.html", "claims/renamed.html", "notebooks/01_x.html",
                "figures/atlas/m.html", "search.html", "genindex.html", "_static/x.html"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("x")
    assert [p.as_posix() for p in book.remove_orphans(source, out)] == ["claims/renamed.html"]
    assert not (out / "claims" / "renamed.html").exists()
    assert (out / "claims" / "kept.html").exists() and (out / "_static" / "x.html").exists()

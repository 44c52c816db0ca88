"""The book (``make book``, :mod:`analysis_utils.publish.book`): it builds from the committed
files with Sphinx (warnings are errors), every rendered notebook has its page with Binder and
Colab buttons, no internal link is broken, the findings link every ledger row to its notebook
and every head to the atlas, and the front page and the offline search work in Debian's
chromium. One build for the module (about 20 s here)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.publish import book, links
from analysis_utils.publish import readme as readme_md


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built once; without the book's packages this fails naming the install."""
    folder = tmp_path_factory.mktemp("book")
    return book.build(out=folder / "html", source=folder / "source")


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


def test_findings_link_every_ledger_row_and_head(site):
    ledger = pd.read_csv(paths.RESULTS_DIR / "08_claims.csv", dtype=str, keep_default_na=False)
    html = (site / "findings.html").read_text()
    verdict_links = re.findall(r'href="(notebooks/[^"#]+\.html)#verdicts"', html)
    ledger_links = re.findall(r'href="(notebooks/08_[^"#]+\.html)#'
                              + readme_md.ROW_ANCHORS["08"] + '"', html)
    assert len(verdict_links) == (ledger["notebook"] != "08").sum()
    assert len(ledger_links) == (ledger["notebook"] == "08").sum() > 0
    heads = sum(len([h for h in row.split(",") if h.strip()]) for row in ledger["heads"])
    atlas_links = re.findall(r'href="atlas/[^"#]+\.html#(\d+-\d+)"', html)
    assert len(atlas_links) == heads > 0


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

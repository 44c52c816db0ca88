"""The book as a reader meets it, in Debian's chromium with the network blocked (issue 42):
no raw Markdown table and no page wider than the window at 1280 and 390 px, no request off
the machine, math rendered from the local MathJax, the findings index's verdicts in view
with an anchor per claim and filters that work, and a claim page that opens the atlas on
the claim's head and property. The build is shared with tests/test_book.py; every page is
opened at 390 px, and every page but most claim pages (one template) at 1,280 px."""

from __future__ import annotations

import re

import pytest

from analysis_utils.publish import book, claimpages

WIDTHS = (1280, 390)
#: A Markdown table's delimiter row left as text: ``|:----|`` or ``| --- |``.
RAW_TABLE = re.compile(r"^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$", re.M)


@pytest.fixture(scope="module")
def site(book_site):
    """The site built once for the session (``tests/conftest.py``)."""
    return book_site


#: Claim pages opened at the wide width: they share one template, and the narrow width,
#: where all of them are opened, is the one that binds (keeps the tests near a minute).
WIDE_CLAIM_SAMPLE = 12


def _pages(site, width: int | None = None):
    pages = [p for p in sorted(site.rglob("*.html"))
             if p.relative_to(site).parts[0] not in ("_static", "_sources")]
    if width is not None and width > min(WIDTHS):
        claims = [p for p in pages if p.relative_to(site).parts[0] == "claims"]
        keep = set(claims[::max(1, len(claims) // WIDE_CLAIM_SAMPLE)])
        pages = [p for p in pages if p not in claims or p in keep]
    return pages


class Offline:
    """A page whose every request off the machine is aborted and recorded."""

    def __init__(self, chromium, width: int):
        self.context = chromium.new_context(viewport={"width": width, "height": 900})
        self.off, self.errors = [], []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _route(self, route):
        if route.request.url.startswith(("file://", "data:", "blob:", "about:")):
            route.continue_()
        else:
            self.off.append(route.request.url)
            route.abort()

    def close(self):
        self.context.close()


@pytest.fixture(scope="module", params=WIDTHS, ids=lambda w: f"{w}px")
def sweep(request, site, chromium):
    """Every page of the book and atlas opened at one width: ``{page: measures}``, and the
    off-machine requests and script errors of the whole sweep."""
    width = request.param
    tab = Offline(chromium, width)
    measures = {}
    for path in _pages(site, width):
        rel = path.relative_to(site).as_posix()
        tab.page.goto(path.as_uri(), wait_until="load")
        measures[rel] = tab.page.evaluate("""() => {
            const a = document.querySelector('article') || document.body;
            return {scroll: document.documentElement.scrollWidth,
                    client: document.documentElement.clientWidth,
                    raw: a.innerText,
                    wideImages: [...document.images].filter(i => i.naturalWidth > 2000)
                                    .map(i => i.getAttribute('src'))};
        }""")
    result = {"width": width, "pages": measures, "off": list(tab.off),
              "errors": list(tab.errors)}
    tab.close()
    return result


def test_every_page_was_opened(sweep, site):
    assert len(sweep["pages"]) == len(_pages(site, sweep["width"])) > 40
    if sweep["width"] == min(WIDTHS):
        assert len(sweep["pages"]) == len(_pages(site)) > 100


def test_no_raw_markdown_table_on_any_page(sweep):
    raw = {page: RAW_TABLE.search(m["raw"]).group(0).strip()[:40]
           for page, m in sweep["pages"].items() if RAW_TABLE.search(m["raw"])}
    assert raw == {}


def test_no_page_is_wider_than_the_window(sweep):
    wide = {page: m["scroll"] for page, m in sweep["pages"].items()
            if m["scroll"] > m["client"]}
    assert wide == {}, f"at {sweep['width']} px, wider than {sweep['width']}: {wide}"


def test_no_request_leaves_the_machine(sweep):
    assert sweep["off"] == []
    assert sweep["errors"] == []


def test_no_figure_is_wider_than_2000_px(sweep):
    assert {p: m["wideImages"] for p, m in sweep["pages"].items() if m["wideImages"]} == {}


def test_math_is_rendered_from_the_local_mathjax(site, chromium):
    tab = Offline(chromium, 1280)
    page = tab.page
    page.goto((site / "notebooks" / "05_head_clustering.html").as_uri())
    page.wait_for_function("() => window.MathJax && MathJax.Hub && MathJax.Hub.queue "
                           "&& MathJax.Hub.queue.pending === 0 && MathJax.Hub.queue.running "
                           "=== 0", timeout=30_000)
    page.wait_for_selector(".MathJax, .MathJax_Display, .MathJax_CHTML", state="attached",
                           timeout=30_000)
    scripts = page.eval_on_selector_all("script[src*='MathJax']", "s => s.map(x => x.src)")
    assert scripts and all(s.startswith("file://") for s in scripts), scripts
    assert tab.off == []
    tab.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_every_findings_verdict_is_in_view_with_an_anchor(site, chromium, width):
    tab = Offline(chromium, width)
    page = tab.page
    page.goto((site / "findings.html").as_uri())
    rows = page.evaluate("""() => [...document.querySelectorAll('table.findings-index tbody tr')]
        .map(tr => ({id: tr.id, verdicts: [...tr.querySelectorAll('.verdict')].map(v => {
            const r = v.getBoundingClientRect(); return {left: r.left, right: r.right}; })}))""")
    cs = claimpages.claims(claimpages.ledger())
    assert [r["id"] for r in rows] == [c.id for c in cs]
    assert len(set(r["id"] for r in rows)) == len(rows)
    for r in rows:
        assert r["verdicts"], r["id"]
        for v in r["verdicts"]:
            assert 0 <= v["left"] and v["right"] <= width, (width, r)
    # the header stays in view when the reader scrolls down the index
    page.evaluate("document.querySelector('table.findings-index tbody tr:nth-child(60)')"
                  ".scrollIntoView()")
    top, bar = page.evaluate("[document.querySelector('table.findings-index thead th')"
                             ".getBoundingClientRect().top, document.querySelector("
                             "'.bd-header-article').getBoundingClientRect().bottom]")
    assert abs(top - bar) <= 1, (top, bar)  # just below the theme's sticky bar, no gap
    # a claim's anchor opens at its row, below the sticky header
    target = cs[40].id
    page.goto((site / "findings.html").as_uri() + f"#{target}")
    box, head = page.evaluate(f"[document.getElementById('{target}').getBoundingClientRect()"
                              ".top, document.querySelector('table.findings-index thead th')"
                              ".getBoundingClientRect().bottom]")
    assert head <= box < 900, (head, box)
    assert tab.off == []
    tab.close()


def test_findings_filters_by_paper_notebook_verdict_and_model(site, chromium):
    tab = Offline(chromium, 1280)
    page = tab.page
    page.goto((site / "findings.html").as_uri())
    cs = claimpages.claims(claimpages.ledger())

    def shown():
        return page.eval_on_selector_all("table.findings-index tbody tr:not(.hidden)",
                                         "trs => trs.map(t => t.id)")

    assert len(shown()) == len(cs)
    page.select_option("select[data-filter=notebook]", "03")
    assert shown() == [c.id for c in cs if c.notebook == "03"]
    page.select_option("select[data-filter=notebook]", "")
    page.select_option("select[data-filter=paper]", "Kovaleva")
    assert shown() == [c.id for c in cs if c.paper.startswith("Kovaleva")]
    page.select_option("select[data-filter=paper]", "")
    page.select_option("select[data-filter=model]", "mpnet")
    page.select_option("select[data-filter=verdict]", "no")
    want = [c.id for c in cs for m, r in c.rows.items()
            if "mpnet" in m and r["verdict"] == "no"]
    assert shown() == want
    assert "verdict=no" in page.url and "model=mpnet" in page.url
    tab.close()


def test_front_page_to_a_claim_and_its_head_in_the_atlas(site, chromium):
    """Three clicks: front page -> findings -> the claim's page -> the head in the atlas,
    opened on the property the claim is about (coreference, not syntax)."""
    cid = claimpages.claim_id("03", "the best head beats the nearest mention")
    tab = Offline(chromium, 390)
    page = tab.page
    page.goto((site / "index.html").as_uri())
    page.click("article a[href='findings.html']")
    page.click(f"tr[id='{cid}'] a")
    page.wait_for_selector(".claim-verdicts")
    verdicts = page.inner_text(".claim-verdicts")
    assert "all-MiniLM-L6-v2" in verdicts and "all-mpnet-base-v2" in verdicts
    page.click("a.atlas-head[href*='all-MiniLM-L6-v2']")
    page.wait_for_selector("#detail[data-selected='3-10']")
    assert "p=03.all.All" in page.url
    assert page.evaluate("document.querySelector('#detail').dataset.selected") == "3-10"
    assert tab.off == []
    tab.close()


def test_search_finds_head_labels_and_claim_wording(site, chromium):
    tab = Offline(chromium, 1280)
    page = tab.page

    def found(query):
        page.goto((site / "search.html").as_uri() + "?q=" + query.replace(" ", "+"))
        page.wait_for_selector("#search-results ul.search li", timeout=20_000)
        # Sphinx lists results one by one and writes its summary after the last one: read
        # the list only then (reading it earlier saw only the first few results)
        page.wait_for_function("() => { const s = document.querySelector("
                               "'#search-results .search-summary');"
                               " return s && s.textContent.startsWith('Search finished'); }",
                               timeout=20_000)
        return page.eval_on_selector_all("#search-results ul.search li a",
                                         "as => as.map(a => a.getAttribute('href'))")

    assert "notebooks/03_coreference.html" in found("3-10")
    by_over = found("by over 10 points")
    assert "claims/03-the-best-head-beats-head-word-match-by-over-10-points.html" in by_over[:3]
    titles = found("coreference")
    assert "notebooks/03_coreference.html" in titles
    assert "notebooks/base/03_coreference.html" in titles
    tab.close()


def test_search_from_files_ranks_notebook_03_first_and_shows_snippets(site, chromium):
    """Opened from files, a search lists a snippet of each page under its title (Sphinx's
    own fetches the page, which chromium refuses for a file), and "coreference" lists
    notebook 03 first: its keywords (its file name's words) count with its title, and a
    chapter whose headline holds the query ranks above pages that only mention it."""
    tab = Offline(chromium, 1280)
    page = tab.page
    page.goto((site / "search.html").as_uri() + "?q=coreference")
    page.wait_for_function("() => { const s = document.querySelector("
                           "'#search-results .search-summary');"
                           " return s && s.textContent.startsWith('Search finished'); }",
                           timeout=20_000)
    results = page.eval_on_selector_all(
        "#search-results ul.search > li",
        "ls => ls.map(l => ({href: l.querySelector('a').getAttribute('href'),"
        " snippet: (l.querySelector('p.context') || {}).textContent || '',"
        " marked: [...l.querySelectorAll('p.context .highlighted')]"
        ".map(s => s.textContent.toLowerCase())}))")
    assert len(results) > 3
    hrefs = [r["href"] for r in results]
    assert hrefs[0] in ("notebooks/03_coreference.html", "notebooks/base/03_coreference.html"), \
        hrefs[:5]
    assert set(hrefs[:2]) == {"notebooks/03_coreference.html",
                              "notebooks/base/03_coreference.html"}, hrefs[:5]
    assert hrefs.index("notebooks/02_syntax_heads.html") > 1
    for r in results:
        assert len(r["snippet"]) > 40, r
        assert "corefer" in r["snippet"].lower(), r
        assert any(m.startswith("corefer") for m in r["marked"]), r
    assert "coreference" in results[0]["snippet"].lower()
    assert tab.errors == [] and tab.off == []
    tab.close()


def test_titles_are_unique_and_name_the_model(site):
    titles = {}
    for nb in book.notebooks(book.paths.REPO_ROOT):
        html = (site / nb.with_suffix(".html")).read_text()
        title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
        titles[title] = nb
        model = "all-mpnet-base-v2" if "base" in nb.parts else "all-MiniLM-L6-v2"
        assert model in title, (nb, title)
        colab = re.findall(r'href="(https://colab\.research\.google\.com/github/[^"]+)"', html)
        assert colab and all(u.endswith(nb.as_posix()) for u in colab), (nb, colab)
    assert len(titles) == len(book.notebooks(book.paths.REPO_ROOT))


def test_an_atlas_card_in_the_book_links_back_to_its_claim_and_notebook(site, chromium):
    tab = Offline(chromium, 1280)
    page = tab.page
    page.goto((site / "atlas" / "all-MiniLM-L6-v2.html").as_uri() + "#3-10&p=03.all.All")
    page.wait_for_selector("#detail[data-selected='3-10']")
    cards = page.eval_on_selector_all("#detail .claim a.claim-page",
                                      "as => as.map(a => a.getAttribute('href'))")
    assert cards and all(h.startswith("../claims/03-") for h in cards), cards
    notebooks = page.eval_on_selector_all("#detail .claim a.claim-notebook",
                                          "as => as.map(a => a.getAttribute('href'))")
    # each card's notebook link opens that claim's row of the notebook page's claims list
    ids = [h.rsplit("/", 1)[1].removesuffix(".html") for h in cards]
    assert notebooks == [f"../notebooks/03_coreference.html#claim-{i}" for i in ids]
    nb_page = (site / "notebooks" / "03_coreference.html").read_text()
    assert all(f'id="claim-{i}"' in nb_page for i in ids)
    # the cross-model link stays inside the book
    other = page.get_attribute("#detail .cross a[data-match='role']", "href")
    assert other.startswith("all-mpnet-base-v2.html#")
    page.click("#detail .claim a.claim-page")
    page.wait_for_selector(".claim-verdicts")
    assert "/claims/03-" in page.url
    assert tab.off == []
    tab.close()


def test_a_claim_page_says_why_above_the_figure_of_its_rule(site, chromium):
    """Issue 53, items 1-2: each model's section opens on its verdict, what it means and
    why, above the figure of the rule, which draws the null; a control's `no` does not wear
    a failed claim's badge; a per-task row folds its per-seed numbers away."""
    tab = Offline(chromium, 390)
    page = tab.page
    cid = claimpages.claim_id("01", "heads attend to [SEP] more from [SEP] than from other "
                                    "tokens")
    page.goto((site / "claims" / f"{cid}.html").as_uri())
    page.wait_for_selector(".claim-why .why")
    why = page.locator(".claim-why .why").first
    figure = page.locator("figure.claim-rule svg.rule:visible").first
    assert why.inner_text().startswith("Why.")
    assert why.bounding_box()["y"] + why.bounding_box()["height"] <= figure.bounding_box()["y"]
    assert figure.locator("line.null").count() >= 1
    assert "null 0" in figure.locator("text.null-label").first.text_content()
    assert page.locator(".claim-why .control .verdict-control").count() >= 1
    assert page.locator(".claim-why .control .verdict-no").count() == 0
    cid = claimpages.claim_id("06", "the last two layers change most with fine-tuning")
    page.goto((site / "claims" / f"{cid}.html").as_uri())
    page.wait_for_selector("table.claim-tasks")
    shown = page.locator("figure.claim-rule svg.rule:visible").first
    assert shown.locator("rect.bar").count() == 4  # MRPC, STS-B, SST-2, RTE, seeds pooled
    assert not page.locator("details.claim-numbers").first.evaluate("d => d.open")
    assert not page.locator("details.claim-numbers .claim-detail").first.is_visible()
    assert tab.errors == [] and tab.off == []
    tab.close()


#: Claim pages whose evidence links are clicked: a figure and a table the test read or its
#: cell draws, a table of the paper's that the notebook's section shows.
EVIDENCE_CLAIMS = [("01", "some heads put >= 50% of their attention on the previous token"),
                   ("04", "attention-only beats right-branching"),
                   ("05", "heads of the same layer have similar attention"),
                   ("03", "the best head beats the nearest mention")]


def test_an_evidence_link_lands_on_a_table_or_a_figure(site, chromium):
    """Issue 53, item 3: a claim page's evidence link opens the notebook's page scrolled to
    the output the link names, in view below the sticky header: right above an image where
    the link says figure and a table where it says table."""
    tab = Offline(chromium, 1280)
    page = tab.page
    clicked = {"table": 0, "figure": 0}
    for nb, claim in EVIDENCE_CLAIMS:
        cid = claimpages.claim_id(nb, claim)
        url = (site / "claims" / f"{cid}.html").as_uri()
        page.goto(url)
        links = page.locator("a.evidence-link[data-kind=table], a.evidence-link[data-kind=figure]")
        n = links.count()
        assert n, f"{cid}: no evidence link to a table or a figure"
        for k in range(min(n, 3)):
            page.goto(url)
            link = page.locator("a.evidence-link[data-kind=table], "
                                "a.evidence-link[data-kind=figure]").nth(k)
            kind, href = link.get_attribute("data-kind"), link.get_attribute("href")
            link.click()
            page.wait_for_url(re.compile(r".*/notebooks/.*\.html#out-"))
            page.wait_for_load_state("load")
            anchor = href.split("#", 1)[1]
            assert page.url.endswith("#" + anchor)
            got = page.evaluate("""(id) => {
                const a = document.getElementById(id);
                const box = a.closest('.output');
                const next = box.nextElementSibling;
                const r = next.getBoundingClientRect(), ar = a.getBoundingClientRect();
                const bar = document.querySelector('.bd-header-article');
                return {tag: next.tagName.toLowerCase(),
                        table: !!(next.matches('table') || next.querySelector('table')),
                        top: r.top, anchor: ar.top, height: innerHeight,
                        bar: bar ? bar.getBoundingClientRect().bottom : 0};
            }""", anchor)
            if kind == "figure":
                assert got["tag"] == "img", (cid, anchor, got)
            else:
                assert got["table"], (cid, anchor, got)
            # scrolled to it: the output starts at the anchor, below the sticky bar, in view
            assert got["bar"] - 1 <= got["anchor"] <= got["top"] <= got["anchor"] + 40, got
            assert got["top"] < got["height"] / 2, (cid, anchor, got)
            clicked[kind] += 1
    assert clicked["table"] and clicked["figure"], clicked
    assert tab.errors == [] and tab.off == []
    tab.close()

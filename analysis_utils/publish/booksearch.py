"""The book's search, opened from files: a snippet under every result, and pages named by the
query first (issue 53, item 6). A Sphinx extension (``book/conf.py`` lists it).

Sphinx's search runs in the browser on an index shipped with the site, but it writes each
result's snippet from the page itself, fetched over HTTP; a browser refuses that for a page
opened from a file, so the book listed titles only. After the build this writes
:data:`DATA`, each page's text as the search would read it (:func:`page_text`) with its
headline, and the search page loads it with a ``<script>`` tag (no fetch);
``book/_static/search-pages.js`` then writes the snippets itself and ranks the results.

Ranking: Sphinx scores a word in any section heading as high as one in the page's title, and
a word in the text lower, so notebook 03, whose title ("Attention heads as antecedent
selectors") does not say "coreference" though its name does, ranked below the syntax notebook
(tied, then sorted by title) and below pages with one section on it. A page's *headline* is
its title and its keywords (``<meta name="keywords">``: the book gives every rendered notebook
the words of its file name, :func:`notebook_keywords`); a result whose headline holds every
query term ranks above all others, a page of the table of contents before a page outside it
(the claim pages). Within each group Sphinx's own score and order stand.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

#: the generated file, relative to the site's root
DATA = "_static/search-pages-data.js"
#: the script that reads it (``book/_static``)
SCRIPT = "search-pages.js"
#: the element whose text the search shows (the theme's article; Sphinx reads [role=main],
#: which here also holds the sidebars)
_ARTICLE_CLASS = "bd-article"
_SKIP_TAGS = {"script", "style", "template"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}
_BLOCK = {"p", "div", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "pre",
          "blockquote", "dt", "dd", "caption", "figcaption", "section"}
_SPACE = re.compile(r"\s+")


class _Text(HTMLParser):
    """The text of an HTML fragment, without scripts, styles and headings' pilcrow links;
    also the ``<meta name="keywords">`` content it meets."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.skipping: list[str] = []  # the open elements whose text is dropped
        self.parts: list[str] = []
        self.keywords = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "meta" and (a.get("name") or "").lower() == "keywords":
            self.keywords = a.get("content") or ""
        if tag in _VOID:
            return
        if self.skipping and tag == self.skipping[-1]:
            self.skipping.append(tag)  # the same element nested: count it
        elif not self.skipping and (tag in _SKIP_TAGS
                                    or "headerlink" in (a.get("class") or "").split()):
            self.skipping.append(tag)
        if tag in _BLOCK:
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if self.skipping and tag == self.skipping[-1]:
            self.skipping.pop()
        if tag in _BLOCK:
            self.parts.append(" ")

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def page_text(page_html: str) -> str:
    """The text of a built page's article (its headings, prose, tables and outputs), scripts,
    styles and headings' pilcrow links dropped, whitespace collapsed: what a snippet quotes.
    A page without the theme's article gives its body's text."""
    start = page_html.find(f'<article class="{_ARTICLE_CLASS}"')
    end = page_html.rfind("</article>")
    if start < 0 or end < start:
        start = max(page_html.find("<body"), 0)
        end = len(page_html)
    p = _Text()
    p.feed(page_html[start:end])
    p.close()
    return _SPACE.sub(" ", "".join(p.parts)).strip()


def page_keywords(page_html: str) -> str:
    """The page's ``<meta name="keywords">`` content ("" when it has none)."""
    p = _Text()
    p.feed(page_html.split("</head>", 1)[0])
    return p.keywords


def notebook_keywords(rel: str | Path) -> str:
    """A rendered notebook's keywords: the words of its file name, which the compendium calls
    it by (``notebooks/03_coreference.ipynb`` -> ``"coreference"``, ``02_syntax_heads`` ->
    ``"syntax, heads"``)."""
    stem = re.sub(r"^\d+_", "", Path(rel).stem)
    return ", ".join(w for w in stem.split("_") if w)


def chapters(env) -> set[str]:
    """The pages in the book's table of contents: the root and every page a toctree lists."""
    out = {env.config.root_doc}
    for included in env.toctree_includes.values():
        out.update(included)
    return out


def pages_data(outdir: str | Path, env, builder) -> dict[str, dict]:
    """``{docname: {"h": headline (title and keywords), "c": 1 for a chapter, "t": text}}``
    for every page of the site, read from the built pages."""
    outdir = Path(outdir)
    toc = chapters(env)
    out = {}
    for doc in sorted(env.found_docs):
        path = outdir / builder.get_target_uri(doc)
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        title = env.titles[doc].astext() if doc in env.titles else ""
        keywords = page_keywords(text)
        out[doc] = {"h": " ".join(x for x in (title, keywords.replace(",", " ")) if x),
                    "c": int(doc in toc), "t": page_text(text)}
    return out


def _script(data: dict) -> str:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    # a page's text can hold "</script>"; inside a script file it is inert, but keep the file
    # safe to inline as well
    body = body.replace("</", "<\\/")
    return ("// The book's pages for its search (analysis_utils/publish/booksearch.py): "
            "generated, do not edit.\nvar BOOK_PAGES = " + body + ";\n")


def _page_context(app, pagename, templatename, context, doctree):
    if pagename == "search":
        app.add_js_file(DATA.removeprefix("_static/"))
        app.add_js_file(SCRIPT)


def _build_finished(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    path = Path(app.outdir) / DATA
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_script(pages_data(app.outdir, app.env, app.builder)), encoding="utf-8")


def setup(app):
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["DATA", "SCRIPT", "chapters", "notebook_keywords", "page_keywords", "page_text",
           "pages_data", "setup"]

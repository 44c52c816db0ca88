"""The book's search from files (:mod:`analysis_utils.publish.booksearch`, issue 53 item 6):
what a snippet quotes (a page's article text), a notebook's keywords (its file name's words)
and the generated data file; no build here (tests/test_book_browser.py searches the built
book in chromium)."""

from __future__ import annotations

import json
from pathlib import Path

from analysis_utils.publish import book, booksearch

PAGE = """<!DOCTYPE html><html><head><title>x</title>
<meta content="coreference, heads" name="keywords" />
<script>var inHead = 1;</script></head>
<body><nav class="bd-links">Sidebar words</nav>
<main role="main"><article class="bd-article">
<section id="a"><h1>03 · Antecedent selectors<a class="headerlink" href="#a">#</a></h1>
<p>Heads pick <em>coreferent</em>&nbsp;mentions &amp; more.</p>
<script>var x = "coreference in a script";</script><style>p {color: red}</style>
<table><tr><td>3-10</td><td>50.3</td></tr></table>
<img src="a.png" alt="a figure"><br>
<div><div>nested <span>text</span></div> after</div>
</section></article><aside>On this page: other words</aside></main></body></html>"""


def test_page_text_is_the_article_without_scripts_and_pilcrows():
    text = booksearch.page_text(PAGE)
    assert text == ("03 · Antecedent selectors Heads pick coreferent mentions & more. "
                    "3-10 50.3 nested text after")
    for gone in ("Sidebar", "On this page", "var x", "color", "#", "inHead"):
        assert gone not in text, gone


def test_a_page_without_the_themes_article_gives_its_body():
    assert booksearch.page_text("<html><head><title>t</title></head><body><p>a</p>"
                                "<p>b</p></body></html>") == "a b"


def test_page_keywords_read_the_meta_tag_in_either_attribute_order():
    assert booksearch.page_keywords(PAGE) == "coreference, heads"
    assert booksearch.page_keywords('<head><meta name="keywords" content="a, b"></head>'
                                    "<body><meta name='keywords' content='no'></body>") == "a, b"
    assert booksearch.page_keywords("<head></head><body></body>") == ""


def test_a_notebooks_keywords_are_its_file_names_words():
    assert booksearch.notebook_keywords("notebooks/03_coreference.ipynb") == "coreference"
    assert booksearch.notebook_keywords(Path("notebooks/base/02_syntax_heads.ipynb")) == \
        "syntax, heads"
    nb = book.notebook_for_book({"metadata": {"jupytext": {}}, "cells": []},
                                Path("notebooks/03_coreference.ipynb"), None)
    assert nb["metadata"]["myst"]["html_meta"] == {"keywords": "coreference"}
    assert nb["metadata"]["jupytext"] == {}


def test_the_data_file_is_a_script_that_cannot_close_a_script_tag():
    data = {"notebooks/03_coreference": {"h": "03 · x coreference", "c": 1,
                                         "t": "a </script> b"}}
    script = booksearch._script(data)
    assert script.startswith("//") and "</script>" not in script
    body = script.split("var BOOK_PAGES = ", 1)[1].rstrip().removesuffix(";")
    assert json.loads(body) == data

"""Sphinx configuration of the book: Jupyter Book 1's engine (Sphinx, MyST-NB, the book theme),
installed with pip (the ``book`` extra). Build it with ``make book``
(``python -m analysis_utils book``, :mod:`analysis_utils.publish.book`), which stages these
pages beside the rendered notebooks, figures and atlas pages and writes ``_book.json`` (the
published repository, from ``[tool.analysis_utils]`` in ``pyproject.toml``) before Sphinx
reads this file. No notebook is executed: the pages show the committed outputs.
"""

import json
import re
from pathlib import Path

import sphinx.search
from sphinx.search.en import SearchEnglish

_settings = json.loads((Path(__file__).parent / "_book.json").read_text())

project = "What do attention heads do? A reproduction compendium"
author = "the compendium's authors"
copyright = "the compendium's authors; MIT licence"

# analysis_utils.publish.booksearch: the search's snippets and ranking, from files
extensions = ["myst_nb", "analysis_utils.publish.booksearch"]
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "_book.json", "_extra"]
suppress_warnings = []

# Notebooks are shown as committed: never executed, outputs as rendered by `make reproduce`.
nb_execution_mode = "off"
nb_merge_streams = True
# Markdown outputs (the Verdicts tables, 06's per-task tables) are parsed as MyST, like the
# pages: MyST-NB's default, CommonMark, has no tables and showed them as `| a | b |` text.
nb_render_markdown_format = "myst"
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = "Attention heads: a reproduction compendium"
html_extra_path = ["_extra"]  # atlas/<model>.html and figures/, served as they are
# book/_static/book.css: wide tables and outputs scroll inside their own box, never the page;
# the staged _static/mathjax/ is MathJax 2.7 from the `jupyter-server-mathjax` wheel (the book
# extra), copied by the build, so math renders with no request off the machine.
html_static_path = ["_static"]
html_css_files = ["book.css", "claims.css"]
html_js_files = ["findings.js", "search-heads.js"]
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {
    "extensions": ["tex2jax.js"],  # this build of the combined config leaves it out
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                "processEscapes": True,
                # MyST-NB wraps each page in `tex2jax_ignore`; Sphinx marks its math `math`
                "processClass": "math|output_area|tex2jax_process|mathjax_process"},
    # the wheel ships the STIX-Web fonts only (as Jupyter's own pages use them)
    "HTML-CSS": {"availableFonts": [], "preferredFont": None, "webFont": "STIX-Web",
                 "imageFont": None},
    "menuSettings": {"zoom": "None"},
}
html_show_sourcelink = False
# Search reads the index shipped with the site. Sphinx's own result summaries would fetch
# each page, which a browser refuses for pages opened from files: the search page instead
# loads every page's text from _static/search-pages-data.js, and _static/search-pages.js
# writes the snippets and ranks a page named by the query first (publish/booksearch.py).
html_show_search_summary = False
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": f"https://github.com/{_settings['repository']}",
    "repository_branch": _settings["branch"],
    "path_to_docs": "",  # pages sit where the repository keeps them: notebooks/NN_x.ipynb
    "use_repository_button": True,
    "use_download_button": True,
    "launch_buttons": {
        "binderhub_url": "https://mybinder.org",
        "colab_url": "https://colab.research.google.com",
        "notebook_interface": "jupyterlab",
    },
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
# The colour mode the pages open in (the theme's switch changes it); set, so that a page opened
# from a file (no stored choice) starts in a known mode rather than logging an error.
html_context = {"default_mode": "light"}


class HeadSearch(SearchEnglish):
    """English search that also indexes head labels ("3-10", "12-1"): Sphinx's own splits
    words at "-" and drops numbers, so a reader's "3-10" found nothing
    (``_static/search-heads.js`` keeps the label whole in the query)."""

    _heads = re.compile(r"\b\d{1,2}-\d{1,2}\b")

    def split(self, input):
        return super().split(input) + self._heads.findall(input)

    def word_filter(self, word):
        return bool(self._heads.fullmatch(word)) or super().word_filter(word)

    def stem(self, word):
        return word if self._heads.fullmatch(word) else super().stem(word)


sphinx.search.languages["en"] = HeadSearch

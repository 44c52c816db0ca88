"""Sphinx configuration of the book: Jupyter Book 1's engine (Sphinx, MyST-NB, the book theme),
installed with pip (the ``book`` extra). Build it with ``make book``
(``python -m analysis_utils book``, :mod:`analysis_utils.publish.book`), which stages these
pages beside the rendered notebooks, figures and atlas pages and writes ``_book.json`` (the
published repository, from ``[tool.analysis_utils]`` in ``pyproject.toml``) before Sphinx
reads this file. No notebook is executed: the pages show the committed outputs.
"""

import json
from pathlib import Path

_settings = json.loads((Path(__file__).parent / "_book.json").read_text())

project = "What do attention heads do? A reproduction compendium"
author = "the compendium's authors"
copyright = "the compendium's authors; MIT licence"

extensions = ["myst_nb"]
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "_book.json", "_extra"]
suppress_warnings = []

# Notebooks are shown as committed: never executed, outputs as rendered by `make reproduce`.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = "Attention heads: a reproduction compendium"
html_extra_path = ["_extra"]  # atlas/<model>.html and figures/, served as they are
html_show_sourcelink = False
# Search reads the index shipped with the site; its result summaries would fetch each page,
# which a browser refuses for pages opened from files, so the results list titles only.
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

"""The Verdicts section that closes notebooks 01-07: the claims ledger's rows for the notebook,
judged on the tables its own run has just written (:func:`analysis_utils.ledger.notebook_rows`),
as a markdown table with every cell in full.

The notebooks' "paper vs. this run" tables state numbers only; whether a claim held is decided
here, by the ledger's rules (criterion, reference and test fixed in ``ledger/clark.py`` and
``ledger/kovaleva.py``), so a notebook cannot show a verdict of its own that contradicts the
ledger's (issue 21). Each row shows the unit that was resampled, the interval at the
family-corrected level, the smallest effect the test could detect (``mde``) and, for claims
about tasks, each task's verdict; verdicts are ``yes``, ``no``, ``inconclusive`` (the interval
holds both the null and the paper's effect), ``mixed`` (seeds of one task disagree) and
``untestable`` (:data:`analysis_utils.ledger.VERDICTS`).

>>> verdicts.show("02")        # the last cell of notebook 02, after run.finish() # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import ledger
from ..paths import output_dirs
from .notebook import table_view
from .report import markdown_table


def table(prefix: str, folder: str | Path | None = None) -> pd.DataFrame:
    """Notebook ``prefix``'s ledger rows (:data:`ledger.VIEW_COLUMNS`, strings as a reader sees
    them: p-values to 3 decimals, blanks as "–") from ``folder`` (default: the results folder
    of this process, where the notebook's run has just written its tables)."""
    folder = output_dirs()[0] if folder is None else Path(folder)
    return table_view(ledger.notebook_rows(prefix, folder)[ledger.VIEW_COLUMNS], digits=3)


def show(prefix: str, folder: str | Path | None = None):
    """The Verdicts cell's output: :func:`table` as rendered markdown."""
    from IPython.display import Markdown

    return Markdown(markdown_table(table(prefix, folder)))

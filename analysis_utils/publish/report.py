"""Saving tables and figures with provenance.

Each notebook opens one :class:`Run` (``run = report.start_run("01", params, models)``), saves
every table with ``run.table(df, "name")`` (``results/01_name.csv`` plus a Markdown rendering)
and every figure with ``run.figure(fig, "name")`` (``figures/01_name.png``), and ends with
``run.finish()``, which writes ``results/01_provenance.json``: parameters, model identities,
package versions, git commit, device, CPU count, wall time, peak memory, the list of files
written and, per table, the tolerance and row key that ``python -m analysis_utils compare``
uses to check a rerun against the committed table (see :mod:`analysis_utils.publish.compare`).

The book's and README's tables generated from these records (``python -m analysis_utils
report``) are :mod:`analysis_utils.publish.readme`'s.

Outputs go to ``<repo>/results`` and ``<repo>/figures`` unless ``$BERTOLOGY_OUTPUT_DIR`` is set
(the smoke profile and the tests point it elsewhere so they never overwrite committed results).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from .. import paths
from ..engine import atomic, memory
from ..paths import OUTPUT_ENV, output_dirs  # noqa: F401  (report.OUTPUT_ENV: the tests' name)

PROFILE_ENV = "BERTOLOGY_PROFILE"
MARKDOWN_MAX_ROWS = 200
_VERSIONED = ("torch", "transformers", "numpy", "pandas", "scikit-learn", "matplotlib",
              "seaborn", "conllu", "analysis_utils")


#: What a provenance's commit must describe: a change here makes outputs "-dirty".
PROVENANCE_SOURCES = ("analysis_utils", "notebooks/*.py", "pyproject.toml")


def uncommitted_sources(repo: str | os.PathLike | None = None) -> list[str] | None:
    """Tracked files of :data:`PROVENANCE_SOURCES` with uncommitted changes (staged or not) in
    the git tree ``repo`` (default: the repository); ``None`` when it is not a git tree."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                              *PROVENANCE_SOURCES], cwd=repo or paths.REPO_ROOT, check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [line[3:] for line in out.splitlines() if line.strip()]


def git_commit() -> str | None:
    """The repository's HEAD commit, with ``-dirty`` when a tracked file of
    :data:`PROVENANCE_SOURCES` has uncommitted changes (the rule ``run`` refuses by)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.REPO_ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if uncommitted_sources() else "")


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def peak_rss_mb() -> float | None:
    """Peak resident memory of this kernel so far, in MB, rounded for the provenance; None
    where the platform does not report it."""
    peak = memory.peak_rss_mb()
    return None if peak != peak else round(peak, 1)


def _escape_cell(value):
    """A cell as the Markdown table shows it: ``|`` escaped (a bare one would end the cell and
    shift every later column), line breaks as spaces; numbers and missing values untouched."""
    if isinstance(value, str):
        return value.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    return value


MISSING = "\u2013"  # how every table a reader sees shows a missing value (NaN, None, <NA>)


def markdown_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """``df`` as a GitHub-flavoured Markdown table (no index): pipes in headers and text cells
    are escaped so every row keeps its columns (a claim such as ``|grad|`` stays one cell), and
    missing values show as :data:`MISSING` instead of ``nan`` / ``<NA>``. Text is shown as
    written: a column of strings is never read as numbers (a p-value ``"1.000"`` stays
    ``1.000``, not ``1``); numbers are formatted with ``floatfmt``.

    >>> print(markdown_table(pd.DataFrame({"claim": ["|grad| small"], "x": [None]})))
    | claim          | x   |
    |:---------------|:----|
    | \\|grad\\| small | –   |
    >>> print(markdown_table(pd.DataFrame({"p": ["1.000", 0.123456], "x": [0.123456, 2]})))
    | p      |      x |
    |:-------|-------:|
    | 1.000  | 0.1235 |
    | 0.1235 | 2      |
    """
    # Built column by column as object: pandas' own map/where would turn None back into NaN.
    # In a column that holds text, numbers are formatted here (tabulate reads none of it).
    text = [i for i in range(df.shape[1]) if any(isinstance(v, str) for v in df.iloc[:, i])]

    def cell(v, i: int):
        if _missing(v):
            return None
        if i in text and isinstance(v, (float, np.floating)):
            return format(float(v), floatfmt)
        return _escape_cell(v)

    rows = [[cell(v, i) for i, v in enumerate(row)]
            for row in df.itertuples(index=False, name=None)]
    cells = pd.DataFrame(rows, columns=[_escape_cell(str(c)) for c in df.columns], dtype=object)
    return cells.to_markdown(index=False, floatfmt=floatfmt, missingval=MISSING,
                             disable_numparse=text or False)


def _missing(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or array in a cell is a value
        return False


def _markdown(df: pd.DataFrame, caption: str | None) -> str:
    text = markdown_table(df)
    return (f"{caption}\n\n{text}\n" if caption else text + "\n")


def _show_inline(fig, png: Path) -> None:
    """Show every saved figure the same way, once: in a notebook kernel (Jupyter, papermill,
    Colab, whose shell subclasses ipykernel's), as the PNG just written, so the rendered
    notebook carries exactly the saved file. A figure that pyplot tracks is closed, so the
    inline backend does not show it a second time; elsewhere (scripts, tests, terminal
    IPython) nothing is displayed."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return
    from IPython.display import Image, display

    display(Image(filename=str(png)))
    _close(fig)


def _close(fig) -> None:
    """Close a figure that pyplot tracks, so the inline backend does not show it on its own."""
    if getattr(fig.canvas, "manager", None) is not None:
        import matplotlib.pyplot as plt

        plt.close(fig)


@dataclass
class Run:
    """Collects a notebook's outputs and writes their provenance."""

    prefix: str
    params: dict
    models: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    written: list[str] = field(default_factory=list)
    tables: dict[str, dict] = field(default_factory=dict)
    # The code that runs is the code imported when the run starts: the commit is read then,
    # not at finish (a commit made during a long run would otherwise be credited with it).
    commit: str | None = field(default_factory=lambda: git_commit())

    def _stem(self, name: str) -> str:
        return name if name.startswith(f"{self.prefix}_") else f"{self.prefix}_{name}"

    def _path(self, folder: Path, name: str, suffix: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{self._stem(name)}{suffix}"

    def table(self, df: pd.DataFrame, name: str, caption: str | None = None,
              float_digits: int = 6, markdown: bool | None = None,
              tolerance: float | dict | None = None, key: list[str] | None = None) -> Path:
        """Save ``df`` as ``results/NN_name.csv`` (floats rounded to ``float_digits`` so two runs
        compare equal as text) and, for tables a person reads (``markdown=None``: at most
        ``MARKDOWN_MAX_ROWS`` rows), ``results/NN_name.md``.

        tolerance: how far a rerun's values may drift from this table's and still reproduce
        it, recorded in the provenance for ``python -m analysis_utils compare``: a number
        (absolute, every float column) or ``{column or pattern: rule}`` with rules from
        :mod:`analysis_utils.publish.compare` (``within(abs=, rel=)``, ``from_sd("sd col", k=2)``,
        ``EXACT``, ``IGNORE``); ``None``: exact text and integers, floats within
        ``compare.DEFAULT_FLOAT_ABS``.
        key: the columns that identify a row (default: inferred by ``compare``).

        >>> run.table(uas, "table3", tolerance={"*": 0.5, "trees %": IGNORE},
        ...           key=["probe"])                                   # doctest: +SKIP
        """
        from . import compare

        label = f"{self._stem(name)}.csv"
        spec = compare.normalise_tolerance(tolerance, [str(c) for c in df.columns], label)
        if key is not None:
            key = [str(k) for k in ([key] if isinstance(key, str) else key)]
            missing = [k for k in key if k not in df.columns]
            if missing:
                raise ValueError(f"{label}: key column(s) {missing} not in the table "
                                 f"(columns: {list(df.columns)})")
            if df.duplicated(subset=key).any():
                raise ValueError(f"{label}: key {key} does not identify rows uniquely; add "
                                 "columns to the key")
        results, _ = output_dirs()
        csv = self._path(results, name, ".csv")
        df.round(float_digits).to_csv(csv, index=False)
        self.written.append(csv.name)
        self.tables[csv.name] = {"tolerance": spec, "key": key}
        if markdown or (markdown is None and len(df) <= MARKDOWN_MAX_ROWS):
            self._path(results, name, ".md").write_text(_markdown(df, caption))
            self.written.append(csv.with_suffix(".md").name)
        return csv

    def arrays(self, name: str, arrays: dict, quiet: bool = False) -> Path:
        """Save ``arrays`` (name -> array) as ``results/NN_name.npz`` (compressed, written
        aside and moved into place, so an interrupted run leaves the previous file), list it
        among the run's outputs and, unless ``quiet``, print its size."""
        results, _ = output_dirs()
        path = self._path(results, name, ".npz")
        with atomic.replacing(path) as tmp, open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        self.written.append(path.name)
        if not quiet:
            print(f"{path.name}: {path.stat().st_size / 1e6:.2f} MB")
        return path

    def figure(self, fig, name: str, dpi: int = 130, show: bool = True) -> Path:
        """Save ``fig`` as ``figures/NN_name.png`` (no timestamp metadata, so reruns compare)
        and, in a notebook, show it. ``show=False`` saves it only: for a large figure the
        notebook links (``../figures/NN_name.png``) instead of embedding."""
        _, figures = output_dirs()
        png = self._path(figures, name, ".png")
        fig.savefig(png, dpi=dpi, bbox_inches="tight", metadata={"Software": None})
        self.written.append(png.name)
        if show:
            _show_inline(fig, png)
        else:
            _close(fig)
        return png

    @staticmethod
    def figure_link(png: Path) -> str:
        """Link to a saved figure from the rendered notebook: ``../figures/NAME`` beside the
        source, ``../../figures/base/NAME`` for a profile with its own subfolder."""
        from ..profiles import SUBFOLDER

        sub = SUBFOLDER.get(os.environ.get(PROFILE_ENV, ""))
        return f"../../figures/{sub}/{png.name}" if sub else f"../figures/{png.name}"

    def finish(self) -> Path:
        """Write ``results/NN_provenance.json``, print the notebook's wall time and peak memory
        (what its provenance records) and return the path."""
        import torch

        results, _ = output_dirs()
        prov = {
            "notebook": self.prefix,
            "profile": os.environ.get(PROFILE_ENV, "interactive"),
            "parameters": self.params,
            "models": self.models,
            "data": self.data,
            "git_commit": self.commit,
            "versions": versions(),
            "device": (torch.cuda.get_device_name(0) if torch.cuda.is_available()
                       else f"cpu ({os.cpu_count()} cores)"),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "wall_time_s": round(time.time() - self.started, 1),
            "peak_rss_mb": peak_rss_mb(),
            "outputs": sorted(set(self.written)),
            "tables": dict(sorted(self.tables.items())),
        }
        path = self._path(results, "provenance", ".json")
        atomic.write_text(path, json.dumps(prov, indent=2, default=str) + "\n")
        print(f"notebook {self.prefix}: wall time {prov['wall_time_s']:,.0f} s, peak memory "
              f"{prov['peak_rss_mb']:,.0f} MB (recorded in {path.name})")
        return path


def start_run(prefix: str, params: dict, models: dict | None = None,
              data: dict | None = None) -> Run:
    """Open the output record of notebook ``prefix`` (e.g. ``"01"``)."""
    return Run(prefix=prefix, params=dict(params), models=dict(models or {}),
               data=dict(data or {}))

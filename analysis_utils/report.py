"""Saving tables and figures with provenance.

Each notebook opens one :class:`Run` (``run = report.start_run("01", params, models)``), saves
every table with ``run.table(df, "name")`` (``results/01_name.csv`` plus a Markdown rendering)
and every figure with ``run.figure(fig, "name")`` (``figures/01_name.png``), and ends with
``run.finish()``, which writes ``results/01_provenance.json``: parameters, model identities,
package versions, git commit, device, wall time and the list of files written.

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

import pandas as pd

from . import paths

OUTPUT_ENV = "BERTOLOGY_OUTPUT_DIR"
PROFILE_ENV = "BERTOLOGY_PROFILE"
MARKDOWN_MAX_ROWS = 200
_VERSIONED = ("torch", "transformers", "numpy", "pandas", "scikit-learn", "matplotlib",
              "seaborn", "conllu", "analysis_utils")


def output_dirs() -> tuple[Path, Path]:
    """(results_dir, figures_dir) for this process."""
    root = os.environ.get(OUTPUT_ENV)
    if root:
        return Path(root) / "results", Path(root) / "figures"
    return paths.RESULTS_DIR, paths.FIGURES_DIR


def git_commit() -> str | None:
    """The repository's HEAD commit (with ``-dirty`` when the work tree has changes)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.REPO_ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "analysis_utils",
                                "notebooks/*.py"], cwd=paths.REPO_ROOT, capture_output=True,
                               text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _markdown(df: pd.DataFrame, caption: str | None) -> str:
    text = df.to_markdown(index=False, floatfmt=".4g")
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

    def _path(self, folder: Path, name: str, suffix: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        stem = name if name.startswith(f"{self.prefix}_") else f"{self.prefix}_{name}"
        return folder / f"{stem}{suffix}"

    def table(self, df: pd.DataFrame, name: str, caption: str | None = None,
              float_digits: int = 6, markdown: bool | None = None) -> Path:
        """Save ``df`` as ``results/NN_name.csv`` (floats rounded to ``float_digits`` so two runs
        compare equal as text) and, for tables a person reads (``markdown=None``: at most
        ``MARKDOWN_MAX_ROWS`` rows), ``results/NN_name.md``."""
        results, _ = output_dirs()
        csv = self._path(results, name, ".csv")
        df.round(float_digits).to_csv(csv, index=False)
        self.written.append(csv.name)
        if markdown or (markdown is None and len(df) <= MARKDOWN_MAX_ROWS):
            self._path(results, name, ".md").write_text(_markdown(df, caption))
            self.written.append(csv.with_suffix(".md").name)
        return csv

    def figure(self, fig, name: str, dpi: int = 130) -> Path:
        """Save ``fig`` as ``figures/NN_name.png`` (no timestamp metadata, so reruns compare)."""
        _, figures = output_dirs()
        png = self._path(figures, name, ".png")
        fig.savefig(png, dpi=dpi, bbox_inches="tight", metadata={"Software": None})
        self.written.append(png.name)
        _show_inline(fig, png)
        return png

    def finish(self) -> Path:
        """Write ``results/NN_provenance.json`` and return its path."""
        import torch

        results, _ = output_dirs()
        prov = {
            "notebook": self.prefix,
            "profile": os.environ.get(PROFILE_ENV, "interactive"),
            "parameters": self.params,
            "models": self.models,
            "data": self.data,
            "git_commit": git_commit(),
            "versions": versions(),
            "device": (torch.cuda.get_device_name(0) if torch.cuda.is_available()
                       else f"cpu ({os.cpu_count()} cores)"),
            "wall_time_s": round(time.time() - self.started, 1),
            "outputs": sorted(set(self.written)),
        }
        path = self._path(results, "provenance", ".json")
        path.write_text(json.dumps(prov, indent=2, default=str) + "\n")
        return path


def start_run(prefix: str, params: dict, models: dict | None = None,
              data: dict | None = None) -> Run:
    """Open the output record of notebook ``prefix`` (e.g. ``"01"``)."""
    return Run(prefix=prefix, params=dict(params), models=dict(models or {}),
               data=dict(data or {}))

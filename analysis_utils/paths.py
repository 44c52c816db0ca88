"""Every path the compendium uses, derived from the package location, never from the cwd.

Environment variables (each also overridable by an explicit argument where a function takes one):

- ``BERTOLOGY_DATA_DIR``: the gold data directory, laid out like the shared data bundle
  (``ud-english-ewt/``, ``ontogum/``, ``glue/``, ``wikipedia/``, ``framenet-1.7/``).
  Default: ``<repo>/data`` (git-ignored; ``python -m analysis_utils fetch-data`` fills it).
- ``BERTOLOGY_CACHE_DIR``: where attention maps and other long computations are cached.
  Default: ``<repo>/.cache``.
- ``BERTOLOGY_OUTPUT_DIR``: where notebooks write ``results/`` and ``figures/``
  (:func:`output_dirs`). Default: the repository's own.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
RESULTS_DIR = REPO_ROOT / "results"
FIGURES_DIR = REPO_ROOT / "figures"
GOLDEN_DIR = REPO_ROOT / "tests" / "golden"

DATA_ENV = "BERTOLOGY_DATA_DIR"
CACHE_ENV = "BERTOLOGY_CACHE_DIR"
OUTPUT_ENV = "BERTOLOGY_OUTPUT_DIR"


def _resolve(override, env_name: str, default: Path) -> Path:
    value = override if override is not None else os.environ.get(env_name)
    return Path(value).expanduser().resolve() if value else default


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """The gold data directory: ``override``, else ``$BERTOLOGY_DATA_DIR``, else ``<repo>/data``."""
    return _resolve(override, DATA_ENV, REPO_ROOT / "data")


def add_cache_dir_option(parser) -> None:
    """The ``--cache-dir`` option of every command that reads or writes the cache."""
    parser.add_argument("--cache-dir", default=None, metavar="DIR",
                        help=f"cache root (default: ${CACHE_ENV}, else <repo>/.cache)")


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """The cache root: ``override``, else ``$BERTOLOGY_CACHE_DIR``, else ``<repo>/.cache``."""
    return _resolve(override, CACHE_ENV, REPO_ROOT / ".cache")


def output_dirs() -> tuple[Path, Path]:
    """(results_dir, figures_dir) for this process: under ``$BERTOLOGY_OUTPUT_DIR`` when set (the
    smoke profile and the tests point it elsewhere so they never overwrite committed results),
    else the repository's ``results/`` and ``figures/``."""
    root = os.environ.get(OUTPUT_ENV)
    if root:
        return Path(root) / "results", Path(root) / "figures"
    return RESULTS_DIR, FIGURES_DIR

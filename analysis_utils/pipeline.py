"""The papermill driver: convert each ``notebooks/NN_*.py`` with jupytext, execute it with a
profile's parameters, and write the rendered notebook.

- ``default`` and ``paper`` profiles write ``notebooks/NN_topic.ipynb`` (the paired notebook)
  and their tables and figures to ``results/`` and ``figures/``;
- ``smoke`` writes the golden copies ``tests/golden/NN_topic.ipynb`` and sends its tables and
  figures to ``.cache/smoke_outputs/`` so committed results are never overwritten.

A failing notebook stops the run with a non-zero status naming the notebook and the cell.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from . import paths, profiles
from .report import OUTPUT_ENV, PROFILE_ENV


class NotebookFailed(RuntimeError):
    """A notebook cell raised; the message names the notebook and the cell."""


def notebook_sources(only: list[str] | None = None) -> list[Path]:
    """The numbered notebook sources, in order; ``only`` keeps those whose prefix is listed."""
    found = sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))
    if only:
        wanted = {o.strip().zfill(2) for o in only if o.strip()}
        unknown = wanted - {p.name[:2] for p in found}
        if unknown:
            raise ValueError(f"no notebook with prefix {sorted(unknown)} in {paths.NOTEBOOKS_DIR}")
        found = [p for p in found if p.name[:2] in wanted]
    return found


def _parse_value(text: str):
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_overrides(pairs: list[str] | None) -> dict:
    """``["n_segments=50", "model=bert-base-uncased"]`` -> dict with Python literals parsed."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ValueError(f"-p expects name=value, got {pair!r}")
        k, v = pair.split("=", 1)
        out[k.strip()] = _parse_value(v.strip())
    return out


def output_path(source: Path, profile: str) -> Path:
    if profile == "smoke":
        return paths.GOLDEN_DIR / source.with_suffix(".ipynb").name
    return source.with_suffix(".ipynb")


def run_notebook(source: Path, profile: str, extra: dict | None = None,
                 kernel_name: str = "python3") -> Path:
    """Execute one notebook source under ``profile``; return the rendered notebook's path."""
    import jupytext
    import papermill as pm

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "Python 3",
                                 "language": "python"}
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(tagged) != 1:
        raise NotebookFailed(f"{source.name}: expected exactly one cell tagged 'parameters', "
                             f"found {len(tagged)}")
    with tempfile.TemporaryDirectory() as tmp:
        src_nb = Path(tmp) / source.with_suffix(".ipynb").name
        jupytext.write(nb, src_nb)
        available = set(pm.inspect_notebook(str(src_nb)).keys())
        params = profiles.overrides(profile, source.name[:2], available)
        unknown = set(extra or {}) - available
        if unknown:
            raise ValueError(f"{source.name} has no parameter(s) {sorted(unknown)}; "
                             f"it has {sorted(available)}")
        params.update(extra or {})
        out = output_path(source, profile)
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            pm.execute_notebook(str(src_nb), str(out), parameters=params or None,
                                kernel_name=kernel_name, cwd=str(paths.NOTEBOOKS_DIR),
                                progress_bar=False, log_output=False)
        except pm.PapermillExecutionError as err:
            raise NotebookFailed(
                f"{source.name} failed in cell {err.exec_count} ({err.ename}: {err.evalue}); "
                f"the partly executed notebook is {out}"
            ) from err
    return out


def run(profile: str = "default", only: list[str] | None = None, extra: dict | None = None,
        output_dir: str | None = None) -> list[Path]:
    """Run every numbered notebook in order under ``profile``; stop at the first failure."""
    profiles.overrides(profile, "00")  # validates the profile name
    os.environ[PROFILE_ENV] = profile
    if output_dir:
        os.environ[OUTPUT_ENV] = str(Path(output_dir).resolve())
    elif profile == "smoke":
        os.environ[OUTPUT_ENV] = str(paths.cache_dir() / "smoke_outputs")
    else:
        os.environ.pop(OUTPUT_ENV, None)
    written = []
    from .report import output_dirs

    for source in notebook_sources(only):
        t0 = time.perf_counter()
        # Stale outputs of an earlier run must not survive beside the new ones.
        for folder in output_dirs():
            for old in folder.glob(f"{source.name[:2]}_*"):
                old.unlink()
        print(f"[{profile}] {source.name} ...", flush=True)
        written.append(run_notebook(source, profile, extra))
        print(f"[{profile}] {source.name} done in {time.perf_counter() - t0:.1f} s -> "
              f"{written[-1].relative_to(paths.REPO_ROOT)}", flush=True)
    return written


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m analysis_utils run",
                                 description="Execute the notebooks with a profile.")
    ap.add_argument("--profile", default="default", choices=sorted(profiles.PROFILES))
    ap.add_argument("--only", default="", help="comma-separated prefixes, e.g. 01,02")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="override one notebook parameter (repeatable)")
    ap.add_argument("--output-dir", default=None,
                    help="write results/ and figures/ under this folder instead")
    args = ap.parse_args(argv)
    try:
        run(args.profile, [o for o in args.only.split(",") if o], parse_overrides(args.param),
            args.output_dir)
    except (NotebookFailed, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0

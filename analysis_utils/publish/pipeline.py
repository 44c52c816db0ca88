"""The papermill driver: convert each ``notebooks/NN_*.py`` with jupytext, execute it with a
profile's parameters, and publish its outputs only when it succeeded.

Where the outputs go:

- ``default`` and ``paper``: tables and figures to ``results/`` and ``figures/``, the rendered
  notebook beside its source (``notebooks/NN_topic.ipynb``); from a git tree whose tracked
  sources (``analysis_utils/``, ``notebooks/*.py``, ``pyproject.toml``) have uncommitted
  changes only with ``--allow-dirty``, since provenance must name one clean commit;
- ``base``: the same, one level down: ``results/base/``, ``figures/base/``,
  ``notebooks/base/NN_topic.ipynb`` (a second model's outputs beside the default ones);
- ``smoke``: everything under ``<cache>/smoke_outputs/{results,figures,notebooks}``; with
  ``--golden``, and only when every selected notebook succeeded, the rendered notebooks also
  replace the golden copies ``tests/golden/NN_topic.ipynb`` that nbval re-runs;
- ``--output-dir DIR`` (any profile): ``DIR/{results,figures,notebooks}``.

Before anything is written, every override (profile and ``-p``) of every selected notebook is
checked against its parameters cell and the declared ranges (:mod:`analysis_utils.params`).
Each notebook runs with ``$BERTOLOGY_OUTPUT_DIR`` pointing at a staging folder in the cache;
on success its files replace that notebook's files (``os.replace`` per file) and the files with
its ``NN_`` prefix that the new run did not write are removed; on failure the last good outputs
stay exactly as they were, the run stops with a non-zero status naming the notebook and the
cell, and the partly executed notebook is kept under ``<cache>/failed/NN_topic/``.

The kernel imports the driver's own package: the driver puts its package root first on the
kernel's ``PYTHONPATH`` and sets ``$BERTOLOGY_PACKAGE_ROOT``, which ``analysis_utils`` checks at
import.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import PACKAGE_ROOT_ENV, params, paths, profiles
from ..engine import atomic
from ..params import ParameterError
from .report import OUTPUT_ENV, PROFILE_ENV, uncommitted_sources

SMOKE_OUTPUTS = "smoke_outputs"  # under paths.cache_dir()
STAGING = "staging"
FAILED = "failed"
# Tracked files whose uncommitted changes make committed outputs unreproducible.


class NotebookFailed(RuntimeError):
    """A notebook cell raised; the message names the notebook and the cell."""


class DirtyTree(ValueError):
    """Committed outputs would be overwritten from uncommitted sources."""


@dataclass(frozen=True)
class Job:
    """One notebook to execute with its checked overrides (injected after its parameters cell)."""

    source: Path
    parameters: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Destination:
    """Where a successful notebook's files go; ``notebooks=None``: beside the source."""

    results: Path
    figures: Path
    notebooks: Path | None = None

    def rendered(self, source: Path) -> Path:
        return (self.notebooks or source.parent) / source.with_suffix(".ipynb").name


def package_root() -> Path:
    """The folder holding the ``analysis_utils`` package this driver runs."""
    import analysis_utils

    return Path(analysis_utils.__file__).resolve().parent.parent


def notebook_sources(only: list[str] | None = None,
                     notebooks_dir: str | os.PathLike | None = None) -> list[Path]:
    """The numbered notebook sources, in order; ``only`` keeps those whose prefix is listed."""
    folder = Path(notebooks_dir) if notebooks_dir else paths.NOTEBOOKS_DIR
    found = sorted(folder.glob("[0-9][0-9]_*.py"))
    if only:
        wanted = {o.strip().zfill(2) for o in only if o.strip()}
        unknown = wanted - {p.name[:2] for p in found}
        if unknown:
            raise ValueError(f"no notebook with prefix {sorted(unknown)} in {folder}")
        found = [p for p in found if p.name[:2] in wanted]
    return found


def parse_overrides(pairs: list[str] | None) -> dict[str, str]:
    """``["n_segments=50", "model=bert-base-uncased"]`` -> ``{"n_segments": "50", ...}``.

    Values stay text here: each notebook types them from its parameters cell
    (:func:`analysis_utils.params.parse_text`)."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ParameterError(f"-p expects name=value, got {pair!r}")
        k, v = pair.split("=", 1)
        if not k.strip():
            raise ParameterError(f"-p expects name=value, got {pair!r}")
        out[k.strip()] = v.strip()
    return out


def plan(profile: str, only: list[str] | None = None, extra: dict | None = None,
         notebooks_dir: str | os.PathLike | None = None) -> list[Job]:
    """Check the profile's and ``extra``'s overrides against every selected notebook and return
    the jobs; raise :class:`ParameterError` listing every problem before anything runs.

    ``extra`` (from ``-p``): text values are typed per notebook, other values checked as given;
    each applies to the selected notebooks that have that parameter and must exist in one."""
    profiles.overrides(profile, "00")  # validates the profile name
    spec = profiles.PROFILES[profile]
    extra = dict(extra or {})
    problems: dict[str, list[str]] = {}  # message -> notebooks, so a bad -p is reported once

    def problem(message: str, where: str) -> None:
        problems.setdefault(message, []).append(where)

    jobs, used, seen = [], set(), set()
    sources = notebook_sources(profiles.notebooks(profile, only), notebooks_dir)
    for source in sources:
        defaults = params.read_parameters(source)
        prefix = source.name[:2]
        seen.update(defaults)
        merged = {}
        for name in spec.get(prefix, {}):
            if name not in defaults:
                problem(f"profile {profile!r} sets {name!r}, which is not a parameter of "
                        f"{source.name}{params.did_you_mean(name, defaults)}", source.name)
        for name, value in profiles.overrides(profile, prefix, set(defaults)).items():
            try:
                merged[name] = params.check_value(name, value, defaults[name])
            except ParameterError as err:
                problem(f"profile {profile!r}: {err}", source.name)
        for name, value in extra.items():
            if name not in defaults:
                continue
            used.add(name)
            try:
                merged[name] = (params.parse_text(name, value, defaults[name])
                                if isinstance(value, str)
                                else params.check_value(name, value, defaults[name]))
            except ParameterError as err:
                problem(f"-p {err}", source.name)
        try:
            params.check_ordered({**defaults, **merged})
        except ParameterError as err:
            problem(str(err), source.name)
        jobs.append(Job(source, merged))
    for name in sorted(set(extra) - used):
        problem(f"-p {name}: no selected notebook has a parameter {name!r}"
                f"{params.did_you_mean(name, seen)}", ", ".join(s.name[:2] for s in sources))
    if problems:
        raise ParameterError("invalid parameters, nothing was run or written:\n" + "\n".join(
            f"  {msg} [{', '.join(where)}]" for msg, where in problems.items()))
    return jobs


def destination(profile: str, output_dir: str | os.PathLike | None = None) -> Destination:
    """Where ``profile`` publishes (see the module docstring)."""
    if output_dir:
        root = Path(output_dir).expanduser().resolve()
    elif profile == "smoke":
        root = paths.cache_dir() / SMOKE_OUTPUTS
    elif profile in profiles.SUBFOLDER:
        sub = profiles.SUBFOLDER[profile]
        return Destination(paths.RESULTS_DIR / sub, paths.FIGURES_DIR / sub,
                           paths.NOTEBOOKS_DIR / sub)
    else:
        return Destination(paths.RESULTS_DIR, paths.FIGURES_DIR, None)
    return Destination(root / "results", root / "figures", root / "notebooks")


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def check_provenance(profile: str, dest: Destination, allow_dirty: bool = False) -> None:
    """Refuse (:class:`DirtyTree`) to overwrite committed outputs, i.e. a non-smoke profile
    writing into the repository, from sources with uncommitted changes."""
    repo = paths.REPO_ROOT
    if allow_dirty or profile == "smoke" or not (
            _inside(dest.results, repo) or _inside(dest.figures, repo)):
        return
    changed = uncommitted_sources(repo)
    if not changed:
        return
    shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
    raise DirtyTree(
        f"refusing to overwrite the committed results/, figures/ and rendered notebooks: "
        f"{repo} has uncommitted changes to {shown}. Their provenance must name one clean "
        f"commit that produced them. Commit (or stash) the changes and run again, or pass "
        f"--allow-dirty (provenance then records the commit as '-dirty'), or write elsewhere "
        f"with --output-dir DIR outside the repository.")


@contextmanager
def _environ(**values: str):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _kernel_environment(stage: Path, profile: str, published: Path | None = None):
    """The kernel inherits this process's environment: outputs to ``stage``, the results
    folder they will be published into (``published``: where a notebook's saved evidence of an
    earlier run there is found, :mod:`.saved`), and the driver's package first on its path (an
    editable install of another checkout must not win)."""
    from .saved import PUBLISHED_ENV

    root = str(package_root())
    path = os.environ.get("PYTHONPATH")
    return _environ(**{OUTPUT_ENV: str(stage), PROFILE_ENV: profile, PACKAGE_ROOT_ENV: root,
                       PUBLISHED_ENV: str(published or ""),
                       "PYTHONPATH": root + (os.pathsep + path if path else "")})


def _move(src: Path, dst: Path) -> None:
    """Replace ``dst`` by ``src`` atomically (across file systems: copy beside, then rename)."""
    try:
        os.replace(src, dst)
    except OSError as err:
        if err.errno != errno.EXDEV:
            raise
        _copy(src, dst)
        src.unlink()


def _copy(src: Path, dst: Path) -> None:
    """Replace ``dst`` by a copy of ``src``; readers see the old file or the new, never half."""
    with atomic.replacing(dst) as tmp:
        shutil.copyfile(src, tmp)
        shutil.copymode(src, tmp)


def _stage_owned(target: Path) -> set[str]:
    """Names of the files in ``target`` that the ledger stage wrote (its provenance's
    ``outputs``; ``results/ledger_provenance.json`` in ``target`` or the folder above): they
    share notebook 08's prefix (``08_claims.csv``) but are not 08's to remove."""
    for folder in (target, target.parent, target.parent.parent):
        prov = folder / "results" / "ledger_provenance.json"
        if folder.name == "results":
            prov = folder / "ledger_provenance.json"
        if prov.is_file():
            try:
                outputs = json.loads(prov.read_text()).get("outputs") or []
            except (OSError, json.JSONDecodeError):
                return set()
            return {Path(p).name for p in outputs}
    return set()


def _publish(stage: Path, source: Path, dest: Destination) -> Path:
    """Move a successful run's files from ``stage`` into ``dest``; remove that notebook's
    earlier files (its ``NN_`` prefix) that this run did not write. Return the rendered path."""
    prefix = source.name[:2]
    for kind, target in (("results", dest.results), ("figures", dest.figures)):
        new = sorted(p for p in (stage / kind).glob("*") if p.is_file())
        target.mkdir(parents=True, exist_ok=True)
        for p in new:
            _move(p, target / p.name)
        names = {p.name for p in new} | _stage_owned(target)
        for old in target.glob(f"{prefix}_*"):
            if old.is_file() and old.name not in names:
                old.unlink()
    rendered = dest.rendered(source)
    rendered.parent.mkdir(parents=True, exist_ok=True)
    _move(stage / rendered.name, rendered)
    return rendered


def _keep_failed(stage: Path, source: Path) -> Path:
    """Move a failed run's staging folder to ``<cache>/failed/NN_topic`` (replacing the last)."""
    kept = paths.cache_dir() / FAILED / source.stem
    if kept.exists():
        shutil.rmtree(kept)
    kept.parent.mkdir(parents=True, exist_ok=True)
    os.replace(stage, kept)
    return kept


def execute(job: Job, profile: str, dest: Destination, kernel_name: str = "python3") -> Path:
    """Execute one notebook into a staging folder and publish it into ``dest`` on success;
    return the rendered notebook's path. On failure raise :class:`NotebookFailed` and keep the
    partly executed notebook in the cache; ``dest`` is left untouched."""
    import jupytext
    import papermill as pm

    source = job.source
    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "Python 3",
                                 "language": "python"}
    (paths.cache_dir() / STAGING).mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f"{source.stem}-", dir=paths.cache_dir() / STAGING))
    try:
        src_nb = stage / "input" / source.with_suffix(".ipynb").name
        src_nb.parent.mkdir()
        jupytext.write(nb, src_nb)
        rendered = stage / src_nb.name
        try:
            with _kernel_environment(stage, profile, dest.results):
                pm.execute_notebook(str(src_nb), str(rendered), parameters=job.parameters or None,
                                    kernel_name=kernel_name, cwd=str(source.parent),
                                    progress_bar=False, log_output=False)
        except Exception as err:
            kept = _keep_failed(stage, source)
            partial = kept / rendered.name
            where = (f"the partly executed notebook is kept at {partial}" if partial.exists()
                     else f"its partial outputs are kept in {kept}")
            if isinstance(err, pm.PapermillExecutionError):
                line = next((s for s in err.source.splitlines() if s.strip()), "")
                raise NotebookFailed(
                    f"{source.name} failed in cell [{err.exec_count}] `{line.strip()}` "
                    f"({err.ename}: {err.evalue}); {where}; the previous outputs are unchanged"
                ) from err
            raise NotebookFailed(f"{source.name} failed ({type(err).__name__}: {err}); {where}; "
                                 f"the previous outputs are unchanged") from err
        scrub_local_paths(rendered, source, dest.rendered(source))
        return _publish(stage, source, dest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def scrub_local_paths(rendered: Path, source: Path, published: Path | None = None) -> None:
    """Papermill records where it read and wrote the notebook (``metadata.papermill``
    ``input_path`` / ``output_path``): the staging folder of this machine. A committed
    rendering names its source relative to the repository instead."""
    import json

    nb = json.loads(rendered.read_text())
    meta = nb.get("metadata", {}).get("papermill")
    if meta is None:
        return
    meta["input_path"] = f"notebooks/{source.name}"
    meta["output_path"] = (str(published.resolve().relative_to(paths.REPO_ROOT.resolve()))
                           if published is not None and _inside(published, paths.REPO_ROOT)
                           else f"notebooks/{source.with_suffix('.ipynb').name}")
    rendered.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def run(profile: str = "default", only: list[str] | None = None, extra: dict | None = None,
        output_dir: str | os.PathLike | None = None, *, golden: bool = False,
        allow_dirty: bool = False, notebooks_dir: str | os.PathLike | None = None,
        kernel_name: str = "python3") -> list[Path]:
    """Run the selected notebooks in order under ``profile``; stop at the first failure.
    Returns the rendered notebooks' paths (see the module docstring for where they go)."""
    if golden and (profile != "smoke" or output_dir):
        raise ValueError("--golden refreshes tests/golden/ from a smoke run: use "
                         "`run --profile smoke --golden` without --output-dir")
    jobs = plan(profile, only, extra, notebooks_dir)
    dest = destination(profile, output_dir)
    check_provenance(profile, dest, allow_dirty)
    written = []
    for job in jobs:
        t0 = time.perf_counter()
        print(f"[{profile}] {job.source.name} ...", flush=True)
        written.append(execute(job, profile, dest, kernel_name))
        print(f"[{profile}] {job.source.name} done in {time.perf_counter() - t0:.1f} s -> "
              f"{_shown(written[-1])}", flush=True)
    if golden:
        # Only now: the golden set comes from one run in which every notebook succeeded.
        paths.GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        for rendered in written:
            _copy(rendered, paths.GOLDEN_DIR / rendered.name)
            print(f"[golden] {_shown(paths.GOLDEN_DIR / rendered.name)}", flush=True)
    return written


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m analysis_utils run",
                                 description="Execute the notebooks with a profile.")
    ap.add_argument("--profile", default="default", choices=sorted(profiles.PROFILES))
    ap.add_argument("--only", default="", help="comma-separated prefixes, e.g. 01,02")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="override one notebook parameter (repeatable); applies to the selected "
                         "notebooks that have it, typed and range-checked before anything runs")
    ap.add_argument("--output-dir", default=None,
                    help="write results/, figures/ and the rendered notebooks/ under this "
                         "folder instead")
    ap.add_argument("--golden", action="store_true",
                    help="smoke profile only: when every notebook succeeds, replace the golden "
                         "notebooks in tests/golden/ that nbval re-runs (`make golden`)")
    ap.add_argument("--allow-dirty", action="store_true",
                    help="overwrite committed outputs even though analysis_utils/, "
                         "notebooks/*.py or pyproject.toml have uncommitted changes")
    ap.add_argument("--notebooks-dir", default=None,
                    help="folder of the NN_topic.py sources (default: the repository's notebooks/)")
    args = ap.parse_args(argv)
    try:
        run(args.profile, [o for o in args.only.split(",") if o], parse_overrides(args.param),
            args.output_dir, golden=args.golden, allow_dirty=args.allow_dirty,
            notebooks_dir=args.notebooks_dir)
    except (NotebookFailed, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0

"""The generated parts of the book and the README: the runtime table from
``results/NN_provenance.json`` and the findings from the claims ledger (``results/08_claims.csv``).

``python -m analysis_utils report --readme`` rewrites the text between each pair of markers,
``<!-- NAME:start -->`` / ``<!-- NAME:end -->``, in the file that holds it (:data:`TARGETS`):

- ``runtimes`` in ``book/methods/performance.md``: the run behind each notebook's results;
- ``ledger`` in ``book/findings.md``: every row of the claims ledger, linked to its notebook's
  page (its Verdicts section) and to the head atlas at each head it names;
- ``findings`` in ``README.md``: the ledger's counts, the findings at a glance.

``report --check-readme`` exits 1 when one is stale; plain ``report`` prints the runtime table.
Kept apart from :mod:`analysis_utils.publish.report`, which every notebook imports, so that what a
notebook's outputs depend on does not include the book's machinery (see ``stale``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from .. import paths, profiles
from ..claims.display import display_quote
from ..engine import atomic


def start_marker(name: str) -> str:
    return f"<!-- {name}:start -->"


def end_marker(name: str) -> str:
    return f"<!-- {name}:end -->"


README_START, README_END = start_marker("runtimes"), end_marker("runtimes")


def _duration(seconds) -> str:
    if not isinstance(seconds, (int, float)):
        return "n/a"
    s = round(seconds)
    if s < 60:
        return f"{seconds:.0f} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _notebook_name(prefix: str) -> str:
    found = sorted(paths.NOTEBOOKS_DIR.glob(f"{prefix}_*.py"))
    return found[0].stem if found else prefix


def runtime_table(results: str | Path | None = None) -> str:
    """Markdown table of the runs behind ``results/NN_provenance.json`` (default: the committed
    ``results/``): per notebook the profile, wall time, peak RSS, device (with the CPU count)
    and commit, then a total row (the wall times summed, the largest peak RSS). A record that
    predates a field shows ``n/a`` (and the total, ``n/a`` for that column)."""
    folder = Path(results) if results is not None else paths.RESULTS_DIR
    lines = ["| notebook | profile | wall time | peak RSS | device | commit |",
             "|---|---|---|---|---|---|"]
    walls, peaks = [], []
    for prov_path in sorted(folder.glob("[0-9][0-9]_provenance.json")):
        prov = json.loads(prov_path.read_text())
        walls.append(prov.get("wall_time_s"))
        peaks.append(prov.get("peak_rss_mb"))
        prefix = str(prov.get("notebook") or prov_path.name[:2])
        rss = prov.get("peak_rss_mb")
        commit = prov.get("git_commit") or "n/a"
        dirty = commit.endswith("-dirty")
        if commit != "n/a":
            commit = f"`{commit.removesuffix('-dirty')[:7]}`" + (" (uncommitted changes)"
                                                                 if dirty else "")
        device, cpus = str(prov.get("device", "n/a")), prov.get("cpu_count")
        if cpus and not device.startswith("cpu ("):  # "cpu (N cores)" already says it
            device += f", {cpus} CPUs"
        lines.append("| " + " | ".join([
            _notebook_name(prefix), str(prov.get("profile", "n/a")),
            _duration(prov.get("wall_time_s")),
            f"{rss:,.0f} MB" if isinstance(rss, (int, float)) else "n/a", device, commit]) + " |")
    if walls:
        def known(xs):
            return all(isinstance(x, (int, float)) for x in xs)

        total = _duration(sum(walls)) if known(walls) else "n/a"
        peak = f"max {max(peaks):,.0f} MB" if known(peaks) else "n/a"
        lines.append(f"| all {len(walls)}, one after the other | | {total} | {peak} | | |")
    return "\n".join(lines) + "\n"


def runtimes_block(results: str | Path | None = None) -> str:
    """The runtime table with its lead-in, as it stands between the ``runtimes`` markers."""
    return ("The run behind each notebook's committed results, as its provenance records it\n"
            "(wall time from `report.start_run` to `run.finish()`, with whatever attention cache\n"
            "that run found; peak RSS of the notebook's kernel):\n\n"
            f"{runtime_table(results)}")


def _cell(value) -> str:
    """A table cell: the text on one line with its pipes escaped."""
    text = "" if pd.isna(value) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _ledger(results: str | Path | None) -> pd.DataFrame:
    folder = Path(results) if results is not None else paths.RESULTS_DIR
    csv = folder / "08_claims.csv"
    if not csv.is_file():
        raise FileNotFoundError(f"{csv} is missing: run notebook 08 "
                                "(`python -m analysis_utils run --only 08`) first")
    return pd.read_csv(csv, dtype=str, keep_default_na=False)


def findings_table(results: str | Path | None = None) -> str:
    """The findings at a glance (README): per model and notebook, how many claims of the
    claims ledger (``results/08_claims.csv``, see :mod:`analysis_utils.ledger`) came out
    yes / no / inconclusive / mixed / untestable, beside the random-weights control's yes under
    the same rules."""
    from .. import ledger

    return ledger.findings_markdown(_ledger(results)) + "\n"


def glance(results: str | Path | None = None) -> str:
    """The README's findings at a glance: per model, its verdicts over all its claims in one
    line, then :func:`findings_table`."""
    from .. import ledger

    df = _ledger(results)
    lines = ledger.headline_lines(df)
    return "\n".join(lines + [registry_line(df)]) + "\n\n" + findings_table(results)


def registry_line(ledger_df: pd.DataFrame | None = None) -> str:
    """One line on the claims registry (:mod:`analysis_utils.claims`): how many of the
    papers' claims it quotes, how many have a ledger row, how many of those a test decided on
    some model (a row reading anything but ``untestable``: "tested" counts only these), how
    many wait for a row and how many are untestable here."""
    from .. import claims
    from ..ledger import coverage

    entries = claims.load()
    rows = coverage.rows_by_entry()
    with_row = sum(coverage.tested(e, rows) for e in entries)
    pending = sum(coverage.pending(e, rows) for e in entries)
    untestable = sum(e.untestable for e in entries)
    text = (f"- **The claims registry**: {len(entries)} claims quoted from the papers; "
            f"{with_row} have a ledger row")
    if ledger_df is not None and len(ledger_df):
        decided = set(coverage.ledger_key(n, c) for n, c, v in zip(
            ledger_df["notebook"].astype(str).str.zfill(2), ledger_df["claim"],
            ledger_df["verdict"], strict=True) if v != "untestable")
        tested = sum(any(k in decided for k in rows.get(e.id, ())) for e in entries)
        text += f", {tested} of them decided by a test on some model"
    return (text + f"; {pending} wait for a row, {untestable} are untestable here "
            "(`python -m analysis_utils claims` lists them).")


class Run:
    """Where a model's rows of the ledger point in the book: the run folder its tables came
    from (``""`` for ``results/``, ``"base"`` for ``results/base/``), the model's name, and its
    grid (layers x heads)."""

    def __init__(self, sub: str, model: str, num_layers: int, num_heads: int):
        self.sub, self.model = sub, model
        self.num_layers, self.num_heads = num_layers, num_heads

    def notebook_page(self, prefix: str, root: Path) -> str:
        """The notebook's page, as a link from the book's top folder (``notebooks/NN_x.ipynb``,
        ``notebooks/base/NN_x.ipynb``). A notebook rendered once over every run folder (08, the
        ledger's own, where the registry's untestable rows of every model sit) is linked in
        ``notebooks/`` when the run's subfolder has no render of it."""
        folder = root / "notebooks" / self.sub if self.sub else root / "notebooks"
        found = sorted(folder.glob(f"{prefix}_*.ipynb"))
        if not found and self.sub:
            found = sorted((root / "notebooks").glob(f"{prefix}_*.ipynb"))
        if not found:
            raise FileNotFoundError(f"no rendered notebook {prefix}_*.ipynb in {folder}")
        return found[0].relative_to(root).as_posix()

    def atlas_page(self, root: Path) -> str | None:
        """The atlas page, as the book serves it (``atlas/<model>.html``); None when the
        run has no committed atlas page."""
        figures = root / "figures" / self.sub if self.sub else root / "figures"
        page = figures / "atlas" / f"{self.model}.html"
        return f"atlas/{page.name}" if page.is_file() else None


def runs(results: str | Path | None = None) -> dict[str, Run]:
    """``{the ledger's model label: its Run}`` for ``results/`` and each profile's subfolder
    that holds provenance (:data:`analysis_utils.profiles.SUBFOLDER`)."""
    from ..ledger.core import Tables

    folder = Path(results) if results is not None else paths.RESULTS_DIR
    out: dict[str, Run] = {}
    for sub in ["", *sorted(set(profiles.SUBFOLDER.values()))]:
        t = Tables(folder / sub if sub else folder)
        if t.model is not None:
            out[t.label()] = Run(sub, t.model, t.num_layers, t.num_heads)
    return out


def _head_links(heads: str, run: Run, atlas: str | None) -> str:
    """The ledger's ``heads`` cell (``"6-5, 1-2"``) as links to the atlas at each head
    (``atlas/<model>.html#6-5``, the page selects the head named after ``#``); plain text where
    the run has no atlas page. A label outside the model's grid is refused."""
    out = []
    for label in (h.strip() for h in heads.split(",") if h.strip()):
        layer, _, head = label.partition("-")
        if not (layer.isdigit() and head.isdigit() and 1 <= int(layer) <= run.num_layers
                and 1 <= int(head) <= run.num_heads):
            raise ValueError(f"results/08_claims.csv names head {label!r}, not a head of "
                             f"{run.model} ({run.num_layers} x {run.num_heads}); re-run "
                             "notebook 08")
        out.append(f'<a href="{atlas}#{label}">{label}</a>' if atlas else label)
    return ", ".join(out)


#: Where a ledger row's notebook link points: notebooks 01-07 end with a "Verdicts" section of
#: their own rows; notebook 08, the ledger's own (where the registry's untestable entries that
#: name no notebook sit), has its ledger section instead (the MyST anchor of its heading).
ROW_ANCHORS = {"08": "the-claims-ledger-is-a-stage-of-its-own"}


def row_anchor(notebook: str) -> str:
    """The anchor a ledger row of ``notebook`` links to (:data:`ROW_ANCHORS`, else
    ``verdicts``)."""
    return ROW_ANCHORS.get(notebook, "verdicts")


def ledger_table(results: str | Path | None = None, root: str | Path | None = None) -> str:
    """The book's findings: every row of the claims ledger, one table per model, each row
    linked to the Verdicts section of the notebook that checks it (the model's own rendered
    notebook: ``notebooks/`` or ``notebooks/base/``) and, where it names heads, to the head
    atlas at each of them; with the paper's words (``quote``), the unit that was resampled and
    the interval at the family's level (blank in a ledger that predates them). ``root``: the
    checkout whose notebooks and atlas pages the links name (default: this one)."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    df = _ledger(results)
    found = runs(results)
    parts = []
    for model, g in df.groupby("model", sort=False):
        run = found.get(model)
        if run is None:
            raise ValueError(f"results/08_claims.csv has rows for {model!r}, but no run folder "
                             f"of {sorted(found)} holds it; re-run notebook 08")
        atlas = run.atlas_page(root)
        parts += [f"### {model}", ""]
        if atlas:
            parts += [f"Heads link to the head atlas of {run.model}, "
                      f'<a href="{atlas}">{atlas}</a>.', ""]
        parts += ["| notebook | claim | the paper's words | paper | this run | unit | "
                  "interval | p (Holm) | verdict | control | heads |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for _, row in g.iterrows():
            page = run.notebook_page(row["notebook"], root)
            link = f"{page}#{row_anchor(row['notebook'])}"
            parts.append("| " + " | ".join([
                f"[{row['notebook']}]({link})", _cell(row["claim"]),
                _cell(display_quote(row.get("quote", "") or "")) or "\u2013",
                _cell(row["paper_value"]),
                _cell(row["this_run"]), _cell(row.get("unit", "")) or "\u2013",
                _cell(row.get("interval", "")) or "\u2013", _cell(row["p_adjusted"]),
                f"**{row['verdict']}**", _cell(row["control_verdict"]) or "\u2013",
                _head_links(row["heads"], run, atlas) or "\u2013"]) + " |")
        parts.append("")
    return "\n".join(parts)


def ledger_block(results: str | Path | None = None, root: str | Path | None = None) -> str:
    """The findings page's generated part: the ledger's counts, then :func:`ledger_table`."""
    return ("Counts per model and notebook (the control's yes under the same rules):\n\n"
            f"{findings_table(results)}\n{ledger_table(results, root)}")


def layers_table(root: str | Path | None = None) -> str:
    """The package's layers as they are (book, architecture page): per layer of
    :data:`analysis_utils.publish.imports.LAYERS`, lowest first, the folder named after it and
    the top-level modules and subpackages :data:`~analysis_utils.publish.imports.TOP_LEVEL`
    places there (a subpackage with its modules; a re-export or a module bound for
    ``publish/`` marked so)."""
    from . import imports

    root = Path(root) if root is not None else paths.REPO_ROOT
    pkg = root / imports.PACKAGE
    lines = ["| layer | modules and subpackages (`analysis_utils/...`) |", "|---|---|"]
    for layer in imports.LAYERS:
        names = [f"`{layer}/`"] if (pkg / layer).is_dir() else []
        for name, where in imports.TOP_LEVEL.items():
            if where != layer or name == "__init__":
                continue
            dotted = f"{imports.PACKAGE}.{name}"
            if (pkg / name).is_dir():
                mods = sorted(p.stem for p in (pkg / name).glob("*.py") if p.stem != "__init__")
                names.append(f"`{name}/` ({', '.join(mods)})")
            elif (pkg / f"{name}.py").is_file():
                note = (" (re-export of " + imports.MOVED[dotted].removeprefix(
                    imports.PACKAGE + ".") + ")" if dotted in imports.MOVED
                        else " (bound for `publish/`)" if dotted in imports.PENDING else "")
                names.append(f"`{name}`{note}")
        lines.append(f"| {layer} | {', '.join(names)} |")
    return "\n".join(lines) + "\n"


#: name -> (the file that holds it, relative to the checkout; the function that writes it,
#: given the checkout and the results folder)
TARGETS: dict[str, tuple[str, Callable[[Path, Path], str]]] = {
    "runtimes": ("book/methods/performance.md", lambda root, results: runtimes_block(results)),
    "ledger": ("book/findings.md", lambda root, results: ledger_block(results, root)),
    "layers": ("book/methods/architecture.md", lambda root, results: layers_table(root)),
    "findings": ("README.md", lambda root, results: glance(results)),
}
_SOURCES = {"runtimes": "results/NN_provenance.json",
            "layers": "TOP_LEVEL and LAYERS in analysis_utils/publish/imports.py"}


def _generated(name: str, root: Path, results: Path) -> str:
    """The text between (and including) ``name``'s markers."""
    source = _SOURCES.get(name, "results/08_claims.csv (the claims ledger)")
    return (f"{start_marker(name)}\n<!-- generated by `python -m analysis_utils report "
            f"--readme` from {source}: do not edit by hand -->\n"
            f"{TARGETS[name][1](root, results)}{end_marker(name)}")


def _replace(text: str, name: str, wanted: str, where: Path) -> str:
    start, end = text.find(start_marker(name)), text.find(end_marker(name))
    if start < 0 or end < start or text.count(start_marker(name)) != 1:
        raise ValueError(f"{where} needs exactly one {start_marker(name)} ... "
                         f"{end_marker(name)} pair of lines where the generated part goes")
    return text[:start] + wanted + text[end + len(end_marker(name)):]


def sync(root: str | Path | None = None, results: str | Path | None = None,
         check: bool = False) -> list[tuple[Path, str, str]]:
    """Rewrite (with ``check``: only compare) every generated part of :data:`TARGETS` under
    ``root`` (default: this checkout) from ``results``; returns ``(file, text now, text
    wanted)`` for each file that differed (empty: all matched)."""
    root = Path(root) if root is not None else paths.REPO_ROOT
    results = Path(results) if results is not None else root / "results"
    by_file: dict[str, list[str]] = {}
    for name, (rel, _) in TARGETS.items():
        by_file.setdefault(rel, []).append(name)
    out = []
    for rel, names in by_file.items():
        path = root / rel
        text = path.read_text()
        new = text
        for name in names:
            new = _replace(new, name, _generated(name, root, results), path)
        if new != text:
            out.append((path, text, new))
            if not check:
                atomic.write_text(path, new)
    return out


def cli(argv: list[str] | None = None) -> int:
    """``python -m analysis_utils report``; returns the exit status."""
    import argparse
    import difflib

    ap = argparse.ArgumentParser(
        prog="python -m analysis_utils report",
        description="Print the runtime table built from results/NN_provenance.json, or write "
                    "the generated parts of the book and README (runtime table, claims "
                    "ledger, findings at a glance) between their markers.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--readme", action="store_true",
                      help="rewrite the generated parts of " + ", ".join(
                          sorted({rel for rel, _ in TARGETS.values()})))
    mode.add_argument("--check-readme", action="store_true",
                      help="exit 1 when a generated part differs from results/")
    ap.add_argument("--results", default=None, metavar="DIR",
                    help="folder of the NN_provenance.json files and 08_claims.csv "
                         "(default: results/ of the checkout)")
    ap.add_argument("--root", default=None, metavar="DIR",
                    help="the checkout whose README.md and book/ are written (default: this one)")
    args = ap.parse_args(argv)
    if not (args.readme or args.check_readme):
        print(runtime_table(args.results), end="")
        return 0
    try:
        changed = sync(args.root, args.results, check=args.check_readme)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not changed:
        print("generated parts match results/")
        return 0
    for path, now, wanted in changed:
        if args.readme:
            print(f"{path}: generated parts rewritten from results/")
        else:
            sys.stdout.writelines(difflib.unified_diff(
                now.splitlines(keepends=True), wanted.splitlines(keepends=True),
                f"{path} (now)", "from results/"))
    if args.readme:
        return 0
    print("\ngenerated parts are stale; run `python -m analysis_utils report --readme` and "
          "commit " + ", ".join(str(p) for p, _, _ in changed))
    return 1

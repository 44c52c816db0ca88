"""``python -m analysis_utils claims``: the claims registry at a glance.

Prints the number of entries per paper and section; the entries the ledger tests (with any
note of where a ledger row departs from the paper); the gap list (entries testable here that
no ledger row tests yet, with notebook and criterion); and the untestable entries with their
reasons. Which rows test an entry comes from the ledger's claims (``Claim.registry``,
:mod:`.coverage`), not from a rendered ledger. Ledger rows that name no entry (rows without a
quote), rows that name an id the registry lacks or an entry of another paper or notebook, and
``ledger_mismatch`` notes on entries no row tests are printed as problems and make the exit
status 1. ``--gaps FILE`` also writes the gap list as Markdown.

>>> main(["--gaps", "/tmp/claims_gaps.md"])                       # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from ..claims import REGISTRY, Entry, load
from ..ledger import coverage

PAPER_NAMES = {"clark2019": "Clark et al. 2019", "kovaleva2019": "Kovaleva et al. 2019"}


def _section_key(section: str) -> tuple:
    head = section.split(",")[0].split(" ")[0]
    nums = []
    for part in head.split("."):
        nums.append(int(part) if part.isdigit() else -1)
    return tuple(nums), section


def counts_markdown(entries: list[Entry], rows: dict[str, list[str]] | None = None) -> str:
    """Entries per paper and section, with how many the ledger tests, how many are pending and
    how many are untestable. ``rows``: :func:`.coverage.rows_by_entry` (default: from the
    ledger's claims)."""
    rows = coverage.rows_by_entry() if rows is None else rows

    def tested(es):
        return sum(coverage.tested(e, rows) for e in es)

    def pending(es):
        return sum(coverage.pending(e, rows) for e in es)

    lines = ["| paper | section | entries | tested by the ledger | pending | untestable |",
             "|:--|:--|--:|--:|--:|--:|"]
    for paper in PAPER_NAMES:
        mine = [e for e in entries if e.paper == paper]
        by_sec = Counter(e.section.split(",")[0] for e in mine)
        for sec in sorted(by_sec, key=_section_key):
            es = [e for e in mine if e.section.split(",")[0] == sec]
            lines.append(f"| {PAPER_NAMES[paper]} | {sec} | {len(es)} | {tested(es)} | "
                         f"{pending(es)} | {sum(e.untestable for e in es)} |")
        lines.append(f"| **{PAPER_NAMES[paper]}** | all | **{len(mine)}** | "
                     f"**{tested(mine)}** | **{pending(mine)}** | "
                     f"**{sum(e.untestable for e in mine)}** |")
    lines.append(f"| **both** | all | **{len(entries)}** | **{tested(entries)}** "
                 f"| **{pending(entries)}** | **{sum(e.untestable for e in entries)}** |")
    both = sum(coverage.tested(e, rows) and e.untestable for e in entries)
    if both:
        lines += ["", f"{both} untestable entries have ledger rows (they read `untestable`, "
                      "with the reason), so they count in both columns; every other entry is "
                      "tested, pending or untestable."]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(columns: list[str], rows) -> str:
    """A Markdown table, every column left-aligned; ``rows``: lists of cell texts."""
    lines = ["| " + " | ".join(columns) + " |", "|" + ":--|" * len(columns)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def gaps_markdown(entries: list[Entry], rows: dict[str, list[str]] | None = None) -> str:
    """The gap list: entries testable here that no ledger row tests yet, by notebook."""
    rows = coverage.rows_by_entry() if rows is None else rows
    gaps = sorted((e for e in entries if coverage.pending(e, rows)),  # by notebook (none last),
                  key=lambda e: e.notebooks[0] if e.notebooks else "99")  # then registry order
    return _table(["id", "section", "notebooks", "claim", "criterion (the paper's terms)", "unit",
                   "note"],
                  ([f"`{e.id}`", _cell(e.section), ", ".join(e.notebooks) or "none",
                    _cell(e.claim), _cell(e.criterion), _cell(e.unit), _cell(e.note)]
                   for e in gaps))


def tested_markdown(entries: list[Entry], rows: dict[str, list[str]] | None = None) -> str:
    """Entries the ledger tests, each with its rows and any mismatch note."""
    rows = coverage.rows_by_entry() if rows is None else rows
    return _table(["id", "ledger rows", "where the rows depart from the paper"],
                  ([f"`{e.id}`", _cell("; ".join(rows[e.id])), _cell(e.ledger_mismatch) or "-"]
                   for e in entries if coverage.tested(e, rows)))


def untestable_markdown(entries: list[Entry], rows: dict[str, list[str]] | None = None) -> str:
    """Entries with no test here, each with why and any row that records it."""
    rows = coverage.rows_by_entry() if rows is None else rows
    return _table(["id", "claim", "why untestable here", "ledger rows"],
                  ([f"`{e.id}`", _cell(e.claim), _cell(e.untestable_reason),
                    _cell("; ".join(rows.get(e.id, []))) or "-"]
                   for e in entries if e.untestable))


def report(entries: list[Entry], rows: dict[str, list[str]],
           ledger_problems: list[str] | None = None) -> str:
    """The whole printout as Markdown."""
    n_tested = sum(coverage.tested(e, rows) for e in entries)
    n_pending = sum(coverage.pending(e, rows) for e in entries)
    parts = [f"# The claims registry ({REGISTRY.name}: {len(entries)} entries)", "",
             "## Entries per paper and section", "", counts_markdown(entries, rows), "",
             f"## Tested by the ledger ({n_tested})", "", tested_markdown(entries, rows), "",
             f"## Pending: testable here, no ledger row yet ({n_pending})", "",
             gaps_markdown(entries, rows), "",
             f"## Untestable here ({sum(e.untestable for e in entries)})", "",
             untestable_markdown(entries, rows)]
    if ledger_problems:
        parts += ["", "## Problems against the ledger", ""]
        parts += [f"- {p}" for p in ledger_problems]
    return "\n".join(parts) + "\n"


def ledger_problems(entries: list[Entry], claims=None) -> list[str]:
    """The ledger's claims against the registry (``claims``: default the ledger's own): rows
    without an entry, rows naming an unknown, other-paper or other-notebook entry, and
    mismatch notes on entries no row tests."""
    claims = coverage.declared() if claims is None else claims
    return ([f"ledger row without a registry entry (name the entry it tests in its Claim's "
             f"registry): {k}" for k in coverage.unregistered(claims)]
            + coverage.problems(entries, claims)
            + coverage.orphan_notes(entries, coverage.rows_by_entry(claims)))


def _changes(rev: str, everything: bool) -> int:
    import pandas as pd

    from .. import paths
    from ..claims import changes

    repo = paths.REPO_ROOT
    new_path = repo / "results" / "08_claims.csv"
    try:
        old = changes.ledger_at(rev, repo)
        old_rows = changes.rows_at(rev, repo)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not new_path.is_file():
        print(f"error: {new_path} is missing: run notebook 08 (`python -m analysis_utils run "
              "--only 08`)", file=sys.stderr)
        return 2
    new = pd.read_csv(new_path, dtype=str, keep_default_na=False)
    table = changes.changes(old, new, old_rows, coverage.rows_by_entry())
    n = table["change"].value_counts()
    print(f"verdicts against {rev}: " + ", ".join(f"{n.get(k, 0)} {k}" for k in
                                                    ("changed", "new", "dropped", "same")))
    print(changes.markdown(table, only_changed=not everything))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis_utils claims",
                                 description="The claims registry: counts, the ledger's "
                                             "coverage, the gap list, the untestable entries.")
    ap.add_argument("--gaps", metavar="FILE", help="also write the gap list (Markdown) here")
    ap.add_argument("--changes", metavar="REV",
                    help="instead: the verdicts of the working tree's results/08_claims.csv "
                         "that differ from the ledger committed at REV (a commit from before "
                         "Claim.registry), matched through the registry entries each row tests")
    ap.add_argument("--all", action="store_true",
                    help="with --changes: list unchanged entries too")
    args = ap.parse_args(argv)
    if args.changes:
        return _changes(args.changes, args.all)
    entries = load()
    claims = coverage.declared()
    rows = coverage.rows_by_entry(claims)
    probs = ledger_problems(entries, claims)
    sys.stdout.write(report(entries, rows, probs))
    if args.gaps:
        from ..engine import atomic

        n_pending = sum(coverage.pending(e, rows) for e in entries)
        text = ("# Claims registry: the gap list\n\nEntries of `analysis_utils/claims/"
                "registry.toml` that notebooks 01-07 can test here but that no claim of the "
                "ledger (`analysis_utils/ledger/`, `Claim.registry`) tests yet, with the "
                "criterion in the paper's own terms. Written by `python -m analysis_utils "
                f"claims --gaps FILE`.\n\n{counts_markdown(entries, rows)}\n\n## Pending "
                f"({n_pending})\n\n{gaps_markdown(entries, rows)}\n\n"
                f"## Where existing ledger rows depart from the paper\n\n"
                f"{tested_markdown(entries, rows)}\n\n## Untestable here "
                f"({sum(e.untestable for e in entries)})\n\n"
                f"{untestable_markdown(entries, rows)}\n")
        atomic.write_text(args.gaps, text)
    return 1 if probs else 0


if __name__ == "__main__":
    sys.exit(main())

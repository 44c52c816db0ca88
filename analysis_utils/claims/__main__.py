"""``python -m analysis_utils.claims``: the claims registry at a glance.

Prints the number of entries per paper and section; the entries the ledger tests (with any
note of where a ledger row departs from the paper); the gap list (entries testable here that
no ledger row tests yet, with notebook and criterion); and the untestable entries with their
reasons. It checks the registry against the committed ledger (``--ledger``, default
``results/08_claims.csv``): ledger rows no entry lists, and entries that list a row the ledger
lacks, are printed as problems and make the exit status 1. ``--gaps FILE`` also writes the gap
list as Markdown.

>>> main(["--gaps", "/tmp/claims_gaps.md"])                       # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from . import REGISTRY, REPO_ROOT, Entry, dangling, ledger_keys, load, unregistered

PAPER_NAMES = {"clark2019": "Clark et al. 2019", "kovaleva2019": "Kovaleva et al. 2019"}


def _section_key(section: str) -> tuple:
    head = section.split(",")[0].split(" ")[0]
    nums = []
    for part in head.split("."):
        nums.append(int(part) if part.isdigit() else -1)
    return tuple(nums), section


def counts_markdown(entries: list[Entry]) -> str:
    """Entries per paper and section, with how many the ledger tests, how many are pending and
    how many are untestable."""
    lines = ["| paper | section | entries | tested by the ledger | pending | untestable |",
             "|:--|:--|--:|--:|--:|--:|"]
    for paper in PAPER_NAMES:
        mine = [e for e in entries if e.paper == paper]
        by_sec = Counter(e.section.split(",")[0] for e in mine)
        for sec in sorted(by_sec, key=_section_key):
            es = [e for e in mine if e.section.split(",")[0] == sec]
            lines.append(f"| {PAPER_NAMES[paper]} | {sec} | {len(es)} | "
                         f"{sum(e.tested for e in es)} | {sum(e.pending for e in es)} | "
                         f"{sum(e.untestable for e in es)} |")
        lines.append(f"| **{PAPER_NAMES[paper]}** | all | **{len(mine)}** | "
                     f"**{sum(e.tested for e in mine)}** | **{sum(e.pending for e in mine)}** | "
                     f"**{sum(e.untestable for e in mine)}** |")
    lines.append(f"| **both** | all | **{len(entries)}** | **{sum(e.tested for e in entries)}** "
                 f"| **{sum(e.pending for e in entries)}** | "
                 f"**{sum(e.untestable for e in entries)}** |")
    both = sum(e.tested and e.untestable for e in entries)
    if both:
        lines += ["", f"{both} untestable entries are also tested by the ledger (their rows read "
                      "`untestable`), so they count in both columns; every other entry is "
                      "tested, pending or untestable."]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def gaps_markdown(entries: list[Entry]) -> str:
    """The gap list: entries testable here that no ledger row tests yet, by notebook."""
    rows = sorted((e for e in entries if e.pending),  # by notebook (none last), then registry order
                  key=lambda e: e.notebooks[0] if e.notebooks else "99")
    lines = ["| id | section | notebooks | claim | criterion (the paper's terms) | unit | note |",
             "|:--|:--|:--|:--|:--|:--|:--|"]
    for e in rows:
        lines.append(f"| `{e.id}` | {_cell(e.section)} | {', '.join(e.notebooks) or 'none'} | "
                     f"{_cell(e.claim)} | {_cell(e.criterion)} | {_cell(e.unit)} | "
                     f"{_cell(e.note)} |")
    return "\n".join(lines)


def tested_markdown(entries: list[Entry]) -> str:
    """Entries the ledger tests, each with its rows and any mismatch note."""
    lines = ["| id | ledger rows | where the rows depart from the paper |", "|:--|:--|:--|"]
    for e in entries:
        if e.tested:
            lines.append(f"| `{e.id}` | {_cell('; '.join(e.ledger_claims))} | "
                         f"{_cell(e.ledger_mismatch) or '-'} |")
    return "\n".join(lines)


def untestable_markdown(entries: list[Entry]) -> str:
    lines = ["| id | claim | why untestable here | ledger rows |", "|:--|:--|:--|:--|"]
    for e in entries:
        if e.untestable:
            lines.append(f"| `{e.id}` | {_cell(e.claim)} | {_cell(e.untestable_reason)} | "
                         f"{_cell('; '.join(e.ledger_claims)) or '-'} |")
    return "\n".join(lines)


def report(entries: list[Entry], ledger_problems: list[str] | None = None) -> str:
    """The whole printout as Markdown."""
    parts = [f"# The claims registry ({REGISTRY.name}: {len(entries)} entries)", "",
             "## Entries per paper and section", "", counts_markdown(entries), "",
             f"## Tested by the ledger ({sum(e.tested for e in entries)})", "",
             tested_markdown(entries), "",
             f"## Pending: testable here, no ledger row yet ({sum(e.pending for e in entries)})",
             "", gaps_markdown(entries), "",
             f"## Untestable here ({sum(e.untestable for e in entries)})", "",
             untestable_markdown(entries)]
    if ledger_problems:
        parts += ["", "## Problems against the ledger", ""]
        parts += [f"- {p}" for p in ledger_problems]
    return "\n".join(parts) + "\n"


def ledger_problems(entries: list[Entry], ledger_csv: Path) -> list[str]:
    """Rows of the ledger no entry lists, and entries' references the ledger lacks."""
    import pandas as pd

    led = pd.read_csv(ledger_csv, dtype=str, keep_default_na=False)
    keys = ledger_keys(led)
    return ([f"ledger row without a registry entry (add it to some entry's ledger_claims): "
             f"{k}" for k in unregistered(entries, keys)]
            + [f"registry reference not in {ledger_csv.name}: {d}"
               for d in dangling(entries, keys)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis_utils.claims",
                                 description="The claims registry: counts, the ledger's "
                                             "coverage, the gap list, the untestable entries.")
    ap.add_argument("--ledger", default=str(REPO_ROOT / "results" / "08_claims.csv"),
                    help="the committed ledger to check against (default results/08_claims.csv)")
    ap.add_argument("--gaps", metavar="FILE", help="also write the gap list (Markdown) here")
    args = ap.parse_args(argv)
    entries = load()
    led = Path(args.ledger)
    probs = ledger_problems(entries, led) if led.is_file() else [
        f"{led} is missing: render notebook 08, or pass --ledger"]
    sys.stdout.write(report(entries, probs))
    if args.gaps:
        from ..engine import atomic

        text = ("# Claims registry: the gap list\n\nEntries of `analysis_utils/claims/"
                "registry.toml` that notebooks 01-07 can test here but that no row of the "
                "committed ledger (`results/08_claims.csv`) tests yet, with the criterion in "
                "the paper's own terms. Written by `python -m analysis_utils.claims --gaps "
                f"FILE`.\n\n{counts_markdown(entries)}\n\n## Pending "
                f"({sum(e.pending for e in entries)})\n\n{gaps_markdown(entries)}\n\n"
                f"## Where existing ledger rows depart from the paper\n\n"
                f"{tested_markdown(entries)}\n\n## Untestable here "
                f"({sum(e.untestable for e in entries)})\n\n{untestable_markdown(entries)}\n")
        atomic.write_text(args.gaps, text)
    return 1 if probs else 0


if __name__ == "__main__":
    sys.exit(main())

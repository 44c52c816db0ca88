"""``python -m analysis_utils validate FILE [FILE ...] [--coref]``: check CoNLL-U files of your own
before the readers see them.

The checks are the readers' own code, not a second implementation: every block goes through
``treebank.scan_conllu`` (10 columns, word IDs, HEAD, one root, no cycle, the ``conllu`` parse,
UTF-8, an empty file), and with ``--coref`` through ``ontogum.check_ontogum`` as well (the
``Entity=`` brackets of the OntoGUM reader). Where the readers stop at the first problem, this
collects every problem of every sentence and prints each as ``file:line: what is wrong``,
sorted by line. Exit status: 0 when every file is clean (with a one-line summary), 1 when any
problem was found, 2 for a usage error.

A folder argument stands for the ``*.conllu`` files in it (sorted), as in ``read_ontogum``.

Example::

    $ python -m analysis_utils validate mine.conllu --coref
    mine.conllu:14: more than one root (words 2, 5 have HEAD 0; expected exactly one)
    mine.conllu:31: document d1, sentence s4: mention of entity 7 opened here is never closed
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import ontogum, treebank
from .treebank import Problem

__all__ = ["FileResult", "validate_file", "expand_paths", "main"]


@dataclass
class FileResult:
    """What one file holds: its problems (sorted by line) and, when it could be read, counts of
    sentences and words (and documents and mentions, ``coref`` only; mentions are matched
    bracket pairs). ``unreadable`` is why the file could not be opened, if it could not."""

    path: str
    coref: bool
    problems: list[Problem] = field(default_factory=list)
    sentences: int = 0
    words: int = 0
    documents: int = 0
    mentions: int = 0
    unreadable: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and self.unreadable is None

    def messages(self) -> list[str]:
        """Every problem as ``file:line: what is wrong`` (or ``file: cannot read ...``)."""
        if self.unreadable is not None:
            return [f"{self.path}: cannot read the file: {self.unreadable}"]
        return [p.format(self.path) for p in self.problems]


def validate_file(path: str | os.PathLike, coref: bool = False) -> FileResult:
    """Check one CoNLL-U file (``coref``: also its ``Entity=`` brackets); every problem."""
    result = FileResult(path=str(path), coref=coref)
    try:
        if coref:
            check = ontogum.check_ontogum(path)
            result.problems = list(check.problems)
            result.sentences, result.words = check.sentences, check.words
            result.documents, result.mentions = check.documents, check.mentions
        else:
            for scanned in treebank.scan_conllu(path):
                result.problems += scanned.problems
                if scanned.sentence is not None:
                    result.sentences += 1
                    result.words += len(scanned.sentence.words)
    except OSError as exc:
        result.unreadable = exc.strerror or str(exc)
    result.problems.sort(key=lambda p: p.line)
    return result


def expand_paths(args: list[str]) -> list[Path]:
    """Files as given; a folder stands for its ``*.conllu`` files, sorted (none: the folder
    itself, so that it is reported as unreadable rather than silently skipped)."""
    out: list[Path] = []
    for a in args:
        p = Path(a)
        found = sorted(p.glob("*.conllu")) if p.is_dir() else []
        out += found or [p]
    return out


def _summary(results: list[FileResult], coref: bool) -> str:
    n = len(results)
    parts = [f"{n} file{'s' if n != 1 else ''}",
             f"{sum(r.sentences for r in results)} sentences",
             f"{sum(r.words for r in results)} words"]
    if coref:
        parts += [f"{sum(r.documents for r in results)} documents",
                  f"{sum(r.mentions for r in results)} mentions"]
    return "ok: " + ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m analysis_utils validate``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m analysis_utils validate",
        description="Check CoNLL-U files with the readers' own checks (10 columns, word IDs, "
                    "HEAD, one root, no cycle, UTF-8, not empty) and print every problem as "
                    "file:line: what is wrong. Exit 0 when all files are clean, 1 otherwise.")
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="CoNLL-U files (a folder: its *.conllu files)")
    parser.add_argument("--coref", action="store_true",
                        help="also check coreference brackets (Entity= in MISC, as read by the "
                             "OntoGUM reader) and count documents and mentions")
    args = parser.parse_args(argv)
    results = [validate_file(p, coref=args.coref) for p in expand_paths(args.files)]
    bad = [r for r in results if not r.ok]
    for r in results:
        for line in r.messages():
            print(line)
    if bad:
        n_problems = sum(len(r.messages()) for r in bad)
        print(f"validate: {n_problems} problem{'s' if n_problems != 1 else ''} in {len(bad)} of "
              f"{len(results)} file{'s' if len(results) != 1 else ''}", file=sys.stderr)
        return 1
    print(_summary(results, args.coref))
    return 0

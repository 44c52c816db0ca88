"""``python -m analysis_utils check-cache [--fix] [--cache-dir DIR]``: check every attention
store under the cache, entry by entry.

One line per store, then a summary::

    ok          <cache>/attention/<key>  120 entries verify, 31.2 MB
    corrupt     <cache>/attention/<key>  2 of 120 entries fail their checksums (entries 3, 17)
    incomplete  <cache>/attention/<key>  partial: 40 of 120 entries done ...
    stale       <cache>/attention/<key>  written by attention engine version '1' ...

Exit status 1 when a store is corrupt (and, with ``--fix``, could not be repaired), else 0.
``--fix`` turns each corrupt store into an interrupted one that keeps every entry that verifies
(:func:`analysis_utils.engine.attention.repair_store`): the next extraction with the same inputs
re-extracts only the damaged entries, or the whole store when its manifest is unusable.
Incomplete stores (interrupted runs) resume by themselves and stale ones (older engine
versions) are never read; neither counts as a problem, and ``--fix`` leaves both alone.
Do not run ``--fix`` while an extraction is writing into the cache.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .. import paths
from .attention import check_store, repair_store


def store_dirs(cache_dir: str | os.PathLike | None = None) -> list[Path]:
    """Every attention store folder under the cache root, sorted."""
    root = paths.cache_dir(cache_dir) / "attention"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def check_cache(cache_dir: str | os.PathLike | None = None, fix: bool = False,
                print_fn=print) -> int:
    """Check (and with ``fix`` repair) every attention store; print one line per store.
    Returns the exit status: 1 if a corrupt store is left, else 0."""
    root = paths.cache_dir(cache_dir)
    dirs = store_dirs(root)
    if not dirs:
        print_fn(f"no attention stores under {root / 'attention'}")
        return 0
    counts: dict[str, int] = {}
    left = 0
    for d in dirs:
        res = check_store(d)
        counts[res.status] = counts.get(res.status, 0) + 1
        line = f"{res.status:<11} {d}  {res.detail}"
        if res.problem:
            if fix:
                try:
                    line += f" -> fixed: {repair_store(d)}"
                except OSError as err:
                    line += f" -> NOT fixed ({err}); delete the folder"
                    left += 1
            else:
                left += 1
        print_fn(line)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print_fn(f"{len(dirs)} stores under {root / 'attention'}: {summary}")
    if left and not fix:
        print_fn(f"repair: python -m analysis_utils check-cache --fix --cache-dir {root}  "
                 "(the next extraction re-extracts only the damaged entries)")
    return 1 if left else 0


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis_utils check-cache",
        description="check every cached attention store (manifest, sizes, marker and each "
                    "entry's checksum); exit status 1 if one is corrupt")
    parser.add_argument("--fix", action="store_true",
                        help="keep the entries that verify and mark the rest for re-extraction "
                             "by the next run (a store with an unusable manifest is deleted)")
    paths.add_cache_dir_option(parser)
    args = parser.parse_args(argv or [])
    return check_cache(args.cache_dir, fix=args.fix)

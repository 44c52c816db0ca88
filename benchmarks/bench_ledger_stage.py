"""How long the ledger stage takes: ``python -m analysis_utils ledger`` over the committed run
folders, judged in this process and written nowhere (``judge`` only), per folder and in all.

The issue's goal: under 3 minutes on the 2-core CPU for both committed folders, so a change to
a verdict rule costs minutes instead of a re-render. Measured here (2 cores shared with a
background plan run at nice 19): 87-89 s for results/ and results/base/ together, peak RSS
1.1 GB. Issue 52's goal, with every row judged across its specifications (the multiverse)
and the stability rebuilds: at most 5 minutes. Each folder is built with and without the
multiverse, so its own cost is printed.

Usage: ``python benchmarks/bench_ledger_stage.py [--folders results,results/base]``
"""

from __future__ import annotations

import argparse
import resource
import time

from analysis_utils import ledger, paths
from analysis_utils.publish import ledger_stage


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folders", default=",".join(ledger_stage.DEFAULT_FOLDERS))
    args = ap.parse_args(argv)
    folders = [f for f in args.folders.split(",") if f]
    root = paths.REPO_ROOT
    total = time.perf_counter()
    for f in folders:
        t = time.perf_counter()
        rows = ledger.build([f], root=root, multiverse=False)
        plain = time.perf_counter() - t
        t = time.perf_counter()
        rows = ledger.build([f], root=root)
        full = time.perf_counter() - t
        print(f"{f:<16} {len(rows):>4} rows  {plain:6.1f} s without the multiverse, "
              f"{full:6.1f} s with it")
    t = time.perf_counter()
    tables = ledger_stage.judge(folders, root)
    print(f"{'stage (judge)':<16} {len(tables):>4} tables {time.perf_counter() - t:6.1f} s")
    print(f"total {time.perf_counter() - total:.1f} s; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Wall time and peak resident memory of each notebook's kernel, per notebook.

Runs the selected notebooks under a profile into a temporary output folder (committed
results are never touched) and prints the table that `python -m analysis_utils report`
builds from their provenance: wall time and the kernel's peak RSS (the default profile's
budget is 2.5 GB per notebook on the 2-core CPU machine).

Usage: ``python benchmarks/bench_notebooks.py [--profile smoke|default] [--only 01,05]``.
The default profile reruns everything (tens of minutes on a cold cache); run it on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from analysis_utils.publish import pipeline, readme

RSS_BUDGET_MB = 2500


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--only", default="", help="comma-separated prefixes, e.g. 01,05")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_notebooks_") as tmp:
        pipeline.run(args.profile, [o for o in args.only.split(",") if o] or None,
                     output_dir=tmp)
        results = Path(tmp) / "results"
        print(f"profile {args.profile}, {os.cpu_count()} CPUs")
        print(readme.runtime_table(results))
        over = []
        for prov in sorted(results.glob("[0-9][0-9]_provenance.json")):
            rss = json.loads(prov.read_text()).get("peak_rss_mb")
            if isinstance(rss, (int, float)) and rss > RSS_BUDGET_MB:
                over.append(f"{prov.name[:2]}: {rss:,.0f} MB")
        print("peak RSS over the 2.5 GB budget: " + (", ".join(over) if over else "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

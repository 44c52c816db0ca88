"""Benchmark of the run plan: the same units in-process (one after the other) and on a local
Ray instance (side by side, one CPU each), each into a fresh cache, from one run.

Prints, per backend: wall time of ``run_units`` (for Ray including ``ray.init``, which is
also timed alone, and its workers' start), the sum of the units' own seconds, then the ratio
Ray / in-process (below 1: Ray is faster) and whether the two caches hold the same weights.

Usage: ``python benchmarks/bench_plan.py [--profile smoke] [-p NAME=VALUE ...] [--json FILE]``.
Needs the gold data (``BERTOLOGY_DATA_DIR``) and Ray (``pip install -e '.[distributed]'``).
The smoke plan is five MiniLM fine-tunes on 64 examples, one epoch; on a machine shared with
other jobs both backends are slowed, Ray's parallel units more so.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from analysis_utils.publish.pipeline import parse_overrides
from analysis_utils.runplan import execute, units


def timed_run(entries, cache: Path, backend: str) -> dict:
    jobs = [execute.Job(e.unit, e.key) for e in entries]
    t0 = time.perf_counter()
    outcomes = execute.run_units(jobs, cache, backend=backend, out=print)
    wall = time.perf_counter() - t0
    failed = [o.error for o in outcomes if not o.ok]
    if failed:
        raise SystemExit(f"{backend}: {len(failed)} units failed: {failed}")
    return {"wall_s": wall, "unit_s": sum(o.summary["seconds"] for o in outcomes),
            "fingerprints": [o.summary["weights_fingerprint"] for o in outcomes]}


def ray_init_seconds() -> float:
    import ray

    t0 = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False)
    took = time.perf_counter() - t0
    ray.shutdown()
    return took


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    planned = units.build(args.profile, parse_overrides(args.param))
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        entries = units.resolve(planned, a)
        print(f"{args.profile} plan: {len(entries)} units "
              f"({', '.join(e.unit.label for e in entries)})")
        init = ray_init_seconds()
        print(f"ray.init (local instance, alone): {init:.1f} s")
        inproc = timed_run(entries, Path(a), "inprocess")
        on_ray = timed_run(entries, Path(b), "ray")
    same = inproc["fingerprints"] == on_ray["fingerprints"]
    ratio = on_ray["wall_s"] / inproc["wall_s"]
    print(f"in-process: {inproc['wall_s']:.1f} s wall ({inproc['unit_s']:.1f} s in units)")
    print(f"Ray local:  {on_ray['wall_s']:.1f} s wall ({on_ray['unit_s']:.1f} s in units, "
          f"ray.init included)")
    print(f"ratio Ray / in-process: {ratio:.2f}; same weights: {same}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"profile": args.profile, "units": len(entries), "ray_init_s": init,
             "inprocess": inproc, "ray": on_ray, "ratio": ratio, "same_weights": same},
            indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
